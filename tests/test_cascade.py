"""The cascade (issue 66): thresholds from stored calibrations, routing by confidence, review, summary.

Two judges with known confidences (:class:`~assay.models.ProbabilityJudge`) are calibrated
on one labelled file by ``assay calibrate``'s own path; the plan is chosen on those stored
calibrations, and a run routes exactly the verdicts below a level's threshold to the next.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from assay import Faithfulness, Sample, UnscoredReason
from assay.errors import ConfigError
from assay.metrics import ContextPrecision
from assay.metrics._escalate import Escalation, JudgeLevel, settle
from assay.models import FunctionJudge, ProbabilityJudge
from assay.run import RunStore
from assay.run._calibrate import calibrate
from assay.run._cascade import cascade_lines, plan_escalation
from assay.run._trust import GUARANTEE_REACH

# Labelled items: 40 the small judge is sure of and right on (P 0.97, supported), 40 it is sure
# of and right on (P 0.03, unsupported), 120 it wavers on (P 0.6, half of them unsupported);
# the big judge is right and sure on 80 of those (P 0.98 / 0.02) and wavers (0.55, half wrong)
# on the other 40 and on everything else.
SURE_YES = [f"item {i} is fine." for i in range(40)]
SURE_NO = [f"item {i} is broken." for i in range(40, 80)]
WAVER = [f"item {i} is odd." for i in range(80, 200)]
LABEL = {**dict.fromkeys(SURE_YES, 1), **dict.fromkeys(SURE_NO, 0)}
LABEL.update({s: i % 2 for i, s in enumerate(WAVER)})


def small_p(statement: str, context: str) -> float:
    if statement in LABEL:
        return 0.97 if statement in SURE_YES else 0.03 if statement in SURE_NO else 0.6
    return SMALL_RUN[statement]


def big_p(statement: str, context: str) -> float:
    if statement in WAVER[:80]:
        return 0.98 if LABEL[statement] == 1 else 0.02
    if statement in LABEL:
        return 0.55
    return BIG_RUN[statement]


# What the run asks about (statements never seen in calibration): known P at each level.
SMALL_RUN = {"alpha rule holds.": 0.99, "beta rule holds.": 0.59, "gamma rule holds.": 0.01, "delta rule holds.": 0.5}
BIG_RUN = {"alpha rule holds.": 0.5, "beta rule holds.": 0.99, "gamma rule holds.": 0.5, "delta rule holds.": 0.55}


def _labels(path: Path, statements: list[str]) -> Path:
    rows = [
        {"id": f"x{i}", "context": f"The record for {s.split(' is ')[0]} says it is fine, broken or odd.", "claim": s}
        | {"label": LABEL[s]}
        for i, s in enumerate(statements)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both judges calibrated on one file (the store is shared by the tests: none writes to it)."""
    tmp_path = tmp_path_factory.mktemp("cascade")
    store = tmp_path / "runs.sqlite"
    labels = _labels(tmp_path / "labels.jsonl", SURE_YES + SURE_NO + WAVER)
    for judge in (ProbabilityJudge(small_p, name="small"), ProbabilityJudge(big_p, name="big")):
        calibrate(labels, judge, store=store, progress=False)
    return store


def _judges() -> list[tuple[str, ProbabilityJudge]]:
    return [("small", ProbabilityJudge(small_p, name="small")), ("big", ProbabilityJudge(big_p, name="big"))]


def test_the_plan_rests_on_both_calibrations_and_the_guarantee_line_names_its_labels(calibrated: Path) -> None:
    metric = Faithfulness()
    with RunStore(calibrated) as store:
        planned = plan_escalation(store, metric, _judges(), review=True, agreement=0.9, delta=0.1)
        runs = [r.run_id for r in store.runs()]
    record = planned.record
    assert record["labels"] == 200 and record["dataset"].endswith("labels.jsonl")
    small, big = record["levels"]
    assert {small["calibration"], big["calibration"]} <= set(runs) and small["calibration"] != big["calibration"]
    # small keeps its sure sides; its 0.6 verdicts (half wrong) stay below its "supported" threshold
    assert small["sides"]["1"]["threshold"] > 0.6 and small["sides"]["0"]["threshold"] is not None
    # big is calibrated only on what small left: the 120 waverers
    assert big["sides"]["1"]["labels"] + big["sides"]["0"]["labels"] == 120
    assert record["left"] == 40
    text = "\n".join(planned.lines())
    assert "200 labels of" in text and small["calibration"] in text and big["calibration"] in text


