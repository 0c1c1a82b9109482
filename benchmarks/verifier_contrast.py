"""Training pairs whose labels word overlap cannot tell apart (issue 64, item 2).

Issue 58's pairs (``verifier_data.py``) were all extractive statements and small edits of
them, so a head trained on them learned "close to an evidence sentence". These pairs
start instead from every human-checked **supported** dev item of
``../shared/data/grounding`` (SummEdits' consistent summaries, BEGIN's fully attributable
responses, WiCE's supported claims) and its evidence as the dev benchmarks read it
(SummEdits' document, BEGIN's knowledge snippet, WiCE's oracle chunks one a line):

original (label 1)
    the item as it is: an abstractive summary or claim a person checked.
removed (label 0, document side)
    the claim word for word the same, the sentences that support it taken out of the
    evidence (``evidence_pairs``: WiCE's annotated supporting lines; elsewhere the
    lexical alignment of ``aligned_removal``, which removes up to three sentences until a
    fifth of the claim's content stems occur nowhere in what is left).
changed (label 0, document side)
    the claim the same, one detail of its support changed in the evidence: a number the
    claim gives or a "not" after an auxiliary followed by a word of the claim
    (``evidence_pairs.changed_detail``, in one support sentence), or a name the claim
    and the support share replaced, everywhere in the evidence, by another name of the
    same document. A context too short to lose a sentence is its own support.
entity, number, negation (label 0, claim side)
    SummEdits' protocol on the claim, the evidence as it is (``verifier_pairs.edit``): a
    name replaced by another name of the same document; a number, month or unit changed
    (dropped if the new one is in the evidence); "not" added after an auxiliary or
    removed. At most ``MAX_EDITED_WORDS`` words change.

A name is a capitalised run the document also writes capitalised mid-sentence ("Ok" or
"Client:" at a line's start is none). Every negative names its original (``pair_of``),
so a pair of one claim differs on one side only. Every pair carries its item's
source-document group (``grouped_cv.full_groups`` over the whole dev files) and its
document's sha1; ``verifier_pairs.held_out`` drops, for a fold of dev items, every pair
whose group, document or any evidence sentence belongs to a held-out item. Deterministic
for a seed: each item draws from ``random.Random(f"{seed}:{item id}")``.

The word-overlap baseline (``--show``): per negative kind, the balanced accuracy of
"score >= t means supported" at the best t for these very pairs (an upper bound; 0.5 =
no threshold separates), the negatives against the originals they were made from. Two
scores: ``copied``, the share of the claim's word bigrams found in the evidence (how
extractive the claim is), and ``overlap``, the share of its content stems in the best
single evidence sentence. The same figures for issue 58's kinds, negatives against the
supported pairs of their windows, unless ``--skip-58`` (about 3 minutes here).

    python benchmarks/verifier_contrast.py --out /work/verifier-work/contrast.jsonl
    python benchmarks/verifier_contrast.py --show 2      # shares, the baseline, two examples of each kind
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _lib.contrast_pairs import (
    CLAIM_SIDE,
    DOCUMENT_SIDE,
    LABEL,
    SETS,
    ContrastPair,
    copied,
    generate,
    overlap,
    separability,
)
from _lib.devsets import read_rows
from _lib.verifier_pairs import UNSUPPORTED, documents, write_pairs
from _lib.verifier_pairs import generate as generate_58

Score = Callable[[str, str], float]
SCORES: dict[str, Score] = {"copied": copied, "overlap": overlap}


def baseline(pairs: Sequence[ContrastPair]) -> dict[str, dict[str, float]]:
    """Kind (and "all") -> score name -> the baseline's best-threshold BA, negatives against their originals."""
    by_id = {p.id: p for p in pairs}
    out: dict[str, dict[str, float]] = {}
    for name, score in SCORES.items():
        value = {p.id: score(p.claim, p.evidence) for p in pairs}
        originals = [value[p.id] for p in pairs if p.label == 1]
        for kind in (*DOCUMENT_SIDE, *CLAIM_SIDE):
            negatives = [p for p in pairs if p.kind == kind]
            ba = separability([value[by_id[p.pair_of].id] for p in negatives], [value[p.id] for p in negatives])
            out.setdefault(kind, {})[name] = ba
        out.setdefault("all", {})[name] = separability(originals, [value[p.id] for p in pairs if p.label == 0])
    return out


