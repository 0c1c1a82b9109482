"""How often does the judge agree with people? Balanced accuracy on human-labelled grounding data.

Runs the product's own statement verifier (``assay.metrics._verify.StatementVerifier``,
what faithfulness uses per statement) over fixed, seeded, stratified samples of the dev
sets in ../shared/data/grounding/:

- WiCE dev: claim vs. its oracle chunks (max over chunks);
- BEGIN dev: dialogue response vs. its knowledge snippet;
- SummEdits dev: summary vs. document (chunked at --chunk-chars, max over chunks).

For each item it records P(supported) read from the logits, per prompt version (cached
in benchmarks/.cache/, so a rerun only computes what is missing). It then reports, per
set, balanced accuracy with a seeded bootstrap 95% CI, confusion counts and statements
per second:

- at the argmax (threshold 0.5),
- at one threshold chosen on half of every set (the tuning half) and scored on the other
  half (held out), which is how the product's default threshold is chosen.

With ``--generate``, also the generated-JSON verdict (the argmax under the grammar, with
a reason), i.e. the judge as issue 2 first shipped it.

    python benchmarks/judge_agreement.py                  # 60 items a set, prompts v1 and v2
    python benchmarks/judge_agreement.py --n 120 --prompts 2 --sets begin,wice
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from assay.metrics._verify import STATEMENT_PROMPT, STATEMENT_PROMPT_V1, StatementVerifier
from assay.models import JudgeModel, get_judge

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "grounding"
CACHE = Path(__file__).resolve().parent / ".cache"
SETS = {"wice": "wice_dev.jsonl", "begin": "begin_dev.jsonl", "summedits": "summedits_dev.jsonl"}
PROMPTS = {"1": STATEMENT_PROMPT_V1, "2": STATEMENT_PROMPT}


def load(name: str, n: int, seed: int) -> list[dict[str, Any]]:
    """A seeded sample with the set's own label ratio."""
    rows = [json.loads(line) for line in (DATA / SETS[name]).open()]
    rng = random.Random(seed)
    positives = [r for r in rows if int(r["label"]) == 1]
    negatives = [r for r in rows if int(r["label"]) == 0]
    k = round(n * len(positives) / len(rows))
    picked = rng.sample(positives, min(k, len(positives))) + rng.sample(negatives, min(n - k, len(negatives)))
    rng.shuffle(picked)
    return picked


def contexts_of(name: str, row: dict[str, Any]) -> list[str]:
    if name == "wice" and row.get("oracle_chunks"):
        return list(row["oracle_chunks"])
    return [str(row["context"])]


def balanced_accuracy(labels: np.ndarray, preds: np.ndarray) -> float:
    tpr = (preds[labels == 1] == 1).mean() if (labels == 1).any() else np.nan
    tnr = (preds[labels == 0] == 0).mean() if (labels == 0).any() else np.nan
    return float((tpr + tnr) / 2)


def bootstrap_ci(labels: np.ndarray, preds: np.ndarray, seed: int, n: int = 2000) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = [balanced_accuracy(labels[idx], preds[idx]) for idx in rng.integers(0, len(labels), (n, len(labels)))]
    lo, hi = np.nanpercentile(values, [2.5, 97.5])
    return float(lo), float(hi)


async def score_items(
    judge: JudgeModel,
    name: str,
    rows: list[dict[str, Any]],
    key: str,
    verifier: StatementVerifier,
    cache: dict[str, Any],
    save: Any,
) -> None:
    """Fill cache[key][item id] with {"p": P(1) or None, "s": seconds, "calls": n}."""
    done = cache.setdefault(key, {})
    todo = [r for r in rows if r["id"] not in done]
    for i, row in enumerate(todo, start=1):
        started = time.perf_counter()
        (outcome,) = await verifier.verify(contexts_of(name, row), [str(row["claim"])], judge)
        seconds = time.perf_counter() - started
        if outcome.verdict is None:
            done[row["id"]] = {
                "p": None,
                "v": None,
                "s": seconds,
                "calls": len(outcome.calls),
                "why": outcome.failure.reason.value if outcome.failure else "?",
            }
        else:
            done[row["id"]] = {
                "p": outcome.probability,
                "v": int(outcome.verdict.value),
                "s": seconds,
                "calls": len(outcome.calls),
            }
        print(f"\r{key}: {i}/{len(todo)}", end="", file=sys.stderr, flush=True)
        if i % 5 == 0:
            save()  # a long run that is cut off keeps what it measured
    if todo:
        print(file=sys.stderr)


def report_line(label: str, labels: np.ndarray, preds: np.ndarray, seed: int, extra: str = "") -> dict[str, Any]:
    tp = int(((labels == 1) & (preds == 1)).sum())
    fn = int(((labels == 1) & (preds == 0)).sum())
    fp = int(((labels == 0) & (preds == 1)).sum())
    tn = int(((labels == 0) & (preds == 0)).sum())
    ba = balanced_accuracy(labels, preds)
    lo, hi = bootstrap_ci(labels, preds, seed)
    counts = f"TP {tp:3d} FN {fn:3d} FP {fp:3d} TN {tn:3d}"
    print(f"  {label:34s} n={len(labels):4d}  BA {ba:.3f} [{lo:.3f}-{hi:.3f}]  {counts}{extra}")
    return {
        "label": label,
        "n": len(labels),
        "balanced_accuracy": ba,
        "ci95": [lo, hi],
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
    }


