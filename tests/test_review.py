"""``assay review``: people answer the questions no judge was sure of; the scores follow, and the answers become labels.

The runs here are written through the store API with the scores a cascade leaves (unscored
``needs_review``, the undecided questions in ``Score.pending``), so the review layer is
tested on its own record.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, Sample
from assay._scores import Decision, EvidenceRef, PendingVerdict, Score, UnscoredReason, Verdict
from assay.cli import app
from assay.metrics import BinaryJudgeGrader
from assay.report import write_report
from assay.run import RunSpec, RunStore, SampleResult
from assay.run._calibrate import read_items
from assay.run._review import ANSWERS_FORMAT, pending_questions

RUN = "20261206-040000-abcd"
CRITERIA = "The answer is polite."
HOSTILE = 'The grass is red.\x1b[2J [red]really[/red] <img src=x onerror="window.__xss=1">'
"""A statement holding a terminal escape, rich markup and HTML: untrusted text, shown escaped."""


def _judge(value: int | str, confidence: float, threshold: float, level: int = 0) -> Decision:
    del value
    return Decision(by="local", level=level, confidence=confidence, threshold=threshold)


def _faithfulness_pending(spec: Any) -> Score:
    kept = Verdict(
        subject="The sky is blue.",
        value=1,
        reason="the context says so",
        decision=Decision(by="local", confidence=0.97, threshold=0.9, guaranteed=True),
    )
    evidence = (EvidenceRef(context=0, start=0, end=16, text="The sky is blue."),)
    pending = (
        PendingVerdict(
            subject=HOSTILE,
            evidence=evidence,
            tried=(Verdict(subject=HOSTILE, value=1, decision=_judge(1, 0.62, 0.9)),),
        ),
        PendingVerdict(
            subject="The sea is green.",
            tried=(
                Verdict(subject="The sea is green.", value=0, decision=_judge(0, 0.55, 0.8)),
                Verdict(subject="The sea is green.", value=0, decision=_judge(0, 0.85, 0.851, level=1)),
            ),
        ),
    )
    score = Score.unscored(
        "faithfulness", UnscoredReason.NEEDS_REVIEW, "2 questions wait for review", verdicts=[kept], spec=spec
    )
    return score.model_copy(update={"pending": pending})


def _grader_pending(spec: Any) -> Score:
    pending = PendingVerdict(
        subject=CRITERIA, tried=(Verdict(subject=CRITERIA, value="PASS", decision=_judge("PASS", 0.58, 0.9)),)
    )
    score = Score.unscored("polite", UnscoredReason.NEEDS_REVIEW, "1 question waits for review", spec=spec)
    return score.model_copy(update={"pending": (pending,)})


def make_run(store_path: Path, run_id: str = RUN) -> None:
    """Three samples: one with two pending statements, one decided, one grader question pending."""
    faith = Faithfulness().spec()
    grader = BinaryJudgeGrader(criteria=CRITERIA, name="polite").spec()
    s1 = Sample(
        id="s1",
        question="Colours?",
        answer="The sky is blue. The grass is red. The sea is green.",
        contexts=("The sky is blue. The grass is green.",),
    )
    s2 = Sample(id="s2", question="Sky?", answer="The sky is blue.", contexts=("The sky is blue.",))
    decided = Score.scored(
        "faithfulness",
        1.0,
        verdicts=[Verdict(subject="The sky is blue.", value=1, decision=Decision(by="local", confidence=0.99))],
        spec=faith,
    )
    grader_done = Score.scored(
        "polite", 0.0, verdicts=[Verdict(subject=CRITERIA, value="FAIL", reason="rude")], spec=grader
    )
    with RunStore(store_path) as store:
        store.create(RunSpec(run_id=run_id, judge="local", judge_model="local", metrics=(faith, grader)))
        store.record(run_id, SampleResult(s1, {"faithfulness": _faithfulness_pending(faith), "polite": grader_done}, 1))
        store.record(run_id, SampleResult(s2, {"faithfulness": decided, "polite": _grader_pending(grader)}, 2))
        store.set_status(run_id, "finished")


def review(*args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(app, ["review", *args], input=input, env={"COLUMNS": "250"})


def stored(store_path: Path, run_id: str = RUN) -> list[dict[str, Any]]:
    with RunStore(store_path) as store:
        return list(store.records(run_id))


def people(records: list[dict[str, Any]]) -> list[tuple[int, str, str, object]]:
    """(line, metric, subject, value) of every verdict a person decided."""
    return [
        (r["line"], m, v["subject"], v["value"])
        for r in records
        for m, s in r["scores"].items()
        for v in s.get("verdicts", ())
        if (v.get("decision") or {}).get("kind") == "person"
    ]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / ".assay" / "runs.sqlite"
    make_run(path)
    return path


def test_review_answers_change_the_scores_and_are_recorded_as_a_persons(store_path: Path, tmp_path: Path) -> None:
    with RunStore(store_path) as store:
        before = store.summary(RUN).to_json()
    assert before["faithfulness"]["unscored_by_reason"] == {"needs_review": 1}
    labels = tmp_path / "labels.jsonl"
    result = review(RUN, "--store", str(store_path), "--labels-out", str(labels), input="n\ns\ny\ns\n")
    assert result.exit_code == 0, result.output
    out = result.output
    # what a person is shown: the statement, its evidence, what each judge leaned to and how sure it was
    assert "question 1 of 3" in out and "question 3 of 3" in out
    assert "evidence (context 1) The sky is blue." in out
    assert "local leaned supported (confidence 0.62, needed 0.90)" in out
    assert "local leaned not supported (confidence 0.850, needed 0.851)" in out  # never "0.85, needed 0.85"
    assert "\x1b" not in out and "\\x1b[2J [red]really[/red]" in out  # untrusted text escaped, markup shown as text
    assert "answer s, n, k or q" in out  # "y" is not an answer: asked again
    assert f"does the answer meet the criterion? {CRITERIA}" in out and "local leaned pass (confidence 0.58" in out
    records = stored(store_path)
    assert people(records) == [
        (1, "faithfulness", HOSTILE, 0),
        (1, "faithfulness", "The sea is green.", 1),
        (2, "polite", CRITERIA, "PASS"),
    ]
    first = records[0]["scores"]["faithfulness"]
    assert first["unscored_reason"] is None and "pending" not in first
    # the metric's own aggregation: 2 of 3 statements supported, explained as faithfulness explains it
    assert first["value"] == pytest.approx(2 / 3)
    assert first["explanation"].startswith("2 of 3 statements supported by the contexts; unsupported: ")
    person = next(v for v in first["verdicts"] if v["subject"] == HOSTILE)
    assert person["decision"] == {
        "by": "person",
        "kind": "person",
        "level": 1,
        "confidence": None,
        "threshold": None,
        "guaranteed": False,
    }
    assert person["evidence"][0]["text"] == "The sky is blue."
    assert records[1]["scores"]["polite"]["value"] == 1.0
    with RunStore(store_path) as store:
        after = store.summary(RUN).to_json()
    assert after["faithfulness"]["unscored_by_reason"] == {} and after["faithfulness"]["n_scored"] == 2
    assert after["faithfulness"]["mean"] == pytest.approx((2 / 3 + 1.0) / 2)
    assert after["polite"]["mean"] == pytest.approx(0.5)
    assert "line 1 faithfulness: no question left, scored 0.667 by the metric" in out
    # the answers are labelled items assay calibrate reads
    items, errors = read_items(labels)
    assert errors == []
    assert [(i.kind, i.label, i.source) for i in items] == [
        ("grounding", 0, "assay review"),
        ("grounding", 1, "assay review"),
        ("grader", 1, "assay review"),
    ]
    assert items[0].claim == HOSTILE and items[0].contexts == ("The sky is blue. The grass is green.",)
    assert items[2].criteria == CRITERIA and items[2].completion == "The sky is blue." and items[2].question == "Sky?"
    assert f"'assay calibrate {labels}" in " ".join(out.split())


def test_runs_show_says_how_many_questions_wait(store_path: Path) -> None:
    shown = CliRunner().invoke(app, ["runs", "show", RUN, "--store", str(store_path)], env={"COLUMNS": "250"})
    assert f"3 questions wait for review (needs_review: in no mean until a person answers): 'assay review {RUN}'" in (
        " ".join(shown.output.split())
    )
    review(RUN, "--store", str(store_path), input="s\ns\ns\n")
    shown = CliRunner().invoke(app, ["runs", "show", RUN, "--store", str(store_path)])
    assert "wait for review" not in shown.output


def test_review_shows_a_persons_verdict_as_a_persons_in_runs_show(store_path: Path) -> None:
    review(RUN, "--store", str(store_path), input="n\ns\ns\n")
    shown = CliRunner().invoke(app, ["runs", "show", RUN, "--store", str(store_path), "--sample", "s1"])
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.output.splitlines() if "The sea is green." in line]
    assert lines and all("decided by a person" in line for line in lines)
    judged = [line for line in shown.output.splitlines() if "The sky is blue. (" in line]
    assert judged and not any("decided by a person" in line for line in judged)


def test_quitting_keeps_every_answer_given_and_the_next_review_asks_the_rest(store_path: Path) -> None:
    result = review(RUN, "--store", str(store_path), input="s\nq\n")
    assert result.exit_code == 0, result.output
    assert "1 answer saved · 2 questions still waiting" in result.output
    with RunStore(store_path) as store:
        left = pending_questions(store, RUN)
    assert [q.subject for q in left] == ["The sea is green.", CRITERIA]
    first = stored(store_path)[0]["scores"]["faithfulness"]
    assert first["unscored_reason"] == "needs_review" and math.isnan(first["value"] or math.nan)
    assert first["detail"] == "1 question waits for review ('assay review')"
    # skipping leaves a question as it was; end of input is a quit
    again = review(RUN, "--store", str(store_path), input="k\n")
    assert again.exit_code == 0, again.output
    assert "question 1 of 2" in again.output and "0 answers saved · 2 questions still waiting" in again.output


def test_a_run_with_nothing_pending_says_so_and_exits_0(store_path: Path) -> None:
    review(RUN, "--store", str(store_path), input="s\ns\ns\n")
    result = review(RUN, "--store", str(store_path))
    assert result.exit_code == 0, result.output
    assert f"run {RUN}: no question waits for review" in result.output


def test_an_unknown_run_is_an_error(store_path: Path) -> None:
    result = review("nope", "--store", str(store_path))
    assert result.exit_code == 1
    assert "no run 'nope'" in result.output


def answers_file(path: Path, entries: list[dict[str, Any]], run_id: str = RUN) -> Path:
    path.write_text(json.dumps({"format": ANSWERS_FORMAT, "version": 1, "run_id": run_id, "answers": entries}))
    return path


GOOD = [
    {"line": 1, "repeat": 0, "metric": "faithfulness", "subject": HOSTILE, "answer": "not_supported"},
    {"line": 1, "repeat": 0, "metric": "faithfulness", "subject": "The sea is green.", "answer": "supported"},
    {"line": 2, "repeat": 0, "metric": "polite", "subject": CRITERIA, "answer": "supported"},
]


def test_an_imported_answers_file_changes_the_run_as_the_terminal_does(tmp_path: Path, store_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    make_run(other)
    review(RUN, "--store", str(other), input="n\ns\ns\n")
    result = review(RUN, "--store", str(store_path), "--import", str(answers_file(tmp_path / "a.json", GOOD)))
    assert result.exit_code == 0, result.output
    assert "imported 3 answers" in result.output and "0 questions still waiting" in result.output
    imported, typed = stored(store_path), stored(other)
    assert people(imported) == people(typed)
    for a, b in zip(imported, typed, strict=True):
        for name in a["scores"]:
            assert a["scores"][name]["value"] == b["scores"][name]["value"]
            assert a["scores"][name]["unscored_reason"] == b["scores"][name]["unscored_reason"]
    # the default labels file, beside the store
    items, errors = read_items(store_path.parent / "labels" / f"{RUN}.jsonl")
    assert errors == [] and len(items) == 3
    # importing the same file again changes nothing and says so
    again = review(RUN, "--store", str(store_path), "--import", str(tmp_path / "a.json"))
    assert again.exit_code == 0 and "(3 already recorded)" in again.output and "imported 0 answers" in again.output


@pytest.mark.parametrize(
    ("entries", "run_id", "said"),
    [
        (
            [GOOD[0], {**GOOD[1], "subject": "The moon is cheese."}],
            RUN,
            "answers[1]: no question 'The moon is cheese.'",
        ),
        ([GOOD[0], {**GOOD[1], "answer": "maybe"}], RUN, "answers[1]: 'answer' must be 'supported' or 'not_supported'"),
        ([GOOD[0], {**GOOD[2], "line": 9}], RUN, "answers[1]: run 20261206-040000-abcd has no sample on line 9"),
        ([GOOD[0], GOOD[1], {**GOOD[0], "answer": "supported"}], RUN, "answers[2]: the same question as"),
        ([GOOD[0], {**GOOD[2], "metric": "tone"}], RUN, "answers[1]: line 2 has no score of metric 'tone'"),
        ([GOOD[0], {**GOOD[1], "line": "1"}], RUN, "answers[1]: 'line' and 'repeat' must be whole numbers"),
        (GOOD, "20261206-000000-ffff", "the answers are for run '20261206-000000-ffff'"),
    ],
)
def test_a_bad_answers_file_is_refused_naming_the_entry_and_nothing_is_applied(
    tmp_path: Path, store_path: Path, entries: list[dict[str, Any]], run_id: str, said: str
) -> None:
    before = stored(store_path)
    result = review(
        RUN, "--store", str(store_path), "--import", str(answers_file(tmp_path / "a.json", entries, run_id))
    )
    assert result.exit_code == 1
    assert said in " ".join(result.output.split())
    assert stored(store_path) == before


def test_an_answer_that_contradicts_a_persons_earlier_one_is_refused(tmp_path: Path, store_path: Path) -> None:
    review(RUN, "--store", str(store_path), input="n\nq\n")
    before = stored(store_path)
    flipped = {**GOOD[0], "answer": "supported"}
    result = review(
        RUN, "--store", str(store_path), "--import", str(answers_file(tmp_path / "a.json", [GOOD[1], flipped]))
    )
    assert result.exit_code == 1
    assert "answers[1]" in result.output and "already answered 0 by a person" in " ".join(result.output.split())
    assert stored(store_path) == before


def test_a_gate_on_a_run_with_questions_pending_says_so(store_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["gate", RUN, "--store", str(store_path), "--metric", "faithfulness", "--max-unscored", "1"],
        env={"COLUMNS": "250"},
    )
    text = " ".join(result.output.split())
    assert "2 questions wait for review in 1 result" in text, result.output
    assert f"'assay review {RUN}'" in text
    review(RUN, "--store", str(store_path), input="s\ns\ns\n")
    after = CliRunner().invoke(app, ["gate", RUN, "--store", str(store_path), "--metric", "faithfulness"])
    assert "wait for review" not in after.output


def test_the_report_lists_pending_questions_and_marks_a_persons_verdicts(tmp_path: Path, store_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", RUN, "--store", str(store_path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "3 questions wait for review" in " ".join(result.output.split())
    assert 'id="review-list"' in out.read_text()
    review(RUN, "--store", str(store_path), input="n\ns\ns\n")
    result = CliRunner().invoke(app, ["report", RUN, "--store", str(store_path), "--out", str(out)])
    assert "wait for review" not in result.output and 'id="review-list"' not in out.read_text()
    with RunStore(store_path) as store:
        data = write_report(store, RUN, tmp_path / "again.html")
    marked = [
        (v["subject"], v["by_person"])
        for s in data.samples
        for rep in s["repeats"]
        for e in rep["scores"]
        for v in e["verdicts"]
    ]
    assert (HOSTILE, True) in marked and ("The sky is blue.", False) in marked and (CRITERIA, True) in marked


def test_a_score_without_its_spec_is_computed_by_the_runs_metric_and_an_unreviewable_metric_is_refused(
    tmp_path: Path,
) -> None:
    from assay.metrics import ContextPrecision
    from assay.run._review import Answer, ReviewError, apply_answers

    faith, precision = Faithfulness().spec(), ContextPrecision().spec()
    sample = Sample(id="a", question="Q?", answer="The sky is blue.", contexts=("The sky is blue.",))
    pending = (PendingVerdict(subject="The sky is blue."),)
    bare = Score.unscored("faithfulness", UnscoredReason.NEEDS_REVIEW).model_copy(update={"pending": pending})
    odd = Score.unscored("context_precision", UnscoredReason.NEEDS_REVIEW, spec=precision).model_copy(
        update={"pending": (PendingVerdict(subject="passage 1"),)}
    )
    with RunStore(tmp_path / "runs.sqlite") as store:
        store.create(RunSpec(run_id=RUN, judge="local", judge_model="local", metrics=(faith, precision)))
        store.record(RUN, SampleResult(sample, {"faithfulness": bare, "context_precision": odd}, 1))
        before = list(store.records(RUN))
        with pytest.raises(ReviewError, match=r"answers\[1\]: metric 'context_precision' does not compute its value"):
            apply_answers(
                store,
                RUN,
                [
                    Answer(1, 0, "faithfulness", "The sky is blue.", True, "answers[0]"),
                    Answer(1, 0, "context_precision", "passage 1", True, "answers[1]"),
                ],
            )
        assert list(store.records(RUN)) == before
        outcome = apply_answers(store, RUN, [Answer(1, 0, "faithfulness", "The sky is blue.", False)])
        assert outcome.rescored == ((1, 0, "faithfulness", 0.0),) and outcome.pending == 1


def test_the_gates_job_summary_says_how_many_questions_wait(tmp_path: Path, store_path: Path) -> None:
    summary = tmp_path / "summary.md"
    CliRunner().invoke(
        app,
        ["gate", RUN, "--store", str(store_path), "--metric", "faithfulness", "--summary-md", str(summary)],
    )
    text = summary.read_text()
    assert "**2 questions wait for review** in 1 result" in text
    assert "answer them with assay review 20261206\\-040000\\-abcd" in text


def test_latest_reviews_the_run_written_last_and_a_run_id_is_needed_otherwise(tmp_path: Path, store_path: Path) -> None:
    make_run(store_path, "20261206-050000-ffff")  # written last
    result = review("--latest", "--store", str(store_path), input="q\n")
    assert result.exit_code == 0 and "question 1 of 3" in result.output
    assert "'assay review 20261206-050000-ffff' continues" in result.output
    assert review("--store", str(store_path)).exit_code == 1
    both = review(RUN, "--latest", "--store", str(store_path))
    assert both.exit_code == 1 and "give a RUN_ID or --latest, not both" in both.output


def test_the_run_browser_says_which_runs_have_questions_waiting(tmp_path: Path, store_path: Path) -> None:
    out = tmp_path / "site"
    assert CliRunner().invoke(app, ["browse", "--store", str(store_path), "--out", str(out)]).exit_code == 0
    index = (out / "index.html").read_text()
    assert f'href="runs/{RUN}.html#review">3 waiting for review</a>' in index
    review(RUN, "--store", str(store_path), input="s\ns\ns\n")
    assert CliRunner().invoke(app, ["browse", "--store", str(store_path), "--out", str(out)]).exit_code == 0
    assert "waiting for review" not in (out / "index.html").read_text()


def test_a_question_waiting_in_several_repeats_is_asked_once_settled_in_each_and_labelled_once(
    tmp_path: Path,
) -> None:
    faith = Faithfulness().spec()
    sample = Sample(id="r", question="Colours?", answer="The grass is red.", contexts=("The grass is green.",))
    pending = (PendingVerdict(subject="The grass is red."),)
    waiting = Score.unscored("faithfulness", UnscoredReason.NEEDS_REVIEW, spec=faith).model_copy(
        update={"pending": pending}
    )
    decided = Score.scored(
        "faithfulness", 0.0, verdicts=[Verdict(subject="The grass is red.", value=0)], spec=faith
    )  # a judge was sure in repeat 1
    store_path = tmp_path / "runs.sqlite"
    with RunStore(store_path) as store:
        store.create(RunSpec(run_id=RUN, judge="local", judge_model="local", metrics=(faith,)))
        for repeat, score in enumerate((waiting, decided, waiting)):
            store.record(RUN, SampleResult(sample, {"faithfulness": score}, 1, repeat), repeat=repeat)
    with RunStore(store_path) as store:
        pages = write_report(store, RUN, tmp_path / "r.html").pending
    assert [(q["subject"], q["repeats"]) for q in pages] == [("The grass is red.", [0, 2])]
    labels = tmp_path / "labels.jsonl"
    said = review(RUN, "--store", str(store_path), "--labels-out", str(labels), input="n\n")
    assert said.exit_code == 0, said.output
    assert "question 1 of 1" in said.output and "waits in repeats 0, 2 (one answer for all)" in said.output
    values = [r["scores"]["faithfulness"]["value"] for r in stored(store_path)]
    assert values == [0.0, 0.0, 0.0]
    assert [(line, subject, value) for line, _, subject, value in people(stored(store_path))] == [
        (1, "The grass is red.", 0),
        (1, "The grass is red.", 0),
    ]
    items, errors = read_items(labels)
    assert errors == [] and [(i.claim, i.label) for i in items] == [("The grass is red.", 0)]