def test_a_cascade_routes_exactly_the_verdicts_below_threshold(calibrated: Path) -> None:
    metric = Faithfulness()
    with RunStore(calibrated) as store:
        planned = plan_escalation(store, metric, _judges(), review=True, agreement=0.9, delta=0.1)
    small, big = ProbabilityJudge(small_p, name="small"), ProbabilityJudge(big_p, name="big")
    escalation = planned.escalation([small, big])
    t1 = planned.record["levels"][0]["sides"]["1"]["threshold"]
    t0 = planned.record["levels"][0]["sides"]["0"]["threshold"]
    sample = Sample(
        id="s1",
        answer="alpha rule holds. beta rule holds. gamma rule holds. delta rule holds.",
        contexts=["alpha, beta, gamma and delta all hold."],
    )
    score = asyncio.run(metric.score_escalating(sample, escalation))
    # small: alpha 0.99 (kept as 1), gamma 0.01 (kept as 0: confidence 0.99), beta 0.59 and delta 0.5 below
    expected_small = {s for s, p in SMALL_RUN.items() if (p >= 0.5 and p >= t1) or (p < 0.5 and 1 - p >= t0)}
    assert expected_small == {"alpha rule holds.", "gamma rule holds."}
    assert small.asked == list(SMALL_RUN)
    assert big.asked == ["beta rule holds.", "delta rule holds."], "only what small was unsure of reaches big"
    decided = {v.subject: v.decision for v in score.verdicts}
    assert {s for s, d in decided.items() if d is not None and d.level == 0} == expected_small
    assert decided["beta rule holds."] is not None and decided["beta rule holds."].by == "big"
    assert all(d is not None and d.guaranteed and d.threshold is not None for d in decided.values())
    # delta: big's 0.55 is below its threshold too, so it waits for a person, never a guessed value
    assert score.unscored_reason == UnscoredReason.NEEDS_REVIEW
    (wait,) = score.pending
    assert wait.subject == "delta rule holds."
    assert [(t.decision.by, round(t.decision.confidence or 0, 2)) for t in wait.tried if t.decision] == [
        ("small", 0.5),
        ("big", 0.55),
    ]
    lines = cascade_lines(planned.record, [score])
    assert lines[0] == "decided: small 2 (50%), big 1 (25%), review 1 (25%) of 4 questions"
    assert "on the 3 verdicts kept, resting on 200 labels" in lines[1]
    assert lines[1].endswith("(for items like those: it does not carry to other sources)"), lines[1]
    assert "left for review: 1" in "\n".join(lines)
    assert "2 reached big, 2 fewer than sending all 4 to it" in lines[-1]
    from assay.run._cost import PriceTable

    big_usd = sum(c.usage.prompt_tokens + c.usage.completion_tokens for c in score.calls if c.model == "big") / 1e6
    priced = cascade_lines(planned.record, [score], PriceTable({"small": (0.0, 0.0), "big": (1.0, 1.0)}))
    assert priced[-1] == (
        f"cost: ${big_usd:.4f}; about ${big_usd / 2 * 4:.4f} sending all 4 to big (${big_usd / 2:.5f} a question there)"
    )
    assert cascade_lines(planned.record, [score], PriceTable({"small": (0.0, 0.0)}))[-1].startswith("calls:"), (
        "an unpriced judge: no cost line, never $0"
    )


def test_without_review_the_last_judge_decides_the_rest_outside_the_guarantee() -> None:
    small = ProbabilityJudge(small_p, name="small")
    api = FunctionJudge(lambda messages, request: '{"reason": "said so", "verdict": 1}', name="api")
    escalation = Escalation((JudgeLevel(small, {1: 0.9, 0: 0.9}, "small"), JudgeLevel(api, None, "api")))
    sample = Sample(id="s", answer="alpha rule holds. beta rule holds.", contexts=["alpha and beta hold."])
    score = asyncio.run(Faithfulness(decomposer="sentences").score_escalating(sample, escalation))
    assert score.value == 1.0
    beta = next(v for v in score.verdicts if v.subject == "beta rule holds.")
    assert beta.decision is not None and beta.decision.by == "api" and beta.decision.guaranteed is False
    assert len(api.requests) == 1, "only beta (P 0.7 < 0.9) went to the API judge"
    assert "outside the guarantee: 1 verdicts decided by api" in "\n".join(
        cascade_lines({"levels": [{"judge": "small"}, {"judge": "api"}], "review": False}, [score])
    )