def tune_threshold(items: list[tuple[str, int, float]]) -> float:
    """The threshold maximising the mean balanced accuracy over the sets in ``items``."""
    best, best_t = -1.0, 0.5
    for t in np.round(np.arange(0.05, 0.96, 0.01), 2):
        bas = []
        for name in sorted({n for n, _, _ in items}):
            labels = np.array([y for n, y, _ in items if n == name])
            preds = np.array([int(p >= t) for n, _, p in items if n == name])
            bas.append(balanced_accuracy(labels, preds))
        if np.mean(bas) > best:
            best, best_t = float(np.mean(bas)), float(t)
    return best_t


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="local")
    parser.add_argument("--n", type=int, default=60, help="items per set (seeded, stratified)")
    parser.add_argument("--sets", default="begin,wice,summedits")
    parser.add_argument("--prompts", default="1,2", help="verdict prompt versions to compare")
    parser.add_argument("--generate", action="store_true", help="also the generated-JSON verdict (slower)")
    parser.add_argument("--chunk-chars", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    judge = get_judge(args.judge)
    sets = [s.strip() for s in args.sets.split(",")]
    rows = {name: load(name, args.n, args.seed) for name in sets}
    CACHE.mkdir(exist_ok=True)
    cache_file = CACHE / f"agreement-{judge.model_id.replace(':', '_').replace('/', '_')}-n{args.n}-s{args.seed}.json"
    cache: dict[str, Any] = json.loads(cache_file.read_text()) if cache_file.exists() else {}
    print(f"judge {judge.model_id}; {args.n} items per set (seed {args.seed}); chunks of {args.chunk_chars} chars")
    variants = [
        (
            f"p1-v{v}",
            StatementVerifier(method="threshold", prompt=PROMPTS[v], reasons="none", chunk_chars=args.chunk_chars),
        )
        for v in args.prompts.split(",")
    ]
    if args.generate:
        variants.append(
            ("gen-v1", StatementVerifier(method="generate", prompt=STATEMENT_PROMPT_V1, chunk_chars=args.chunk_chars))
        )
    for name in sets:
        for key, verifier in variants:
            await score_items(
                judge,
                name,
                rows[name],
                f"{name}/{key}",
                verifier,
                cache,
                lambda: cache_file.write_text(json.dumps(cache)),
            )
            cache_file.write_text(json.dumps(cache))
    figures: dict[str, Any] = {"judge": judge.model_id, "n": args.n, "seed": args.seed, "results": []}
    rng = random.Random(args.seed)
    halves = {name: {r["id"]: rng.random() < 0.5 for r in rows[name]} for name in sets}
    for key, _ in variants:
        print(f"\n== {key} ==")
        scored: list[tuple[str, str, int, float, float]] = []  # set, id, label, p, seconds
        for name in sets:
            for row in rows[name]:
                entry = cache[f"{name}/{key}"][row["id"]]
                if entry["p"] is None and entry["v"] is None:
                    continue
                p = entry["p"] if entry["p"] is not None else float(entry["v"])
                scored.append((name, row["id"], int(row["label"]), p, entry["s"]))
        tuned = None
        if key.startswith("p1"):
            tuned = tune_threshold([(n, y, p) for n, i, y, p, _ in scored if halves[n][i]])
            print(f"  threshold tuned on the tuning halves: {tuned:.2f}")
        for name in sets:
            mine = [x for x in scored if x[0] == name]
            labels = np.array([y for _, _, y, _, _ in mine])
            unscored = len(rows[name]) - len(mine)
            seconds = sum(s for *_, s in mine)
            calls = sum(cache[f"{name}/{key}"][i]["calls"] for _, i, *_ in mine)
            speed = f"  {calls / seconds:.2f} calls/s, {len(mine) / seconds:.2f} items/s" if seconds else ""
            print(f" {name} (unscored {unscored}){speed}")
            argmax = np.array([int(p >= 0.5) for *_, p, _ in mine])
            figures["results"].append(
                {
                    "variant": key,
                    "set": name,
                    "threshold": 0.5,
                    **report_line("argmax (0.5), all items", labels, argmax, args.seed),
                }
            )
            if tuned is not None:
                held = [x for x in mine if not halves[name][x[1]]]
                labels_h = np.array([y for _, _, y, _, _ in held])
                preds_h = np.array([int(p >= tuned) for *_, p, _ in held])
                figures["results"].append(
                    {
                        "variant": key,
                        "set": name,
                        "threshold": tuned,
                        "split": "held-out",
                        **report_line(f"threshold {tuned:.2f}, held-out half", labels_h, preds_h, args.seed),
                    }
                )
                preds_all = np.array([int(p >= tuned) for *_, p, _ in mine])
                figures["results"].append(
                    {
                        "variant": key,
                        "set": name,
                        "threshold": tuned,
                        "split": "all",
                        **report_line(f"threshold {tuned:.2f}, all items", labels, preds_all, args.seed),
                    }
                )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
