"""Training data for a trained verifier without labels from people: rule-based edits of real documents (issue 58).

From each document (the contexts of ``../shared/data/grounding``) it takes anchor
sentences and, for each, an evidence window (the anchor and its neighbours, up to
``window_chars``) and statements made from the anchor by one edit each. The edit decides
the label:

supported (label 1)
    ``copy`` the anchor as it is; ``compress`` the anchor without a parenthesis or a
    trailing clause that adds a fact (``, and ...``, ``, which ...``, ``, killing ...``;
    never ``if``/``unless``, which would drop a condition); ``paraphrase`` word-level
    synonyms (a fixed table), kept only if every name and number of the anchor survives
    (``assay.grounding._details.detail_features``: no missing number, no missing name);
    ``fuse`` the anchor and the next sentence joined by "and".
unsupported (label 0)
    ``entity`` a name replaced by a name of the same document that is not in the window;
    ``role`` a role word (goalkeeper, forward; chairman, director; ...) replaced by another
    of its kind; ``number`` a number, year, month or unit changed; ``negation`` a "not"
    added after an auxiliary or removed; ``antonym`` a word replaced by its opposite;
    ``swap`` two names of the anchor exchanged (subject and object); ``attribute`` a name
    replaced by a name of another sentence of the window (the fact moved to an entity the
    evidence does name, which a name check cannot see); ``clause`` a clause added that the
    window does not state (a sentence from outside the window after "and", or any other
    sentence after "because"); ``scope`` a quantifier or modal widened ("some" to "all",
    "may" to "will").

Every pair carries its document's group (``grouped_cv.document_groups`` over the whole
file, so coarser than any sample's) and the document's sha1; ``held_out`` drops, for a
fold of dev items, every pair whose group or any evidence sentence belongs to a held-out
item, so no evaluation document is trained on. Output is deterministic for a seed: each
document draws from its own ``random.Random(f"{seed}:{sha1}")``, so adding documents does
not change the pairs of the others.

    python benchmarks/verifier_data.py --out /work/verifier-work/pairs.jsonl
    python benchmarks/verifier_data.py --show 2          # two examples of each kind and the shares
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _lib.devsets import read_rows
from _lib.verifier_pairs import LABEL, SETS, Pair, documents, generate, write_pairs

# ---- command line --------------------------------------------------------------------------------


def show(pairs: Sequence[Pair], per_kind: int, seed: int, out: Any = sys.stdout) -> None:
    counts = Counter(p.kind for p in pairs)
    total = len(pairs)
    out.write(f"{total} pairs, {sum(p.label for p in pairs) / max(total, 1):.0%} supported\n")
    for kind in LABEL:
        out.write(f"  {kind:10s} label {LABEL[kind]}  {counts[kind]:6d}  {counts[kind] / max(total, 1):6.1%}\n")
    rng = random.Random(seed)
    for kind in LABEL:
        of_kind = [p for p in pairs if p.kind == kind]
        for p in rng.sample(of_kind, min(per_kind, len(of_kind))):
            out.write(f"\n[{kind}, label {p.label}] {p.change}\n  source:    {p.source}\n  statement: {p.statement}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--seed", type=int, default=58)
    parser.add_argument("--window-chars", type=int, default=700)
    parser.add_argument("--out", type=Path, default=None, help="write the pairs here (JSONL)")
    parser.add_argument("--show", type=int, default=0, help="print the shares and N examples of each kind")
    args = parser.parse_args()
    rows = read_rows(args.sets.split(","))
    pairs = list(generate(documents(rows), args.seed, window_chars=args.window_chars))
    if args.out is not None:
        write_pairs(args.out, pairs)
        print(f"wrote {len(pairs)} pairs to {args.out}", file=sys.stderr)
    if args.show or args.out is None:
        show(pairs, args.show or 1, args.seed)


if __name__ == "__main__":
    main()
