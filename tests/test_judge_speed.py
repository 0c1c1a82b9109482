"""benchmarks/judge_speed.py: every configuration it compares must run, or the comparison says it did not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tiny_model import smollm2_path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.slow
def test_the_configurations_with_the_old_encoder_judge_their_warm_sample() -> None:
    """``old`` (and every round before the eighth) swaps in the old MiniLM batching.

    The evidence index's check for the shared MiniLM asked that stand-in for
    ``lru_cache``'s ``cache_info`` and crashed, so the benchmark's ``old`` column was
    missing from a run's tables. The child must judge its warm sample and report.
    """
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import judge_speed
    finally:
        sys.path.remove(str(BENCHMARKS))
    assert judge_speed.CONFIGS["old"].get(judge_speed.ENCODER_BATCH), "old no longer swaps the encoder"
    nothing = ["--rag", "0", "--summaries", "0", "--agents", "0"]  # the warm sample only: no dev data read
    tiny = {"ASSAY_LOCAL_MODEL": str(smollm2_path())}  # the configuration is the point, not the model
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "judge_speed.py"), "--child", "old", *nothing],
        env=judge_speed.environment("old") | tiny,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["library"] == "default" and result["weights"] == "as given", result
    assert result["runs"] == {"rag": [], "summary": [], "agent": []}, result
