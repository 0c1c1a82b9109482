"""The human-labelled dev sets: where they are, seeded samples with each set's label ratio, an item's contexts."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# The shared dev data beside the checkout, or where $ASSAY_SHARED_DATA says (a worktree elsewhere);
# $ASSAY_DEV_DATA names the grounding folder itself.
DATA = Path(
    os.environ.get("ASSAY_DEV_DATA")
    or Path(os.environ.get("ASSAY_SHARED_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data")
    / "grounding"
)


SETS = {
    "wice": "wice_dev.jsonl",
    "wicefull": "wice_dev.jsonl",  # the same claims against the whole cited article (`context`), not the oracle chunks
    "begin": "begin_dev.jsonl",
    "summedits": "summedits_dev.jsonl",
}


def load(name: str, n: int, seed: int, chars: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    """A seeded sample with the set's own label ratio (of the items whose contexts total ``chars``, if given)."""
    with (DATA / SETS[name]).open() as lines:
        rows = [json.loads(line) for line in lines]
    if chars is not None:
        rows = [r for r in rows if chars[0] <= sum(map(len, contexts_of(name, r))) <= chars[1]]
    rng = random.Random(seed)
    positives = [r for r in rows if int(r["label"]) == 1]
    negatives = [r for r in rows if int(r["label"]) == 0]
    k = round(n * len(positives) / len(rows))
    picked = rng.sample(positives, min(k, len(positives))) + rng.sample(negatives, min(n - k, len(negatives)))
    rng.shuffle(picked)
    return picked


def contexts_of(name: str, row: dict[str, Any]) -> list[str]:
    if name == "wicefull":
        return [str(row["context"])]
    if name == "wice" and row.get("oracle_chunks"):
        return list(row["oracle_chunks"])
    return [str(row["context"])]


def read_rows(names: Iterable[str] = ("summedits", "begin", "wice")) -> dict[str, list[dict[str, Any]]]:
    """Every row of the dev sets ``names`` (``DATA``: ``$ASSAY_DEV_DATA``, else ``../shared/data``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        path = DATA / SETS[name]
        if not path.exists():
            raise SystemExit(f"{path} not found: set ASSAY_DEV_DATA to the folder of the grounding dev sets")
        with path.open() as lines:
            out[name] = [json.loads(line) for line in lines]
    return out
