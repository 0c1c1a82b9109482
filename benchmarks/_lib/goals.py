"""The agent-goal dev set (tau-bench airline trajectories): its rows and seeded samples."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay import Sample

# The shared dev data beside the checkout, or where $ASSAY_SHARED_DATA says (a worktree elsewhere).
DATA = (
    Path(os.environ.get("ASSAY_SHARED_DATA") or Path(__file__).resolve().parents[2].parent / "shared" / "data")
    / "agents"
    / "taubench_airline_dev.jsonl"
)


class Row:
    """One trajectory: its sample, label and task."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.id: str = raw["id"]
        self.label = int(raw["label"])
        self.task = int(raw["task_id"])
        self.sample = Sample(
            id=raw["id"],
            trace=raw["messages"],
            reference=raw["goal"],
            reference_tool_calls=[{"name": a["name"], "arguments": a["kwargs"]} for a in raw["expected_actions"]],
        )


def load(n: int | None, seed: int) -> list[Row]:
    """Every row, or a seeded sample of ``n`` with the file's label ratio."""
    rows = [Row(json.loads(line)) for line in DATA.open()]
    if n is None or n >= len(rows):
        return rows
    rng = random.Random(seed)
    positives = [r for r in rows if r.label == 1]
    negatives = [r for r in rows if r.label == 0]
    n_pos = round(n * len(positives) / len(rows))
    picked = rng.sample(positives, min(n_pos, len(positives))) + rng.sample(negatives, min(n - n_pos, len(negatives)))
    rng.shuffle(picked)
    return picked
