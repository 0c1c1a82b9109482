"""Does the gate's flake estimate match what repeats actually do? The demo, 10 sampled repeats.

A user measures wobble with ``assay run --repeats 3 --temperature 0.7`` and trusts
``assay gate``'s P(pass). This runs ``make demo``'s data (examples/rag.jsonl, the local
judge) with 10 repeats at temperature 0.7 for each variant and compares:

- *estimated*: the gate's P(pass) of a 0.8 run-mean gate (and of a per-sample gate) from
  the first 3 repeats, as the user would see it, and the flake estimate min(P, 1 - P);
- *observed*: over all 10 repeats, the share of repeats whose own run mean (or every
  sample) passes, the flake rate observed (min(share, 1 - share)), and the per-sample
  score spread (max - min over repeats).

Variants:

- ``default``: the shipped faithfulness (anchored statements fixed across repeats;
  verdicts read from the logits, which no temperature moves);
- ``generated``: the same statements, verdicts generated under the grammar at the
  sampling temperature (how an API judge behaves): the verdict noise the gate models;
- ``generated-sampled``: generated verdicts and ``fixed_statements=False`` (statements
  sampled with each repeat, as before issue 23).

    python benchmarks/demo_repeats.py [--repeats 10] [--variants default,generated,generated-sampled]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from assay import evaluate
from assay.analysis import GatePolicy, analyze_repeats, evaluate_gate
from assay.grounding import StatementVerifier
from assay.metrics import Faithfulness
from assay.models import get_judge
from assay.run import RunStore

DATA = Path(__file__).resolve().parents[1] / "examples" / "rag.jsonl"
VARIANTS = {
    "default": Faithfulness(),
    "generated": Faithfulness(verifier=StatementVerifier(method="generate")),
    "generated-sampled": Faithfulness(verifier=StatementVerifier(method="generate"), fixed_statements=False),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--measured", type=int, default=3, help="repeats the estimate is made from")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--threshold",
        type=float,
        default=0.8,
        help="the run-mean gate's mark; the gate is also evaluated at the run's own mean, where a flake shows",
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    judge = get_judge("local")
    for name in [v.strip() for v in args.variants.split(",") if v.strip()]:
        metric = VARIANTS[name]
        store = Path(tempfile.mkdtemp()) / "runs.sqlite"
        started = time.perf_counter()
        result = evaluate(
            DATA, [metric], judge, store=store, repeats=args.repeats, temperature=args.temperature,
            cache=Path(tempfile.mkdtemp()) / "cache.sqlite", progress=False,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        with RunStore(store) as opened:
            records = list(opened.records(result.run_id or ""))
        early = [r for r in records if int(r.get("repeat", 0)) < args.measured]
        print(f"== {name}: {len(records)} results, {seconds:.0f} s")
        report = analyze_repeats(records, "faithfulness")
        measured = analyze_repeats(early, "faithfulness")
        means = [statistics.mean(s.value for s in r.scores if s.is_scored) for r in report.samples if r.scores]
        at_mean = round(statistics.mean(means), 2) if means else args.threshold
        gates = [(args.threshold, False), (at_mean, False), (args.threshold, True)]
        for threshold, per_sample in gates:
            policy = GatePolicy(threshold=threshold, per_sample=per_sample)
            estimate = evaluate_gate(measured, policy)
            full = evaluate_gate(report, policy)
            passes = full.repeat_passes
            share = sum(passes) / len(passes) if passes else float("nan")
            kind = f"per-sample gate >= {threshold}" if per_sample else f"run-mean gate >= {threshold}"
            print(
                f"  {kind}: estimated from {args.measured} repeats P(pass) {estimate.p_pass:.3f} "
                f"(flake {min(estimate.p_pass, 1 - estimate.p_pass):.3f}, outcome {estimate.outcome}); "
                f"observed over {len(passes)} repeats: pass share {share:.2f} (flake {min(share, 1 - share):.2f}), "
                f"gate outcome {full.outcome}"
            )
        spreads = []
        changed = 0
        for sample in report.samples:
            values = [s.value for s in sample.scores if s.is_scored]
            if len(values) > 1:
                spreads.append(max(values) - min(values))
            changed += sample.set_change_share > 0
        moved = sum(1 for s in spreads if s > 0)
        print(
            f"  per-sample score spread: mean {statistics.mean(spreads):.3f}, max {max(spreads):.3f}, "
            f"{moved} of {len(spreads)} samples moved; statement sets changed across repeats in {changed} samples"
        )


if __name__ == "__main__":
    main()
