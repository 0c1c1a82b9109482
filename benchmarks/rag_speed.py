"""Seconds per realistic RAG sample on the local judge: 5 passages of ~3,000 characters, 6 statements.

The shape a RAG team runs: five retrieved passages (here: cited Wikipedia-source articles
from WiCE dev, each cut to about 3,000 characters at a sentence end) and an answer of six
statements, four copied verbatim from the passages (they must be called supported) and
two WiCE claims labelled unsupported by people (they should not be).

For each sample it times the product's verification (faithfulness' per-statement path,
``StatementVerifier.verify``) two ways on the same statements:

- ``before``: as the verifier was before issue 15, every statement judged against every
  2,000-character chunk of the passages (max over chunks);
- ``windows``: an evidence window of 1,200 characters per statement
  (``StatementVerifier(evidence_chars=1200, shared_evidence=False)``), with the detail
  checks and the guard;
- ``shared``: one evidence window of ``--shared-chars`` for all six statements, read
  once, every statement asked against it: the default verifier on contexts over 8,000
  characters (``StatementVerifier()``, ``evidence_chars=3000``). Its copies of a
  sentence are supported without a judge call (``verbatim``);
- ``judged``: ``shared`` with every statement put to the judge (``verbatim=False``), the
  judge's own cost on this shape.

and prints seconds per sample, judge calls, the verdicts on the verbatim statements and
on the unsupported ones, and the ratio. The model is loaded and warmed first; run it on
a quiet machine (llama.cpp slows several-fold when another process shares the cores).

    python benchmarks/rag_speed.py --samples 3
    python benchmarks/rag_speed.py --samples 2 --ways windows,shared   # skip the slow ``before``
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from _lib.rag_samples import build

from assay.grounding._verify import StatementVerifier
from assay.models import get_judge


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--ways", default="before,windows,shared,judged", help="comma-separated: before, windows, shared, judged"
    )
    parser.add_argument("--shared-chars", type=int, default=3000, help="the shared window's budget")
    parser.add_argument(
        "--hidden",
        default="",
        help="cb, off, split or embd: the local judge also reading its hidden states (hidden_states.py)",
    )
    args = parser.parse_args()
    judge: Any = get_judge(args.judge)
    if args.hidden:
        from _lib.hidden import HiddenStateJudge

        judge = HiddenStateJudge(mode=args.hidden)
    every = {
        "before": StatementVerifier(evidence_chars=None, verbatim=False, details=False, guard=False),
        "windows": StatementVerifier(evidence_chars=1200, whole_chars=2000, shared_evidence=False, verbatim=False),
        "shared": StatementVerifier(evidence_chars=args.shared_chars, whole_chars=2000, shared_evidence=True),
        "judged": StatementVerifier(evidence_chars=args.shared_chars, whole_chars=2000, verbatim=False),
    }
    ways = {name: every[name] for name in (w.strip() for w in args.ways.split(",")) if name}
    await every["windows"].verify(["Warm-up context."], ["Warm-up statement."], judge)  # load, system prefix
    totals = {name: [0.0, 0, 0, 0] for name in ways}  # seconds, calls, verbatim supported, unsupported caught
    samples = build(args.samples, args.seed)
    for i, sample in enumerate(samples, start=1):
        statements = sample["supported"] + sample["unsupported"]
        for name, verifier in ways.items():
            started = time.perf_counter()
            outcomes = await verifier.verify(sample["passages"], statements, judge)
            seconds = time.perf_counter() - started
            values = [o.verdict.value if o.verdict else None for o in outcomes]
            calls = sum(len(o.calls) for o in outcomes)
            kept = sum(1 for v in values[:4] if v == 1)
            caught = sum(1 for v in values[4:] if v == 0)
            totals[name][0] += seconds
            totals[name][1] += calls
            totals[name][2] += kept
            totals[name][3] += caught
            print(
                f"sample {i} {name:6s}: {seconds:6.1f} s, {calls:3d} calls, verbatim called supported {kept}/4, "
                f"unsupported caught {caught}/2",
                flush=True,
            )
    n = len(samples)
    for name, (seconds, calls, kept, caught) in totals.items():
        print(
            f"{name:6s}: {seconds / n:6.1f} s per sample, {calls / n:5.1f} calls; verbatim supported {kept}/{4 * n}, "
            f"unsupported caught {caught}/{2 * n}"
        )
    if "before" in totals:
        for name in totals:
            if name != "before":
                print(f"{name} / before: {totals[name][0] / totals['before'][0]:.2f}")
    print("target: <= 20 s per sample")


if __name__ == "__main__":
    asyncio.run(main())
