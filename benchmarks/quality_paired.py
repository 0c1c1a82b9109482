"""Before and after a change that can move verdicts: balanced accuracy on the same items, and the paired difference.

Reads what the two quality benchmarks wrote, once before a change and once after (no
model is run here):

- verdict level: ``judge_agreement.py``'s per-item caches (``benchmarks/.cache/agreement-*.json``
  of the two trees), each item's final verdict ``v`` against the human label in
  ``../shared/data/grounding``;
- answer level: ``faithfulness_answers.py --out`` records, "faithful iff every statement
  is supported" (score == 1) against the answer's label, on the answers scored in both
  runs (that benchmark leaves unscored answers out of its balanced accuracy too).

Per set, on the items present in both runs: balanced accuracy, TPR (faithful called
faithful) and TNR before and after, each with a seeded bootstrap 95% CI of after minus
before, resampling items (so both figures move together); the items whose verdict changed are counted.

    python benchmarks/quality_paired.py --verdicts-before A.json --verdicts-after B.json \\
        --answers-before before.jsonl --answers-after after.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lib.judging import balanced_accuracy

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "grounding"


def _rate(labels: np.ndarray, calls: np.ndarray, label: int) -> float:
    """TPR (label 1) or TNR (label 0): the share of items with ``label`` called ``label``."""
    mask = labels == label
    return float((calls[mask] == label).mean()) if mask.any() else float("nan")


MEASURES = {
    "ba": balanced_accuracy,
    "tpr": lambda y, c: _rate(y, c, 1),
    "tnr": lambda y, c: _rate(y, c, 0),
}


def paired(labels: np.ndarray, before: np.ndarray, after: np.ndarray, seed: int = 7, n: int = 2000) -> dict[str, float]:
    """BA, TPR and TNR before and after, each with a bootstrap 95% CI of the difference (items resampled together)."""
    rng = np.random.default_rng(seed)
    diffs: dict[str, list[float]] = {m: [] for m in MEASURES}
    for _ in range(n):
        idx = rng.integers(0, len(labels), len(labels))
        if len(set(labels[idx])) < 2:
            continue
        for name, measure in MEASURES.items():
            diffs[name].append(measure(labels[idx], after[idx]) - measure(labels[idx], before[idx]))
    out: dict[str, float] = {"n": len(labels), "changed": int((before != after).sum())}
    for name, measure in MEASURES.items():
        # a set with one label (every resample too) has no balanced accuracy: no interval, not a crash
        low, high = np.nanpercentile(diffs[name], [2.5, 97.5]) if diffs[name] else (np.nan, np.nan)
        b, a = measure(labels, before), measure(labels, after)
        out |= {f"{name}_before": b, f"{name}_after": a, f"{name}_low": float(low), f"{name}_high": float(high)}
    return out


def verdict_level(before: Path, after: Path) -> dict[str, dict[str, float]]:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    out = {}
    for key in sorted(set(a) & set(b)):
        name = key.split("/")[0]
        labels = {}
        for line in (DATA / f"{name}_dev.jsonl").open():
            row = json.loads(line)
            labels[row["id"]] = int(row["label"])
        ids = sorted(set(a[key]) & set(b[key]))
        ids = [i for i in ids if a[key][i].get("v") is not None and b[key][i].get("v") is not None]
        y = np.array([labels[i] for i in ids])
        out[key] = paired(y, np.array([a[key][i]["v"] for i in ids]), np.array([b[key][i]["v"] for i in ids]))
    return out


def answer_level(before: Path, after: Path) -> dict[str, dict[str, float]]:
    def load(path: Path) -> dict[tuple[str, str], dict]:
        return {(r["set"], r["id"]): r for r in map(json.loads, path.read_text().splitlines())}

    a, b = load(before), load(after)
    out = {}
    for name in sorted({k[0] for k in set(a) & set(b)}):
        keys = sorted(
            k for k in set(a) & set(b) if k[0] == name and a[k]["value"] is not None and b[k]["value"] is not None
        )
        y = np.array([a[k]["label"] for k in keys])

        def faithful(r: dict) -> int:
            return int(r["value"] == 1.0)

        out[name] = paired(y, np.array([faithful(a[k]) for k in keys]), np.array([faithful(b[k]) for k in keys]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verdicts-before", type=Path)
    parser.add_argument("--verdicts-after", type=Path)
    parser.add_argument("--answers-before", type=Path)
    parser.add_argument("--answers-after", type=Path)
    args = parser.parse_args()
    print("| level | set | items | measure | before | after | after - before [95% CI] | items changed |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    if args.verdicts_before and args.verdicts_after:
        rows += [("verdict", k, v) for k, v in verdict_level(args.verdicts_before, args.verdicts_after).items()]
    if args.answers_before and args.answers_after:
        rows += [("answer", k, v) for k, v in answer_level(args.answers_before, args.answers_after).items()]
    for level, name, f in rows:
        for m in MEASURES:
            b, a = f[f"{m}_before"], f[f"{m}_after"]
            print(
                f"| {level} | {name} | {f['n']} | {m.upper()} | {b:.3f} | {a:.3f} | "
                f"{a - b:+.3f} [{f[f'{m}_low']:+.3f}, {f[f'{m}_high']:+.3f}] | {f['changed']} |"
            )


if __name__ == "__main__":
    main()
