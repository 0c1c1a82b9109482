"""Does the verifier read the evidence? Supported dev claims against their evidence without the support (issue 64).

Each pair is one human-labelled SUPPORTED dev item, judged twice with the claim word for
word the same:

positive (label 1)
    the item as the dev benchmarks read it (``devsets.contexts_of``: SummEdits'
    document, BEGIN's knowledge snippet, WiCE's oracle chunks);
negative (label 0)
    the same contexts without the sentences that support the claim, so the label flips by
    construction while every word of the claim stays.

Which sentences support the claim is found without a judge:

- **WiCE**: the annotators' own ``supporting_sentences`` (line numbers of the cited
  article; every alternative set). Every line of the oracle chunks whose text is one of
  those lines is removed; a pair whose annotated lines are not in its chunks is skipped.
- **SummEdits, BEGIN**: lexical alignment. The claim's content stems (lower-cased words
  without ``_lexicon.STOPWORDS``, plural and tense endings cut: :func:`stems`) are
  covered greedily by context sentences (:func:`located_sentences`), the sentence that
  adds the most uncovered stems first, up to ``MAX_REMOVED`` sentences, and removed one
  after another until the rest of the context has lost at least ``MIN_LOST_SHARE`` of the
  claim's stems (and at least one): stems the claim uses and the remaining text never
  does, so what the claim says with them is no longer stated. A pair is skipped when the
  removed sentences cover under ``MIN_ALIGNED`` of the claim's stems (no sentence
  supports it word for word: an abstractive summary), when the loss is not reached
  within ``MAX_REMOVED`` sentences (the claim is restated elsewhere), or when under
  ``MIN_LEFT_CHARS`` characters remain (an empty context is no test of reading).

Every skip is counted by its reason. Known noise: a claim can still be supported by a
paraphrase left in the context (a stem check does not see synonyms), so a verdict of
"supported" on a negative is an upper bound on the verifier's failure, not an exact count.

A pair keeps its item's source-document group (``grouped_cv.document_groups`` over the
whole dev file): both sides of a pair are in one group, and an item is in one group only.

The figures (:func:`figures`): on the pairs, balanced accuracy of the verdicts (the
positive's TPR and the negative's TNR), with a pair bootstrap 95% CI (both sides of a
pair resampled together), the share of negatives still called supported, and the same
for the judge's P >= 0.5 without the detail checks' veto (what the model itself reads).

    python benchmarks/evidence_use.py --show 3                  # pairs, skips and examples
    python benchmarks/evidence_use.py run --judge local         # the shipped verifier on both sides (cached)
    python benchmarks/evidence_use.py report                    # the "evidence use" row from the cache
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from _lib.evidence_pairs import NEGATIVE_SUFFIX, SETS, EvidencePair, Row, dev_pairs, pair_figures

# ---- figures ------------------------------------------------------------------------------------


def verdicts(entry: dict[str, Any], decided_by: str) -> int | None:
    """An entry's verdict: ``verifier`` as shipped (veto included), ``p`` the judge's P >= 0.5 alone (a copy is 1)."""
    if entry.get("v") is None:
        return None
    if decided_by == "verifier":
        return int(entry["v"])
    if entry.get("p") is None:  # decided without a judge call: a copy (1) or text addressed to the judge (0)
        return int(entry["v"])
    return int(float(entry["p"]) >= 0.5)


def rows_of(pairs: Sequence[EvidencePair], entries: dict[str, dict[str, Any]], seed: int) -> tuple[list[Row], int]:
    """Per set and over all sets, per way of deciding; and how many pairs lack a verdict on a side."""
    out: list[Row] = []
    complete = [p for p in pairs if p.id in entries and p.id + NEGATIVE_SUFFIX in entries]
    missing = 0
    for decided_by in ("verifier", "p"):
        judged: list[tuple[str, int, int]] = []
        for p in complete:
            a = verdicts(entries[p.id], decided_by)
            b = verdicts(entries[p.id + NEGATIVE_SUFFIX], decided_by)
            if a is None or b is None:
                missing += decided_by == "verifier"
                continue
            judged.append((p.set, a, b))
        for name in (*SETS, "all"):
            mine = [(a, b) for s, a, b in judged if name in (s, "all")]
            if not mine:
                continue
            pos = np.array([a for a, _ in mine], dtype=np.int64)
            neg = np.array([b for _, b in mine], dtype=np.int64)
            ba, ci, tpr, still, flipped = pair_figures(pos, neg, seed)
            out.append(Row(name, decided_by, len(mine), ba, ci, tpr, still, flipped))
    return out, missing


def print_rows(rows: Sequence[Row], out: Any = print) -> None:
    out(
        f"  {'set':10s} {'decided by':22s} {'pairs':>5s}  BA [95% CI, pairs resampled]   TPR    still supported"
        "  flipped"
    )
    for r in rows:
        label = "verifier as shipped" if r.decided_by == "verifier" else "judge's P >= 0.5 alone"
        out(
            f"  {r.set:10s} {label:22s} {r.pairs:5d}  {r.balanced_accuracy:.3f} [{r.ci95[0]:.3f}-{r.ci95[1]:.3f}]"
            f"            {r.tpr:.3f}  {r.still_supported:.3f}            {r.flipped_of_passed:.3f}"
        )


# ---- running the shipped verifier ---------------------------------------------------------------


def read_entries(paths: Sequence[Path]) -> dict[str, dict[str, Any]]:
    """Verdict entries by item id from JSONL files (this script's cache or ``hidden.extract``'s meta)."""
    entries: dict[str, dict[str, Any]] = {}
    for path in paths:
        if path.exists():
            with path.open() as lines:
                for line in lines:
                    entry = json.loads(line)
                    entries.setdefault(entry["id"], entry)
    return entries


async def run(judge: Any, pairs: Sequence[EvidencePair], path: Path) -> None:
    """Judge both sides of every pair with the shipped verifier (reasons left out), appending to ``path``.

    Resumes: sides already in ``path`` are not judged again. The two sides of a pair are
    judged one after the other, so the negative reuses the positive's prompt prefix up to
    the first removed sentence.
    """
    from _lib.devsets import contexts_of

    from assay.grounding._verify import StatementVerifier

    verifier = StatementVerifier(method="threshold", reasons="none")
    done = set(read_entries([path]))
    todo = [(p.set, row) for p in pairs for row in p.rows() if row["id"] not in done]
    started = time.perf_counter()
    with path.open("a") as out:
        for k, (name, row) in enumerate(todo, start=1):
            t0 = time.perf_counter()
            (outcome,) = await verifier.verify(contexts_of(name, row), [row["claim"]], judge)
            verdict = outcome.verdict
            details = (verdict.details or {}) if verdict is not None else {}
            entry = {
                "id": row["id"],
                "label": row["label"],
                "v": None if verdict is None else int(verdict.value),
                "p": outcome.probability,
                "vetoed": details.get("vetoed_by", []),
                "verbatim": bool(details.get("verbatim")),
                "s": time.perf_counter() - t0,
                "failure": outcome.failure.detail if outcome.failure is not None else None,
            }
            out.write(json.dumps(entry) + "\n")
            out.flush()
            elapsed = time.perf_counter() - started
            print(f"\r{k}/{len(todo)} ({elapsed / k:.1f} s a side)", end="", file=sys.stderr, flush=True)
    if todo:
        print(file=sys.stderr)


def cache_path(judge: Any, seed: int) -> Path:
    from _lib.judging import CACHE, model_slug

    return CACHE / f"evidence-{model_slug(judge)}-s{seed}.jsonl"


def show(pairs: Sequence[EvidencePair], skipped: Counter[str], samples: dict[str, Any], k: int) -> None:
    for name in SETS:
        supported = sum(int(r["label"]) == 1 for r in samples[name])
        made = [p for p in pairs if p.set == name]
        skips = {reason.split(": ", 1)[1]: n for reason, n in skipped.items() if reason.startswith(name + ":")}
        removed = np.mean([len(p.removed) for p in made]) if made else 0.0
        print(
            f"{name}: {len(made)} pairs from {supported} supported items of {len(samples[name])} "
            f"(skipped: {', '.join(f'{r} {n}' for r, n in sorted(skips.items())) or 'none'}); "
            f"{removed:.1f} sentences removed on average, {len({p.group for p in made})} source documents"
        )
        for p in made[:k]:
            print(f"  [{p.id}] claim: {p.claim[:200]!r}")
            if p.part != p.claim:
                print(f"      the part whose support is removed: {p.part[:200]!r}")
            if p.how.startswith("changed"):
                print(f"      {p.how} in {p.removed[0][:200]!r}")
            else:
                for sentence in p.removed:
                    print(f"      removed: {sentence[:200]!r}")
            print(f"      stems no longer in the context: {', '.join(p.lost)}")
    print(f"all: {len(pairs)} pairs")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="show", choices=("show", "run", "report", "write"))
    parser.add_argument("--show", type=int, default=2, help="examples per set")
    parser.add_argument("--judge", default="local")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--entries", type=Path, nargs="*", default=[], help="report: verdict JSONL files to read")
    parser.add_argument("--out", type=Path, help="write: the pairs as JSONL")
    parser.add_argument("--json", type=Path, help="report: also write the figures here")
    args = parser.parse_args()
    pairs, skipped, samples = dev_pairs(args.seed)
    if args.command == "show":
        show(pairs, skipped, samples, args.show)
        return
    if args.command == "write":
        if args.out is None:
            raise SystemExit("write needs --out")
        args.out.write_text("".join(p.to_json() + "\n" for p in pairs))
        return
    paths = list(args.entries)
    if args.command == "run" or not paths:
        from assay.models import get_judge

        judge = get_judge(args.judge)
        paths = [cache_path(judge, args.seed)]
        if args.command == "run":
            paths[0].parent.mkdir(exist_ok=True)
            await run(judge, pairs, paths[0])
    rows, missing = rows_of(pairs, read_entries(paths), args.seed)
    print(f"evidence use: {len(pairs)} pairs (seed {args.seed}); verdicts from {', '.join(map(str, paths))}")
    if missing:
        print(f"  {missing} pairs left out: a side has no verdict (a judge failure)")
    if not rows:
        raise SystemExit("no pair has verdicts on both sides yet")
    print_rows(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))


def digest(pairs: Sequence[EvidencePair]) -> str:
    """sha1 of the pairs as written: two runs on different pairs must not be compared."""
    return hashlib.sha1("".join(p.to_json() for p in pairs).encode()).hexdigest()[:12]


if __name__ == "__main__":
    asyncio.run(main())
