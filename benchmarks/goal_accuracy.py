"""Agent goal accuracy vs the environment's success label on tau-bench airline trajectories.

Scores a seeded, stratified sample of ../shared/data/agents/taubench_airline_dev.jsonl
(gpt-4o tool-calling trajectories; ``label`` 1 = the environment's database check passed)
with ``AgentGoalAccuracy`` twice: with the task's ``goal`` as the reference, and without
it (the judge's own inferred goal). Both variants share the goal-and-end-state call (a
the judge-call cache in front of the judge answers the second, identical request), so a trajectory costs
one long call and two short ones.

Prints, per variant: balanced accuracy with a seeded bootstrap 95% CI, confusion counts,
unscored counts by reason; and seconds per trajectory and prompt tokens of the long call.

    python benchmarks/goal_accuracy.py                    # local judge, 8 trajectories (~15 min on 2 cores)
    python benchmarks/goal_accuracy.py --n 100 --max-chars 12000 --tool-chars 1500
    python benchmarks/goal_accuracy.py --judge openai:gpt-4o-mini
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from assay import Message, Sample, ToolCall
from assay.metrics._agent import GOAL_PROMPT, OUTCOME_PROMPT, AgentGoalAccuracy
from assay.metrics._trace import TraceFormatter
from assay.models import JudgeModel, LocalJudge, get_judge
from assay.run import CachedJudge, JudgeCache

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "agents" / "taubench_airline_dev.jsonl"


def to_trace(messages: list[dict[str, Any]]) -> tuple[Message, ...]:
    """OpenAI chat messages (tool_calls with JSON-string arguments) -> assay messages."""
    out = []
    for m in messages:
        calls = tuple(
            ToolCall(
                name=c["function"]["name"],
                arguments=json.loads(c["function"].get("arguments") or "{}"),
                id=c.get("id"),
            )
            for c in m.get("tool_calls") or ()
        )
        out.append(
            Message(
                role=m["role"],
                content=m.get("content"),
                tool_calls=calls,
                tool_call_id=m.get("tool_call_id"),
                name=m.get("name"),
            )
        )
    return tuple(out)


def load(n: int, seed: int) -> list[tuple[Sample, int]]:
    """A seeded sample with the file's label ratio (n rows, or all if fewer)."""
    rows = [json.loads(line) for line in DATA.open()]
    rng = random.Random(seed)
    by_label: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    for row in rows:
        by_label[int(row["label"])].append(row)
    n_pos = round(n * len(by_label[1]) / len(rows))
    picked = rng.sample(by_label[1], min(n_pos, len(by_label[1]))) + rng.sample(
        by_label[0], min(n - n_pos, len(by_label[0]))
    )
    rng.shuffle(picked)
    return [
        (Sample(id=row["id"], trace=to_trace(row["messages"]), reference=row["goal"]), int(row["label"]))
        for row in picked
    ]


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


def report(name: str, pairs: list[tuple[int, float]], unscored: Counter[str], seed: int) -> dict[str, Any]:
    labels = np.array([label for label, _ in pairs])
    preds = np.array([int(value) for _, value in pairs])
    tp = int(((labels == 1) & (preds == 1)).sum())
    fn = int(((labels == 1) & (preds == 0)).sum())
    fp = int(((labels == 0) & (preds == 1)).sum())
    tn = int(((labels == 0) & (preds == 0)).sum())
    ba = balanced_accuracy(labels, preds) if len(labels) else float("nan")
    lo, hi = bootstrap_ci(labels, preds, seed) if len(labels) else (float("nan"), float("nan"))
    print(
        f"{name:40s} n={len(labels):3d}  balanced acc {ba:.3f} [95% CI {lo:.3f}-{hi:.3f}]  "
        f"TP {tp} FN {fn} FP {fp} TN {tn}  unscored {dict(unscored) or 0}"
    )
    return {"metric": name, "n": len(labels), "balanced_accuracy": ba, "ci95": [lo, hi], "tp": tp, "fn": fn,
            "fp": fp, "tn": tn, "unscored": dict(unscored)}  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", default="local", help="local, local:/path.gguf or openai:MODEL")
    parser.add_argument("--n", type=int, default=8, help="trajectories (seeded, stratified by label)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--n-ctx", type=int, default=8192, help="context window of a local judge")
    parser.add_argument("--max-chars", type=int, default=6000, help="trace formatter budget (characters)")
    parser.add_argument("--tool-chars", type=int, default=600, help="trace formatter cap per tool result")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    inner: JudgeModel
    if args.judge == "local" or args.judge.startswith("local:"):
        inner = LocalJudge(args.judge.partition(":")[2] or None, n_ctx=args.n_ctx)
    else:
        inner = get_judge(args.judge)
    cache = JudgeCache(Path(tempfile.mkdtemp()) / "goal-accuracy-cache.sqlite")
    judge = CachedJudge(inner, cache)
    formatter = TraceFormatter(max_chars=args.max_chars, max_tool_result_chars=args.tool_chars)
    metrics = [
        AgentGoalAccuracy(reference=True, formatter=formatter),
        AgentGoalAccuracy(reference=False, formatter=formatter),
    ]
    rows = load(args.n, args.seed)
    print(
        f"judge {judge.model_id}; prompts {GOAL_PROMPT.name} v{GOAL_PROMPT.version}, "
        f"{OUTCOME_PROMPT.name} v{OUTCOME_PROMPT.version}; formatter {formatter.params()}; "
        f"{len(rows)} trajectories ({sum(label for _, label in rows)} successes), seed {args.seed}"
    )
    results: dict[str, list[tuple[int, float]]] = {m.name: [] for m in metrics}
    unscored: dict[str, Counter[str]] = {m.name: Counter() for m in metrics}
    seconds: list[float] = []
    prompt_tokens: list[int] = []
    chars: list[int] = []
    for i, (sample, label) in enumerate(rows, start=1):
        started = time.perf_counter()
        chars.append(len(formatter.format(sample.trace)))
        for metric in metrics:
            score = await metric.score(sample, judge)
            if score.is_scored:
                results[metric.name].append((label, score.value))
            else:
                assert score.unscored_reason is not None
                unscored[metric.name][score.unscored_reason.value] += 1
                print(
                    f"\n{sample.id} {metric.name}: unscored {score.unscored_reason.value}: {score.detail}",
                    file=sys.stderr,
                )
            if metric.reference and score.calls:
                prompt_tokens.append(score.calls[0].usage.prompt_tokens)
        seconds.append(time.perf_counter() - started)
        print(f"\r{i}/{len(rows)}  {np.mean(seconds):.1f} s/trajectory", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    figures = [report(m.name, results[m.name], unscored[m.name], args.seed) for m in metrics]
    print(
        f"{np.mean(seconds):.1f} s per trajectory (median {np.median(seconds):.1f}, max {max(seconds):.1f}); "
        f"formatted trace chars median {int(np.median(chars))} max {max(chars)}; "
        f"goal-call prompt tokens median {int(np.median(prompt_tokens)) if prompt_tokens else 0} "
        f"max {max(prompt_tokens, default=0)}; cache hits {cache.hits}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "judge": judge.model_id,
                    "n": len(rows),
                    "seed": args.seed,
                    "formatter": formatter.params(),
                    "seconds_per_trajectory": float(np.mean(seconds)),
                    "metrics": figures,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    asyncio.run(main())