def test_a_judge_without_probabilities_is_refused_as_a_middle_level_or_before_review() -> None:
    api = FunctionJudge(lambda messages, request: "{}", name="api")
    small = ProbabilityJudge(small_p, name="small")
    with pytest.raises(ConfigError, match="middle level"):
        Escalation((JudgeLevel(api, None, "api"), JudgeLevel(small, {1: 0.9}, "small")))
    with pytest.raises(ConfigError, match="before review"):
        Escalation((JudgeLevel(small, {1: 0.9}, "small"), JudgeLevel(api, None, "api")), review=True)


def test_a_target_the_labels_cannot_support_is_refused_with_the_reason(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    labels = _labels(tmp_path / "few.jsonl", SURE_YES[:20] + SURE_NO[:10])  # 20 and 10 labels per side
    calibrate(labels, ProbabilityJudge(small_p, name="small"), store=store, progress=False)
    with RunStore(store) as run_store, pytest.raises(ConfigError) as refused:
        plan_escalation(
            run_store, Faithfulness(), [("small", ProbabilityJudge(small_p, name="small"))], review=True, agreement=0.9
        )
    text = str(refused.value)
    assert "cannot support --agreement 0.9" in text
    assert "20 labelled verdicts of value 1: at least 29" in text, "the side's own reason"
    assert "calibrate run" in text and "few.jsonl" in text
    assert "more labels" in text and "a lower --agreement (0.85 is the highest these labels support)" in text


def test_a_level_without_a_calibration_at_these_settings_is_refused(calibrated: Path) -> None:
    with RunStore(calibrated) as store:
        with pytest.raises(ConfigError, match="no calibration of faithfulness by other"):
            plan_escalation(
                store, Faithfulness(), [("other", ProbabilityJudge(small_p, name="other"))], review=True, agreement=0.9
            )
        # the small judge was calibrated at the verifier's defaults: another threshold is other settings
        changed = Faithfulness(verifier=Faithfulness().verifier.__class__(threshold=0.7))
        with pytest.raises(ConfigError, match="measured other settings"):
            plan_escalation(store, changed, _judges()[:1], review=True, agreement=0.9)


def test_a_metric_that_cannot_escalate_is_refused_by_name(calibrated: Path) -> None:
    from assay.grounding import StatementVerifier

    with RunStore(calibrated) as store:
        with pytest.raises(ConfigError, match="context_precision cannot escalate"):
            plan_escalation(store, ContextPrecision(), _judges(), review=True, agreement=0.9)
        with pytest.raises(ConfigError, match="strategy=batch"):
            plan_escalation(store, Faithfulness(strategy="batch"), _judges(), review=True, agreement=0.9)
        with pytest.raises(ConfigError, match="method=generate reads no probability"):
            generated = Faithfulness(verifier=StatementVerifier(method="generate"))
            plan_escalation(store, generated, _judges(), review=True, agreement=0.9)


def test_settle_keeps_at_the_threshold_and_passes_on_below_it() -> None:
    from assay._scores import Verdict

    small = ProbabilityJudge(small_p, name="small")
    escalation = Escalation((JudgeLevel(small, {1: 0.8, 0: None}, "small"),), review=True)
    at = Verdict(subject="a", value=1, reason="", details={"p_judge": 0.8})
    below = Verdict(subject="b", value=1, reason="", details={"p_judge": 0.7999})
    no_side = Verdict(subject="c", value=0, reason="", details={"p_judge": 0.0})
    assert settle(at, 0, escalation).kept is not None
    assert settle(below, 0, escalation).tried is not None
    assert settle(no_side, 0, escalation).tried is not None, "a value with no threshold always escalates"


GRADES = {"a fine reply": 0.95, "a so-so reply": 0.6, "a bad reply": 0.02}


def _grader_judge(name: str, table: dict[str, float]) -> ProbabilityJudge:
    def p_pass(conversation: str, _: str) -> float:
        return next(p for text, p in table.items() if text in conversation)

    def grade(messages: object, request: object) -> str:
        p = p_pass(str(messages), "")
        return json.dumps({"reasoning": "as it reads", "label": "PASS" if p >= 0.5 else "FAIL"})

    return ProbabilityJudge(p_pass, name=name, fn=grade)


def test_the_binary_grader_escalates_on_its_pass_probability() -> None:
    from assay.metrics import BinaryJudgeGrader

    grader = BinaryJudgeGrader("The reply is polite.")
    small = _grader_judge("small", GRADES)
    big = _grader_judge("big", {"a fine reply": 0.5, "a so-so reply": 0.97, "a bad reply": 0.5})
    escalation = Escalation(
        (JudgeLevel(small, {1: 0.9, 0: 0.9}, "small"), JudgeLevel(big, {1: 0.9, 0: 0.9}, "big")), review=True
    )
    scores = {
        text: asyncio.run(grader.score_escalating(Sample(id=text, question="hi", answer=text), escalation))
        for text in GRADES
    }
    fine, soso, bad = (scores[t] for t in GRADES)
    assert fine.value == 1.0 and fine.verdicts[0].decision is not None and fine.verdicts[0].decision.by == "small"
    assert bad.value == 0.0 and bad.verdicts[0].decision is not None
    assert bad.verdicts[0].decision.confidence == pytest.approx(0.98)
    assert soso.value == 1.0 and soso.verdicts[0].decision is not None and soso.verdicts[0].decision.by == "big"
    assert sum("so-so" in asked for asked in big.asked) == 1 and len(big.asked) == 1, "only so-so reached big"
    p_calls = [c for c in soso.calls if c.purpose.endswith("p_pass")]
    assert len(p_calls) == 2, "each level's P(PASS) call is recorded"
    # review last and big unsure too: needs_review, never a guessed grade
    unsure = _grader_judge("big", dict.fromkeys(GRADES, 0.6))
    escalation = Escalation(
        (JudgeLevel(small, {1: 0.9, 0: 0.9}, "small"), JudgeLevel(unsure, {1: 0.9, 0: 0.9}, "big")), review=True
    )
    waiting = asyncio.run(grader.score_escalating(Sample(id="s", question="hi", answer="a so-so reply"), escalation))
    assert waiting.unscored_reason == UnscoredReason.NEEDS_REVIEW
    assert [t.decision.by for t in waiting.pending[0].tried if t.decision] == ["small", "big"]


def test_a_grader_calibration_stores_pass_probability_for_a_cascade(tmp_path: Path) -> None:
    rows = [
        {"id": f"g{i}", "criteria": "The reply is polite.", "question": "hi", "completion": text, "label": label}
        for i, (text, label) in enumerate(
            [("a fine reply", "PASS"), ("a bad reply", "FAIL"), ("a so-so reply", "FAIL")]
        )
    ]
    labels = tmp_path / "grades.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = calibrate(labels, _grader_judge("small", GRADES), store=tmp_path / "runs.sqlite", progress=False)
    assert [o.probability for o in result.outcomes] == pytest.approx([0.95, 0.02, 0.6])


RUN_SAMPLES = [
    {
        "id": "s1",
        "answer": "alpha rule holds. beta rule holds. gamma rule holds. delta rule holds.",
        "contexts": ["alpha to delta hold."],
    },
    {"id": "s2", "answer": "alpha rule holds. beta rule holds.", "contexts": ["alpha and beta hold."]},
]


def test_evaluate_runs_the_cascade_and_stores_its_plan(calibrated: Path) -> None:
    from assay import evaluate

    small, big = ProbabilityJudge(small_p, name="small"), ProbabilityJudge(big_p, name="big")
    result = evaluate(
        RUN_SAMPLES,
        "faithfulness",
        judge=small,
        escalate=[big, "review"],
        agreement=0.9,
        store=calibrated,
        progress=False,
    )
    s1, s2 = (r.scores["faithfulness"] for r in result.results)
    assert s1.unscored_reason == UnscoredReason.NEEDS_REVIEW and [p.subject for p in s1.pending] == [
        "delta rule holds."
    ]
    assert s2.value == 1.0 and [v.decision.by for v in s2.verdicts if v.decision] == ["small", "big"]
    assert big.asked == ["beta rule holds.", "delta rule holds.", "beta rule holds."], "big judged only what small left"
    with RunStore(calibrated) as store:
        spec = store.spec(result.run_id)
    plan = spec.options["cascade"]["faithfulness"]
    assert plan["labels"] == 200 and plan["alpha"] == pytest.approx(0.1) and plan["delta"] == 0.1
    assert [lv["judge"] for lv in plan["levels"]] == ["small", "big"] and plan["review"] is True
    assert result.trust["faithfulness"].kind == "cascade", "never one judge's trust line for a cascade"
    assert GUARANTEE_REACH in result.trust["faithfulness"].text()  # its reach, said where it is read
    assert (
        "resting on 200 labels" in result.trust["faithfulness"].text()
        or "200 labels" in result.trust["faithfulness"].text()
    )
    lines = "\n".join(result.cascade_lines("faithfulness"))
    assert "decided: small 3 (50%), big 2 (33%), review 1 (17%) of 6 questions" in lines
    assert "on the 5 verdicts kept, resting on 200 labels" in lines and "left for review: 1" in lines


def test_resume_with_other_escalation_or_targets_is_refused(calibrated: Path) -> None:
    from assay import evaluate
    from assay.run import ResumeError

    def run(**options: object) -> object:
        small, big = ProbabilityJudge(small_p, name="small"), ProbabilityJudge(big_p, name="big")
        levels = options.pop("escalate", [big, "review"])
        return evaluate(
            RUN_SAMPLES[:1], "faithfulness", judge=small, escalate=levels, store=calibrated, progress=False, **options
        )

    first = run(agreement=0.9)
    run_id = first.run_id  # type: ignore[attr-defined]
    with pytest.raises(ResumeError, match="cascade"):
        run(agreement=0.8, resume=run_id)
    with pytest.raises(ResumeError, match="cascade"):
        run(agreement=0.9, escalate=["review"], resume=run_id)
    with pytest.raises(ResumeError, match="cascade"):
        run(agreement=None, escalate=[], resume=run_id)
    assert run(agreement=0.9, resume=run_id).run_id == run_id  # type: ignore[attr-defined]


def test_a_cascade_run_refuses_before_any_call(calibrated: Path) -> None:
    from assay import evaluate

    small = ProbabilityJudge(small_p, name="small")
    asked = [s | {"question": "What holds?", "reference": "alpha rule holds."} for s in RUN_SAMPLES]
    with pytest.raises(ConfigError, match="context_precision cannot escalate"):
        evaluate(
            asked,
            ["faithfulness", "context_precision"],
            judge=small,
            escalate=["review"],
            agreement=0.9,
            store=calibrated,
            progress=False,
        )
    with pytest.raises(ConfigError, match="--agreement"):
        evaluate(RUN_SAMPLES, "faithfulness", judge=small, escalate=["review"], store=calibrated, progress=False)
    with pytest.raises(ConfigError, match=r"cannot support --agreement 0\.99"):
        evaluate(
            RUN_SAMPLES,
            "faithfulness",
            judge=small,
            escalate=["review"],
            agreement=0.99,
            store=calibrated,
            progress=False,
        )
    assert small.asked == [] and small.requests == []


def test_the_cli_refuses_an_api_judge_before_review_and_runs_show_prints_the_cascade(calibrated: Path) -> None:
    from typer.testing import CliRunner

    from assay import evaluate
    from assay.cli import app
    from assay.testing import FakeOpenAIServer

    data = calibrated.parent / "data.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in RUN_SAMPLES), encoding="utf-8")
    with FakeOpenAIServer() as server:
        said = CliRunner().invoke(
            app,
            [
                *("run", str(data), "--metric", "faithfulness", "--judge", "openai:fake-word-overlap"),
                *("--base-url", server.base_url, "--escalate", "review", "--agreement", "0.9"),
                *("--store", str(calibrated)),
            ],
            env={"COLUMNS": "200", "OPENAI_API_KEY": "sk-test"},
        )
    assert said.exit_code != 0 and "gives no probability" in said.output and "before review" in said.output
    assert server.requests == [], "refused before any judge call"
    small, big = ProbabilityJudge(small_p, name="small"), ProbabilityJudge(big_p, name="big")
    run = evaluate(
        RUN_SAMPLES,
        "faithfulness",
        judge=small,
        escalate=[big, "review"],
        agreement=0.9,
        store=calibrated,
        progress=False,
    )
    shown = CliRunner().invoke(
        app, ["runs", "show", str(run.run_id), "--store", str(calibrated)], env={"COLUMNS": "200"}
    )
    assert shown.exit_code == 0, shown.output
    assert "faithfulness cascade" in shown.output and "resting on 200 labels" in shown.output
    assert "left for review: 1" in shown.output


def test_a_cascade_runs_report_shows_its_guarantee_not_the_first_judges_figure(calibrated: Path) -> None:
    from assay import evaluate
    from assay.report import build_report

    small, big = ProbabilityJudge(small_p, name="small"), ProbabilityJudge(big_p, name="big")
    run = evaluate(
        RUN_SAMPLES,
        "faithfulness",
        judge=small,
        escalate=[big, "review"],
        agreement=0.9,
        store=calibrated,
        progress=False,
    )
    with RunStore(calibrated) as store:
        assert run.run_id is not None
        report = build_report(store.info(run.run_id), list(store.records(run.run_id)))  # trust from the spec alone
    (view,) = report.metrics
    assert view.trust is not None and view.trust.kind == "cascade"
    assert "agreement with people >= 90%" in view.trust.text() and "200 labels" in view.trust.text()
    assert "decided: small 3 (50%), big 2 (33%), review 1 (17%) of 6 questions" in view.trust.text()
    assert "left for review: 1" in view.trust.text()
