"""End to end: the cascade leaves a question to people, ``assay review`` answers it, the score follows.

The cascade's own test judges (``tests/test_cascade.py``: two judges with known confidences,
calibrated by ``assay calibrate``'s path) decide what they are sure of in a run the runner
makes and stores (``evaluate(..., escalate=[big, "review"])``); nothing here writes a verdict.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import test_cascade
from assay import UnscoredReason, evaluate
from assay.cli import app
from assay.models import ProbabilityJudge
from assay.run import RunStore
from assay.run._calibrate import read_items

calibrated = test_cascade.calibrated
"""The cascade tests' two judges, calibrated on one labelled file (a module-scoped fixture: copied before writing)."""
small_p, big_p = test_cascade.small_p, test_cascade.big_p


def test_a_question_the_cascade_left_is_answered_in_review_scored_by_the_metric_and_kept_as_a_label(
    calibrated: Path, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite"
    shutil.copy(calibrated, store)
    small, big = ProbabilityJudge(small_p, name="small"), ProbabilityJudge(big_p, name="big")
    result = evaluate(
        [
            {
                "id": "s1",
                "answer": "alpha rule holds. beta rule holds. gamma rule holds. delta rule holds.",
                "contexts": ["alpha, beta, gamma and delta all hold."],
            }
        ],
        "faithfulness",
        judge=small,
        escalate=[big, "review"],
        agreement=0.9,
        store=store,
        progress=False,
    )
    run_id = result.run_id
    score = result.results[0].scores["faithfulness"]
    assert score.unscored_reason == UnscoredReason.NEEDS_REVIEW and [p.subject for p in score.pending] == [
        "delta rule holds."
    ]
    gate = CliRunner().invoke(app, ["gate", run_id, "--store", str(store), "--max-unscored", "1"])
    assert "1 question waits for review in 1 result" in " ".join(gate.output.split()), gate.output
    labels = tmp_path / "labels.jsonl"
    said = CliRunner().invoke(app, ["review", run_id, "--store", str(store), "--labels-out", str(labels)], input="n\n")
    assert said.exit_code == 0, said.output
    assert "judge small leaned supported (confidence 0.50, needed 0.60)" in said.output
    assert "judge big leaned supported (confidence 0.550, needed 0.551)" in said.output
    with RunStore(store) as runs:
        stored = next(runs.records(run_id))["scores"]["faithfulness"]
        summary = runs.summary(run_id).to_json()["faithfulness"]
    assert stored["unscored_reason"] is None and "pending" not in stored
    deciders = {v["subject"]: v["decision"]["by"] for v in stored["verdicts"]}
    assert deciders == {
        "alpha rule holds.": "small",
        "gamma rule holds.": "small",
        "beta rule holds.": "big",
        "delta rule holds.": "person",
    }
    # the metric's share: alpha and beta supported, gamma and (by the person) delta not
    assert stored["value"] == pytest.approx(0.5) and summary["n_scored"] == 1 and summary["unscored_by_reason"] == {}
    items, errors = read_items(labels)
    assert errors == [] and [(i.kind, i.claim, i.label) for i in items] == [("grounding", "delta rule holds.", 0)]