def baseline_58(rows: dict[str, list[dict[str, Any]]], seed: int) -> tuple[dict[str, dict[str, float]], Counter[str]]:
    """The same figures on issue 58's pairs of the same documents: a kind against its windows' supported pairs."""
    pairs = list(generate_58(documents(rows), seed))
    out: dict[str, dict[str, float]] = {}
    for name, score in SCORES.items():
        value = [score(p.statement, p.evidence) for p in pairs]
        supported: defaultdict[str, list[float]] = defaultdict(list)
        for p, v in zip(pairs, value, strict=True):
            if p.label == 1:
                supported[p.window].append(v)
        for kind in UNSUPPORTED:
            negatives = [(p, v) for p, v in zip(pairs, value, strict=True) if p.kind == kind]
            windows = {p.window for p, _ in negatives}
            positives = [v for w in windows for v in supported[w]]
            out.setdefault(kind, {})[name] = separability(positives, [v for _, v in negatives])
        out.setdefault("all", {})[name] = separability(
            [v for p, v in zip(pairs, value, strict=True) if p.label == 1],
            [v for p, v in zip(pairs, value, strict=True) if p.label == 0],
        )
    return out, Counter(p.kind for p in pairs) + Counter(all=len(pairs))


def show(pairs: Sequence[ContrastPair], per_kind: int, seed: int, out: Any = sys.stdout) -> None:
    counts = Counter((p.kind, p.set) for p in pairs)
    total = len(pairs)
    items = Counter(p.set for p in pairs if p.kind == "original")
    out.write(
        f"{total} pairs from {sum(items.values())} supported dev items "
        f"({', '.join(f'{items[s]} {s}' for s in SETS)}), {len({p.group for p in pairs})} source-document groups; "
        f"{sum(p.label for p in pairs) / max(total, 1):.0%} supported\n"
    )
    out.write(f"  {'kind':10s} label  side      {'  '.join(f'{s:>9s}' for s in SETS)}    all   share\n")
    for kind in LABEL:
        side = "document" if kind in DOCUMENT_SIDE else "claim" if kind in CLAIM_SIDE else "-"
        n = sum(counts[kind, s] for s in SETS)
        per_set = "  ".join(f"{counts[kind, s]:9d}" for s in SETS)
        out.write(f"  {kind:10s} {LABEL[kind]:5d}  {side:8s}  {per_set}  {n:5d}  {n / max(total, 1):6.1%}\n")
    by_id = {p.id: p for p in pairs}
    rng = random.Random(seed)
    for kind in list(LABEL)[1:]:
        of_kind = [p for p in pairs if p.kind == kind]
        for p in rng.sample(of_kind, min(per_kind, len(of_kind))):
            original = by_id[p.pair_of]
            out.write(f"\n[{kind}, label {p.label}, {p.item}] {p.change}\n  claim:  {original.claim[:300]}\n")
            if kind in CLAIM_SIDE:
                out.write(f"  edited: {p.claim[:300]}\n")
            for sentence in p.removed:
                out.write(f"  removed from the evidence: {sentence[:300]}\n")
            if kind == "changed":
                out.write(f"  the evidence now: ...{around_change(original.evidence, p.evidence)}...\n")


def around_change(before: str, after: str, width: int = 120) -> str:
    """``after`` around its first difference from ``before``."""
    start = next(
        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), min(len(before), len(after))
    )
    return after[max(0, start - width) : start + width].replace("\n", " / ")


def show_baseline(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]] | None, out: Any) -> None:
    out.write(
        "\nword-overlap baseline: balanced accuracy of 'score >= t means supported' at the best t for these pairs\n"
        "(an upper bound; 0.5 = no threshold separates the labels). copied = share of the claim's word bigrams\n"
        "in the evidence; overlap = share of its content stems in the best evidence sentence.\n"
        f"  {'these pairs (negatives vs their originals)':44s} copied  overlap\n"
    )
    for kind, row in ours.items():
        out.write(f"  {kind:44s} {row['copied']:.3f}   {row['overlap']:.3f}\n")
    if theirs is not None:
        out.write(f"  {'issue 58 (verifier_data.py), vs its windows':44s} copied  overlap\n")
        for kind, row in theirs.items():
            out.write(f"  {kind:44s} {row['copied']:.3f}   {row['overlap']:.3f}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--seed", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None, help="write the pairs here (JSONL)")
    parser.add_argument(
        "--show", type=int, default=0, help="print the shares, the baseline and N examples of each kind"
    )
    parser.add_argument("--skip-58", action="store_true", help="--show: leave out issue 58's baseline figures")
    args = parser.parse_args()
    rows = read_rows(args.sets.split(","))
    pairs = list(generate(rows, args.seed))
    if args.out is not None:
        write_pairs(args.out, pairs)
        print(f"wrote {len(pairs)} pairs to {args.out}", file=sys.stderr)
    if args.show or args.out is None:
        show(pairs, args.show or 1, args.seed)
        theirs = None if args.skip_58 else baseline_58(rows, 58)[0]
        show_baseline(baseline(pairs), theirs, sys.stdout)


if __name__ == "__main__":
    main()
