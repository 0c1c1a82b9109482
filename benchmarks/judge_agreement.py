"""How often does the judge agree with people? Balanced accuracy on human-labelled grounding data.

Runs the product's own one-statement verdict prompt (``faithfulness.verdict``) over fixed,
seeded, stratified samples of the dev sets in ../shared/data/grounding/:

- WiCE dev: claim vs. its oracle chunks; the claim is supported if any chunk supports it
  (max over chunks; chunks are judged in order and judging stops at the first 1).
- BEGIN dev: dialogue response vs. its knowledge snippet.
- SummEdits dev: summary vs. document.

Prints, per set: balanced accuracy with a seeded bootstrap 95% CI, the confusion counts,
how many items were unscored (and why), and judge throughput in statements per second.

    python benchmarks/judge_agreement.py                 # default local judge, 60 items a set
    python benchmarks/judge_agreement.py --n 200 --sets begin
    python benchmarks/judge_agreement.py --judge local:/path/other.gguf
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from assay.metrics._faithfulness import STATEMENT_PROMPT, StatementCheck
from assay.models import JudgeModel, get_judge
from assay.prompts import ask

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "grounding"
SETS = {"wice": "wice_dev.jsonl", "begin": "begin_dev.jsonl", "summedits": "summedits_dev.jsonl"}


@dataclass
class Outcome:
    name: str
    labels: list[int] = field(default_factory=list)
    predictions: list[int] = field(default_factory=list)
    unscored: Counter[str] = field(default_factory=Counter)
    calls: int = 0
    seconds: float = 0.0
    context_chars: list[int] = field(default_factory=list)


def load(name: str, n: int, seed: int) -> list[dict[str, object]]:
    """A seeded sample with the set's own label ratio (n items, or all if fewer)."""
    rows = [json.loads(line) for line in (DATA / SETS[name]).open()]
    rng = random.Random(seed)
    by_label: dict[int, list[dict[str, object]]] = {0: [], 1: []}
    for row in rows:
        by_label[int(row["label"])].append(row)  # type: ignore[call-overload]
    picked: list[dict[str, object]] = []
    for label, group in by_label.items():
        k = round(n * len(group) / len(rows)) if label == 1 else n - round(n * len(by_label[1]) / len(rows))
        picked.extend(rng.sample(group, min(k, len(group))))
    rng.shuffle(picked)
    return picked


def balanced_accuracy(labels: np.ndarray, preds: np.ndarray) -> float:
    tpr = (preds[labels == 1] == 1).mean() if (labels == 1).any() else np.nan
    tnr = (preds[labels == 0] == 0).mean() if (labels == 0).any() else np.nan
    return float((tpr + tnr) / 2)


def bootstrap_ci(labels: np.ndarray, preds: np.ndarray, seed: int, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n):
        idx = rng.integers(0, len(labels), len(labels))
        values.append(balanced_accuracy(labels[idx], preds[idx]))
    lo, hi = np.nanpercentile(values, [2.5, 97.5])
    return float(lo), float(hi)


async def judge_item(judge: JudgeModel, contexts: list[str], claim: str, out: Outcome) -> int | None:
    for chunk in contexts:
        started = time.perf_counter()
        answer = await ask(judge, STATEMENT_PROMPT, StatementCheck(context=[chunk], statement=claim))
        out.seconds += time.perf_counter() - started
        out.calls += 1
        out.context_chars.append(len(chunk))
        if answer.output is None:
            assert answer.failure is not None
            out.unscored[answer.failure.reason.value] += 1
            return None
        if answer.output.verdict == 1:
            return 1
    return 0


async def run_set(judge: JudgeModel, name: str, n: int, seed: int) -> Outcome:
    out = Outcome(name)
    rows = load(name, n, seed)
    for i, row in enumerate(rows, start=1):
        chunks = row.get("oracle_chunks") if name == "wice" else None
        contexts = list(chunks) if chunks else [str(row["context"])]  # type: ignore[call-overload]
        prediction = await judge_item(judge, contexts, str(row["claim"]), out)
        if prediction is not None:
            out.labels.append(int(row["label"]))  # type: ignore[call-overload]
            out.predictions.append(prediction)
        print(f"\r{name}: {i}/{len(rows)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return out


def report(out: Outcome, seed: int) -> dict[str, object]:
    labels = np.array(out.labels)
    preds = np.array(out.predictions)
    tp = int(((labels == 1) & (preds == 1)).sum())
    fn = int(((labels == 1) & (preds == 0)).sum())
    fp = int(((labels == 0) & (preds == 1)).sum())
    tn = int(((labels == 0) & (preds == 0)).sum())
    ba = balanced_accuracy(labels, preds)
    lo, hi = bootstrap_ci(labels, preds, seed)
    rate = out.calls / out.seconds if out.seconds else float("nan")
    median_chars = int(np.median(out.context_chars)) if out.context_chars else 0
    print(
        f"{out.name:10s} n={len(labels):4d}  balanced acc {ba:.3f} [95% CI {lo:.3f}-{hi:.3f}]  "
        f"TP {tp} FN {fn} FP {fp} TN {tn}  unscored {dict(out.unscored) or 0}  "
        f"{rate:.2f} statements/s ({out.calls} calls, median context {median_chars} chars)"
    )
    return {
        "set": out.name,
        "n": len(labels),
        "balanced_accuracy": ba,
        "ci95": [lo, hi],
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
        "unscored": dict(out.unscored),
        "statements_per_second": rate,
        "calls": out.calls,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--n", type=int, default=60, help="items per set (seeded, stratified)")
    parser.add_argument("--sets", default="begin,wice,summedits")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    judge = get_judge(args.judge)
    print(
        f"judge {judge.model_id}; prompt {STATEMENT_PROMPT.name} v{STATEMENT_PROMPT.version}; "
        f"{args.n} items per set, seed {args.seed}"
    )
    figures = []
    for name in args.sets.split(","):
        figures.append(report(await run_set(judge, name.strip(), args.n, args.seed), args.seed))
    if args.json:
        args.json.write_text(json.dumps({"judge": judge.model_id, "sets": figures}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
