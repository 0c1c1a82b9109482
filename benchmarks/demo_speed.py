"""Where `make demo`'s judging time goes, with and without each prompt kind's saved prefix.

Runs the demo's evaluation (``examples/rag.jsonl``, faithfulness, the default local judge,
no cache) and prints, per kind of call (the decomposition's generation, the verifier's
P(supported) read), the calls, the prompt tokens an API would bill, the tokens llama.cpp
actually decoded, and the seconds; then the scores, so a speed change that moved a
verdict shows.

Two modes, on the same samples, one after the other in this process:

- ``saved``: the shipped judge. Each kind of prompt resumes from its own saved KV cells
  (``assay.models._local._PrefixStates``).
- ``live``: only the live KV cache is reused (the judge before issue 15): the
  decomposition's prompt evicts the verifier's instructions and each sample reads them
  again.

It prints both wall times, their ratio and the ratio to the issue's 120 s target. Run it
on a quiet machine: llama.cpp slows several-fold when another process shares the cores.

    python benchmarks/demo_speed.py               # both modes
    python benchmarks/demo_speed.py --modes saved
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path
from typing import Any

import assay
from assay.metrics import Faithfulness
from assay.models import _local

DEMO = Path(__file__).resolve().parents[1] / "examples" / "rag.jsonl"
TARGET_S = 120.0


def instrument(stats: dict[str, list[float]]) -> None:
    """Count calls, billed and decoded tokens and seconds per kind of call."""
    judge = _local.LocalJudge
    read, group = judge._read_choices, judge._decode_group

    def decoded(self: Any) -> int:
        return _local._STATES[self._key].evaluated

    def timed_read(self: Any, llama: Any, prompts: list[list[int]], instructions: int = 0) -> Any:
        """P(supported) reads, one at a time or together (a batch counts each of its calls)."""
        before, started = decoded(self), time.perf_counter()
        rows = read(self, llama, prompts, instructions)
        row = stats["verify: P(supported)"]
        row[0] += len(prompts)
        row[1] += sum(map(len, prompts))
        row[2] += decoded(self) - before
        row[3] += time.perf_counter() - started
        return rows

    def timed_group(self: Any, llama: Any, calls: Any, prompts: Any, members: list[int], answers: Any) -> None:
        """Greedy calls decoded together (one row per kind; a batch counts each of its calls)."""
        started = time.perf_counter()
        group(self, llama, calls, prompts, members, answers)
        first = calls[members[0]]
        if first.choices:  # counted by timed_read
            return
        kind = "reason" if first.prefix is not None else first.schema.__name__ if first.schema else "text"
        row = stats[f"generate: {kind}"]
        row[0] += len(members)
        row[1] += sum(len(prompts[i]) for i in members)
        row[2] += sum(
            a.usage.completion_tokens for i in members if (a := answers[i]) is not None and hasattr(a, "usage")
        )
        row[3] += time.perf_counter() - started

    judge._read_choices = timed_read  # type: ignore[method-assign]
    judge._decode_group = timed_group  # type: ignore[method-assign,assignment]


def run(mode: str, judge: _local.LocalJudge, stats: dict[str, list[float]]) -> tuple[float, dict[str, Any]]:
    llama = judge.load()
    llama.reset()
    states = _local._STATES[judge._key]
    states._saved.clear()
    states.limit = 4 if mode == "saved" else 0
    stats.clear()
    started = time.perf_counter()
    result = assay.evaluate(DEMO, [Faithfulness()], judge, cache=False, progress="none")
    wall = time.perf_counter() - started
    print(f"\n== {mode}: {wall:.1f} s for {len(result.results)} samples ==")
    # decoded tok: prompt tokens evaluated for P(supported); generated tokens for generation
    print(f"  {'kind':24s} {'calls':>5s} {'billed tok':>10s} {'decoded tok':>11s} {'seconds':>8s}")
    for kind, (calls, billed, done, seconds) in sorted(stats.items()):
        print(f"  {kind:24s} {calls:5.0f} {billed:10.0f} {done:11.0f} {seconds:8.1f}")
    scores = {r.sample.id: r.scores["faithfulness"].value for r in result.results}
    print("  scores: " + ", ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in scores.items()))
    return wall, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default="saved,live", help="comma-separated: saved, live")
    args = parser.parse_args()
    stats: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    instrument(stats)
    judge = _local.LocalJudge()
    judge.load()
    walls, scores = {}, {}
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        walls[mode], scores[mode] = run(mode, judge, stats)
    print()
    for mode, wall in walls.items():
        print(f"{mode}: {wall:.1f} s, {wall / TARGET_S:.2f}x the {TARGET_S:.0f} s target")
    if {"saved", "live"} <= walls.keys():
        print(f"saved / live: {walls['saved'] / walls['live']:.2f}x")
        moved = [k for k in scores["saved"] if scores["saved"][k] != scores["live"].get(k)]
        print(f"scores that differ between the modes: {moved or 'none'}")


if __name__ == "__main__":
    main()
