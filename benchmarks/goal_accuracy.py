"""Agent metrics vs the environment's success label on tau-bench airline trajectories.

Reads ../shared/data/agents/taubench_airline_dev.jsonl (gpt-4o tool-calling trajectories,
tasks 0-24 x 4 trials; ``label`` 1 = the environment's database check passed) and scores
every trajectory (or a seeded stratified sample) with:

- ``state_match``: :class:`AgentStateMatch` against the task's expected actions (no model),
  arguments ``exact`` (the default) and ``expected_keys``;
- ``tool_call_accuracy`` in several modes (no model), for comparison;
- ``atoms_with_reference`` / ``atoms_without_reference``: :class:`AgentGoalAccuracy`
  (requirements from the task's goal / from the user's turns, judged against the calls);
- ``holistic_with_reference`` / ``holistic_without_reference`` (``--holistic``): version 1,
  :class:`HolisticGoalAccuracy`, as the previous benchmark ran it.

Prints per variant: balanced accuracy over the scored trajectories with a 95% CI from a
bootstrap that resamples *tasks* (the 4 trials of a task are not independent), TPR and
TNR, confusion counts, unscored counts by reason, and the balanced accuracy with unscored
counted as failures; seconds per trajectory for the model variants and the machine's load.
Where a variant is chosen among several by its score, the choice is cross-validated
leaving one task out (choose on 24 tasks, predict the 25th) and printed beside the plain
figure. ``--json`` writes every figure and every trajectory's result.

    python benchmarks/goal_accuracy.py                          # no-model variants, all 100
    python benchmarks/goal_accuracy.py --model                  # + goal atoms (local judge; ~1 h on 2 cores)
    python benchmarks/goal_accuracy.py --model --holistic --n 16
    python benchmarks/goal_accuracy.py --model --judge openai:gpt-4o-mini
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _lib.goals import Row, load

from assay import Score
from assay.errors import JudgeError
from assay.metrics import (
    AgentGoalAccuracy,
    AgentStateMatch,
    ArgumentMatch,
    HolisticGoalAccuracy,
    Metric,
    ToolCallAccuracy,
    TraceFormatter,
)
from assay.models import JudgeModel, JudgeResponse, LocalJudge, ScriptedJudge, get_judge
from assay.models._wrapper import JudgeWrapper
from assay.run import CachedJudge, JudgeCache

# --- statistics ----------------------------------------------------------------------------------


def balanced_accuracy(labels: np.ndarray, preds: np.ndarray) -> float:
    """(TPR + TNR) / 2; NaN when a class is absent."""
    if not (labels == 1).any() or not (labels == 0).any():
        return float("nan")
    tpr = (preds[labels == 1] == 1).mean()
    tnr = (preds[labels == 0] == 0).mean()
    return float((tpr + tnr) / 2)


def task_bootstrap_ci(
    labels: np.ndarray, preds: np.ndarray, tasks: np.ndarray, seed: int, n: int = 2000
) -> tuple[float, float]:
    """95% percentile interval of the balanced accuracy, resampling whole tasks with replacement."""
    rng = np.random.default_rng(seed)
    unique = np.unique(tasks)
    members = {t: np.flatnonzero(tasks == t) for t in unique}
    values = []
    for _ in range(n):
        idx = np.concatenate([members[t] for t in rng.choice(unique, len(unique))])
        values.append(balanced_accuracy(labels[idx], preds[idx]))
    lo, hi = np.nanpercentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def figures(name: str, rows: Sequence[Row], scores: Mapping[str, Score], seed: int) -> dict[str, Any]:
    """The figures of one variant over ``rows`` (scored ones; unscored counted by reason)."""
    scored = [r for r in rows if scores[r.id].is_scored]
    unscored = Counter(
        scores[r.id].unscored_reason.value  # type: ignore[union-attr]
        for r in rows
        if not scores[r.id].is_scored
    )
    labels = np.array([r.label for r in scored])
    preds = np.array([int(scores[r.id].value >= 1.0) for r in scored])
    tasks = np.array([r.task for r in scored])
    strict_labels = np.array([r.label for r in rows])
    strict_preds = np.array([int(scores[r.id].is_scored and scores[r.id].value >= 1.0) for r in rows])
    ba = balanced_accuracy(labels, preds) if len(labels) else float("nan")
    lo, hi = task_bootstrap_ci(labels, preds, tasks, seed) if len(labels) else (float("nan"), float("nan"))
    out = {
        "variant": name,
        "n": len(rows),
        "n_scored": len(scored),
        "balanced_accuracy": ba,
        "ci95": [lo, hi],
        "tpr": float((preds[labels == 1] == 1).mean()) if (labels == 1).any() else float("nan"),
        "tnr": float((preds[labels == 0] == 0).mean()) if (labels == 0).any() else float("nan"),
        "tp": int(((labels == 1) & (preds == 1)).sum()),
        "fn": int(((labels == 1) & (preds == 0)).sum()),
        "fp": int(((labels == 0) & (preds == 1)).sum()),
        "tn": int(((labels == 0) & (preds == 0)).sum()),
        "unscored": dict(unscored),
        "balanced_accuracy_unscored_as_fail": balanced_accuracy(strict_labels, strict_preds),
    }
    print(
        f"{name:38s} n={len(rows):3d} scored={len(scored):3d}  BA {ba:.3f} [{lo:.3f}-{hi:.3f}]  "
        f"TPR {out['tpr']:.2f} TNR {out['tnr']:.2f}  TP {out['tp']} FN {out['fn']} FP {out['fp']} TN {out['tn']}  "
        f"unscored {dict(unscored) or 0} (BA if unscored=fail {out['balanced_accuracy_unscored_as_fail']:.3f})"
    )
    return out


def grouped_cv(
    name: str, rows: Sequence[Row], candidates: Mapping[str, Mapping[str, Score]], seed: int
) -> dict[str, Any]:
    """Leave-one-task-out: choose the candidate with the best BA on the other tasks, score the held-out task.

    Unscored trajectories count as failures when choosing and when scoring (so a candidate
    cannot win by abstaining).
    """

    def pred(scores: Mapping[str, Score], row: Row) -> int:
        return int(scores[row.id].is_scored and scores[row.id].value >= 1.0)

    chosen: Counter[str] = Counter()
    preds: list[int] = []
    labels: list[int] = []
    tasks: list[int] = []
    for task in sorted({r.task for r in rows}):
        train = [r for r in rows if r.task != task]
        test = [r for r in rows if r.task == task]
        y = np.array([r.label for r in train])

        def train_ba(key: str, train: list[Row] = train, y: np.ndarray = y) -> float:
            return balanced_accuracy(y, np.array([pred(candidates[key], r) for r in train]))

        best = max(candidates, key=train_ba)  # ties: the first listed (the default)
        chosen[best] += 1
        preds.extend(pred(candidates[best], r) for r in test)
        labels.extend(r.label for r in test)
        tasks.extend(r.task for r in test)
    y_all, p_all, t_all = np.array(labels), np.array(preds), np.array(tasks)
    ba = balanced_accuracy(y_all, p_all)
    lo, hi = task_bootstrap_ci(y_all, p_all, t_all, seed)
    print(
        f"{name + ' [task-grouped CV]':38s} n={len(rows):3d}  BA {ba:.3f} [{lo:.3f}-{hi:.3f}]  "
        f"(unscored = fail) chosen per fold: {dict(chosen)}"
    )
    return {
        "variant": name,
        "cv": "leave one task out",
        "balanced_accuracy": ba,
        "ci95": [lo, hi],
        "chosen": dict(chosen),
    }


# --- scoring -------------------------------------------------------------------------------------


async def score_all(
    metric: Metric, rows: Sequence[Row], judge: JudgeModel, label: str, timed: bool
) -> tuple[dict[str, Score], list[float]]:
    """Every row's score, and seconds per row."""
    scores: dict[str, Score] = {}
    seconds: list[float] = []
    for i, row in enumerate(rows, start=1):
        started = time.perf_counter()
        score = await metric.score(row.sample, judge)
        seconds.append(time.perf_counter() - started)
        scores[row.id] = score
        if timed:
            print(
                f"\r{label}: {i}/{len(rows)}  {np.mean(seconds):.1f} s/trajectory  load {os.getloadavg()[0]:.1f}",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if timed:
        print(file=sys.stderr)
    return scores, seconds


def record(score: Score) -> dict[str, Any]:
    """What the JSON keeps of one score."""
    return {
        "value": score.value if score.is_scored else None,
        "unscored": score.unscored_reason.value if score.unscored_reason else None,
        "detail": score.detail,
        "verdicts": [[v.subject, v.value, v.reason, (v.details or {}).get("calls")] for v in score.verdicts],
        "fraction_met": (score.details or {}).get("fraction_met"),
        "judge_calls": len(score.calls),
        "prompt_tokens": score.usage.prompt_tokens,
        "completion_tokens": score.usage.completion_tokens,
    }


class CacheOnly(JudgeWrapper):
    """The judge's identity (so the cache keys match) without the judge: a call the cache misses fails."""

    async def generate(self, messages: Any, *, schema: Any = None, config: Any = None) -> JudgeResponse:
        raise JudgeError("not in the cache (--cached-only)")


def no_model_variants() -> dict[str, Metric]:
    """The deterministic metrics compared (name -> metric)."""
    return {
        "state_match (arguments exact)": AgentStateMatch(),
        "state_match (arguments expected_keys)": AgentStateMatch(arguments=ArgumentMatch(mode="expected_keys")),
        "tool_call_accuracy = 1 (all calls)": ToolCallAccuracy(),
        "tool_call_accuracy = 1 (extra reads free)": ToolCallAccuracy(calls="ignore_extra_reads"),
        "tool_call_accuracy unordered, state-changing": ToolCallAccuracy(
            calls="state_changing", trajectory="unordered"
        ),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=None, help="trajectories (default all 100; else seeded, stratified)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--model", action="store_true", help="also run the goal-atoms variants (a judge)")
    parser.add_argument("--holistic", action="store_true", help="also run version 1 (holistic) variants")
    parser.add_argument("--variants", default="with,without", help="goal-atoms variants: with,without")
    parser.add_argument(
        "--policy-checks",
        action="store_true",
        help="also run each goal-atoms variant with policy_checks (its requirement calls come from the cache: its "
        "time is printed as the plain variant's plus its own)",
    )
    parser.add_argument("--judge", default="local", help="local, local:/path.gguf or openai:MODEL")
    parser.add_argument(
        "--n-ctx",
        type=int,
        default=4096,
        help="context window of a local judge (default: the local judge's, as `assay run` uses it; "
        "a longer policy is cut to fit and the record says so)",
    )
    parser.add_argument("--max-chars", type=int, default=8000, help="holistic: trace formatter budget")
    parser.add_argument("--tool-chars", type=int, default=1500, help="holistic: cap per tool result")
    parser.add_argument("--json", type=Path, help="write every figure and every trajectory's result here")
    parser.add_argument(
        "--cache",
        type=Path,
        help="judge cache file, kept between runs: a stopped run resumes, and a larger --n reuses the calls "
        "already made (default: a fresh temporary cache; seconds per trajectory count only calls not cached)",
    )
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="with --cache: answer only from the cache, never run the judge (a trajectory whose calls are not all "
        "cached is unscored judge_error): the figures of a run stopped part way, on the trajectories it finished",
    )
    args = parser.parse_args()
    if args.cached_only and not args.cache:
        parser.error("--cached-only needs --cache")

    rows = load(args.n, args.seed)
    print(
        f"{len(rows)} trajectories ({sum(r.label for r in rows)} solved) from {len({r.task for r in rows})} tasks; "
        f"seed {args.seed}; load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    out: dict[str, Any] = {"n": len(rows), "seed": args.seed, "variants": [], "cv": [], "trajectories": {}}
    ids = [r.id for r in rows]
    out["trajectories"] = {i: {"label": r.label, "task": r.task} for i, r in zip(ids, rows, strict=True)}

    print("\nno model:")
    nobody = ScriptedJudge([])  # raises if called: these metrics make no judge call
    deterministic: dict[str, dict[str, Score]] = {}
    for name, metric in no_model_variants().items():
        deterministic[name], _ = await score_all(metric, rows, nobody, name, timed=False)
        out["variants"].append(figures(name, rows, deterministic[name], args.seed))
        for i in ids:
            out["trajectories"][i][name] = record(deterministic[name][i])
    out["cv"].append(
        grouped_cv(
            "state_match (argument mode chosen)",
            rows,
            {k: deterministic[k] for k in ("state_match (arguments exact)", "state_match (arguments expected_keys)")},
            args.seed,
        )
    )

    if args.model or args.holistic:
        inner: JudgeModel
        if args.judge == "local" or args.judge.startswith("local:"):
            inner = LocalJudge(args.judge.partition(":")[2] or None, n_ctx=args.n_ctx)
        else:
            inner = get_judge(args.judge)
        if args.cached_only:
            inner = CacheOnly(inner)
        cache = JudgeCache(args.cache or Path(tempfile.mkdtemp()) / "goal-accuracy-cache.sqlite")
        if args.cache:
            print(f"judge cache: {args.cache} (answers already in it are not timed again)")
        judge = CachedJudge(inner, cache)
        model_variants: dict[str, Metric] = {}
        wanted = set(args.variants.split(","))
        if args.model and "with" in wanted:
            model_variants["atoms_with_reference"] = AgentGoalAccuracy(reference=True)
            if args.policy_checks:
                model_variants["atoms_with_reference+policy_checks"] = AgentGoalAccuracy(
                    reference=True, policy_checks=True
                )
        if args.model and "without" in wanted:
            model_variants["atoms_without_reference"] = AgentGoalAccuracy(reference=False)
            if args.policy_checks:
                model_variants["atoms_without_reference+policy_checks"] = AgentGoalAccuracy(
                    reference=False, policy_checks=True
                )
        if args.holistic:
            formatter = TraceFormatter(max_chars=args.max_chars, max_tool_result_chars=args.tool_chars)
            model_variants["holistic_with_reference"] = HolisticGoalAccuracy(reference=True, formatter=formatter)
            model_variants["holistic_without_reference"] = HolisticGoalAccuracy(reference=False, formatter=formatter)
        print(f"\njudge {judge.model_id}; n_ctx {args.n_ctx}")
        timing: dict[str, Any] = {}
        model_scores: dict[str, dict[str, Score]]
        model_seconds: dict[str, list[float]]
        # Trajectory by trajectory, every variant in turn: the variants of one trajectory share the
        # evidence prefix (policy, calls, reply) of their requirement checks, as one run of several
        # agent metrics would; each variant's seconds are its own calls'.
        load_before = os.getloadavg()[0]
        model_scores = {name: {} for name in model_variants}
        model_seconds = {name: [] for name in model_variants}
        for n_done, row in enumerate(rows, start=1):
            for name, metric in model_variants.items():
                started = time.perf_counter()
                model_scores[name][row.id] = await metric.score(row.sample, judge)
                model_seconds[name].append(time.perf_counter() - started)
            progress = "  ".join(f"{k} {np.mean(v):.1f}s" for k, v in model_seconds.items())
            print(
                f"\r{n_done}/{len(rows)}  {progress}  load {os.getloadavg()[0]:.1f}",
                end="",
                file=sys.stderr,
                flush=True,
            )
            if args.json and n_done % 5 == 0:  # keep what is done so far
                for name in model_variants:
                    out["trajectories"][row.id][name] = record(model_scores[name][row.id])
                args.json.write_text(json.dumps(out, indent=1, default=str))
        print(file=sys.stderr)
        load_after = os.getloadavg()[0]
        for name in model_variants:
            seconds = model_seconds[name]
            base = name.removesuffix("+policy_checks")
            if base != name and base in model_seconds:  # its shared calls were answered from the cache
                seconds = [a + b for a, b in zip(model_seconds[base], seconds, strict=True)]
            timing[name] = {
                "seconds_per_trajectory": float(np.mean(seconds)),
                "median": float(np.median(seconds)),
                "max": float(np.max(seconds)),
                "load_average_before": load_before,
                "load_average_after": load_after,
            }
            fig = figures(name, rows, model_scores[name], args.seed)
            fig.update(timing[name])
            out["variants"].append(fig)
            print(
                f"{'':38s} {timing[name]['seconds_per_trajectory']:.1f} s/trajectory (median "
                f"{timing[name]['median']:.1f}, max {timing[name]['max']:.1f}); load average "
                f"{load_before:.1f} -> {load_after:.1f}"
            )
            for i, row in enumerate(rows):
                out["trajectories"][row.id][name] = record(model_scores[name][row.id])
                out["trajectories"][row.id][name]["seconds"] = seconds[i]
        for base in ("atoms_with_reference", "atoms_without_reference"):
            if base in model_scores and f"{base}+policy_checks" in model_scores:
                out["cv"].append(
                    grouped_cv(
                        f"{base} (policy checks chosen)",
                        rows,
                        {base: model_scores[base], f"{base}+policy_checks": model_scores[f"{base}+policy_checks"]},
                        args.seed,
                    )
                )
        out["judge"] = judge.model_id
        out["cache_hits"] = cache.hits
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    asyncio.run(main())
