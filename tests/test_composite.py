"""Composite metrics: typed sub-metrics, orchestration, aggregation and every failure path."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from assay import Faithfulness, Sample, UnscoredReason, Verdict, evaluate
from assay._scores import Binary
from assay.errors import ConfigError, JudgeError
from assay.grounding._decompose import STATEMENTS_PROMPT, AnswerToSplit
from assay.metrics import score_safely
from assay.metrics._composite import (
    Aggregate,
    CompositeMetric,
    CompositeRun,
    Outputs,
    SubMetric,
    SubMetricFailed,
)
from assay.metrics._faithfulness import STATEMENT_PROMPT, StatementCheck
from assay.models import ChatMessage, FunctionJudge, JudgeRequest, ScriptedJudge
from assay.prompts import Example
from evaluate_kept import evaluate_kept

SAMPLE = Sample(
    id="s1",
    question="What is the capital of France?",
    answer="Paris is the capital of France. It has 20 million inhabitants.",
    contexts=("Paris is the capital and largest city of France, with 2.1 million residents.",),
)


class Topic(BaseModel):
    answer: str


class IsOnTopic(BaseModel):
    reason: str
    verdict: Binary


class Tone(BaseModel):
    tone: str


ON_TOPIC: SubMetric[Topic, IsOnTopic] = SubMetric.define(
    "demo.on_topic",
    instruction="Decide whether the answer stays on topic.",
    input_model=Topic,
    output_model=IsOnTopic,
    question="Is the answer in <answer> on topic?",
    examples=[(Topic(answer="Paris."), IsOnTopic(reason="answers it", verdict=1))],
    from_sample=lambda s: Topic(answer=s.answer or ""),
    required_fields=("answer",),
)
TONE: SubMetric[Topic, Tone] = SubMetric.define(
    "demo.tone",
    instruction="Name the tone of the answer in one word.",
    input_model=Topic,
    output_model=Tone,
    question="What is the tone of <answer>?",
    from_sample=lambda s: Topic(answer=s.answer or ""),
    required_fields=("answer", "question"),
    version="3",
)


def on_topic_and_calm(out: Outputs) -> Aggregate:
    topic = out.get(ON_TOPIC)
    tone = out.get(TONE)
    value = topic.verdict * (1.0 if tone.tone == "calm" else 0.5)
    return Aggregate(
        value, verdicts=[Verdict(subject="on topic", value=topic.verdict, reason=topic.reason)], explanation=tone.tone
    )


DEMO = CompositeMetric("demo", sub_metrics=(ON_TOPIC, TONE), aggregate=on_topic_and_calm)


def topic(verdict: object, reason: str = "r") -> str:
    return json.dumps({"reason": reason, "verdict": verdict})


# --- the faithfulness mapping from the module docstring ------------------------------------

STATEMENTS = SubMetric(
    STATEMENTS_PROMPT,
    from_sample=lambda s: AnswerToSplit(question=s.question or "", answer=s.answer or ""),
    required_fields=("answer",),
)
VERDICT = SubMetric(STATEMENT_PROMPT, required_fields=("contexts",))


async def plan(sample: Sample, run: CompositeRun) -> None:
    split = await run.run(STATEMENTS)
    await run.run_each(VERDICT, [StatementCheck(context=list(sample.contexts), statement=s) for s in split.statements])


def faithfulness_aggregate(out: Outputs) -> Aggregate:
    checked = zip(out.get(STATEMENTS).statements, out.each(VERDICT), strict=True)
    verdicts = [Verdict(subject=s, value=v.verdict, reason=v.reason) for s, v in checked]
    if not verdicts:
        return Aggregate.unscored(UnscoredReason.NO_STATEMENTS, "the answer states nothing to check")
    supported = sum(v.value == 1 for v in verdicts)
    return Aggregate(supported / len(verdicts), verdicts=verdicts, explanation=f"{supported} supported")


FAITHFULNESS = CompositeMetric(
    "faithfulness_composite",
    sub_metrics=(STATEMENTS, VERDICT),
    aggregate=faithfulness_aggregate,
    orchestrate=plan,
)
STATEMENTS_JSON = json.dumps({"statements": ["Paris is the capital of France.", "Paris has 20 million inhabitants."]})


def verdict(value: object, reason: str = "r") -> str:
    return json.dumps({"verdict": value, "reason": reason})


# --- SubMetric ------------------------------------------------------------------------------


async def test_sub_metric_renders_asks_with_schema_and_returns_typed_output() -> None:
    judge = ScriptedJudge([topic(1, "it answers the question")])
    result = await ON_TOPIC.run(SAMPLE, judge)
    assert result.ok and result.failure is None
    assert isinstance(result.output, IsOnTopic)
    assert result.output.verdict == 1 and result.output.reason == "it answers the question"
    assert [c.purpose for c in result.calls] == ["demo.on_topic"]
    request = judge.requests[0]
    assert request.schema is IsOnTopic
    assert "Example 1:" in request.messages[0]["content"]
    assert f"<answer>\n{SAMPLE.answer}\n</answer>" in request.messages[1]["content"]


async def test_sub_metric_runs_on_its_input_model_directly() -> None:
    judge = ScriptedJudge([topic(0)])
    result = await ON_TOPIC.run(Topic(answer="Bananas."), judge)
    assert result.output is not None and result.output.verdict == 0
    assert "Bananas." in judge.requests[0].messages[1]["content"]


async def test_sub_metric_rejects_wrong_sources() -> None:
    with pytest.raises(TypeError, match="no from_sample"):
        await VERDICT.run(SAMPLE, ScriptedJudge([]))
    with pytest.raises(TypeError, match="runs on a Sample or a Topic"):
        await ON_TOPIC.run(Tone(tone="x"), ScriptedJudge([]))  # type: ignore[arg-type]


def test_define_checks_example_types() -> None:
    wrong: Any = Example(Topic(answer="a"), Tone(tone="calm"))
    with pytest.raises(TypeError, match="example output"):
        SubMetric.define(
            "bad",
            instruction="i",
            input_model=Topic,
            output_model=IsOnTopic,
            question="q",
            examples=[wrong],
        )


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("I'm sorry, I cannot help with that.", UnscoredReason.REFUSAL),
        ('{"reason": "cut', UnscoredReason.TRUNCATED_OUTPUT),
        (topic(2), UnscoredReason.PARSE_FAILURE),
        ("", UnscoredReason.EMPTY_OUTPUT),
        (JudgeError("timeout"), UnscoredReason.JUDGE_ERROR),
    ],
)
async def test_sub_metric_failure_has_reason_and_keeps_the_call(bad: object, reason: UnscoredReason) -> None:
    result = await ON_TOPIC.run(SAMPLE, ScriptedJudge([bad]))  # type: ignore[list-item]
    assert not result.ok and result.output is None
    assert result.failure is not None and result.failure.reason is reason
    assert len(result.calls) == 1


# --- default orchestration ------------------------------------------------------------------


def test_independent_sub_metrics_run_in_order_and_aggregate() -> None:
    judge = ScriptedJudge([topic(1, "on topic"), json.dumps({"tone": "calm"})])
    s = evaluate([SAMPLE], [DEMO], judge).results[0].scores["demo"]
    assert s.value == 1.0
    assert s.explanation == "calm"
    assert [(v.subject, v.value, v.reason) for v in s.verdicts] == [("on topic", 1, "on topic")]
    assert [c.purpose for c in s.calls] == ["demo.on_topic", "demo.tone"]
    assert [r.schema for r in judge.requests] == [IsOnTopic, Tone]


def test_independent_sub_metrics_run_concurrently_on_a_concurrent_judge() -> None:
    def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        return topic(1) if request.schema is IsOnTopic else json.dumps({"tone": "angry"})

    judge = FunctionJudge(answer)
    s = evaluate([SAMPLE], [DEMO], judge).results[0].scores["demo"]
    assert s.value == 0.5
    assert [c.purpose for c in s.calls] == ["demo.on_topic", "demo.tone"], "calls are recorded in declared order"


def test_a_failing_sub_metric_makes_the_score_unscored_with_its_name_and_all_calls() -> None:
    judge = ScriptedJudge([topic(1), "Sorry, I can't describe the tone."])
    s = evaluate([SAMPLE], [DEMO], judge).results[0].scores["demo"]
    assert s.unscored_reason is UnscoredReason.REFUSAL
    assert math.isnan(s.value)
    assert "'demo.tone'" in (s.detail or "")
    assert len(s.calls) == 2


def test_sequential_run_stops_at_the_first_failure() -> None:
    judge = ScriptedJudge([JudgeError("HTTP 500")])
    s = evaluate_kept([SAMPLE], [DEMO], judge).results[0].scores["demo"]
    assert s.unscored_reason is UnscoredReason.JUDGE_ERROR
    assert "'demo.on_topic'" in (s.detail or "")
    assert len(judge.requests) == 1
    assert "HTTP 500" in (s.calls[0].error or "")


def test_concurrent_run_reports_the_first_failure_in_declared_order_and_keeps_every_call() -> None:
    def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        return topic("maybe") if request.schema is IsOnTopic else "no json here"

    s = evaluate([SAMPLE], [DEMO], FunctionJudge(answer)).results[0].scores["demo"]
    assert s.unscored_reason is UnscoredReason.PARSE_FAILURE
    assert "'demo.on_topic'" in (s.detail or "")
    assert len(s.calls) == 2


def test_required_fields_are_the_union_of_the_sub_metrics_and_checked_first() -> None:
    assert DEMO.required_fields == ("answer", "question")
    judge = ScriptedJudge([])
    s = asyncio.run(score_safely(DEMO, Sample(id="x", answer="a"), judge))
    assert s.unscored_reason is UnscoredReason.MISSING_FIELD
    assert judge.requests == []
    explicit = CompositeMetric("d2", sub_metrics=(ON_TOPIC,), aggregate=lambda o: 1.0, required=("reference",))
    assert explicit.required_fields == ("reference",)


def test_spec_names_every_sub_metric_prompt_version_and_params() -> None:
    metric = CompositeMetric("demo", sub_metrics=(ON_TOPIC, TONE), aggregate=on_topic_and_calm, params={"calm": 1.0})
    spec = metric.spec()
    assert spec.name == "demo" and spec.version == "1"
    assert spec.params["prompts"] == {"demo.on_topic": "1", "demo.tone": "3"}
    assert spec.params["params"]["calm"] == 1.0


def test_configuration_mistakes_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unique"):
        CompositeMetric("d", sub_metrics=(ON_TOPIC, ON_TOPIC), aggregate=lambda o: 1.0)
    with pytest.raises(ConfigError, match="at least one"):
        CompositeMetric("d", sub_metrics=(), aggregate=lambda o: 1.0)
    with pytest.raises(ConfigError, match="from_sample"):
        CompositeMetric("d", sub_metrics=(VERDICT,), aggregate=lambda o: 1.0)


# --- orchestrated: faithfulness as a composite ----------------------------------------------


def test_faithfulness_as_a_composite_matches_the_built_in_metric() -> None:
    script = [STATEMENTS_JSON, verdict(1, "stated"), verdict(0, "2.1 million")]
    composite = evaluate([SAMPLE], [FAITHFULNESS], ScriptedJudge(script)).results[0].scores["faithfulness_composite"]
    # the composite writes the whole-answer decomposition: the built-in with decomposer="llm"
    whole_answer = Faithfulness(decomposer="llm")
    built_in = evaluate([SAMPLE], [whole_answer], ScriptedJudge(script)).results[0].scores["faithfulness"]
    assert composite.value == built_in.value == 0.5
    assert [(v.subject, v.value, v.reason) for v in composite.verdicts] == [
        (v.subject, v.value, v.reason) for v in built_in.verdicts
    ]
    assert [c.purpose for c in composite.calls] == [c.purpose for c in built_in.calls]
    assert [c.messages for c in composite.calls] == [c.messages for c in built_in.calls], "same prompts"
    assert FAITHFULNESS.required_fields == ("answer", "contexts")
    assert FAITHFULNESS.spec().params["prompts"] == {
        "faithfulness.statements": "1",
        "faithfulness.verdict": STATEMENT_PROMPT.version,
    }


def test_per_item_failure_names_the_item_and_keeps_earlier_calls() -> None:
    judge = ScriptedJudge([STATEMENTS_JSON, verdict(1), verdict(7)])
    s = evaluate([SAMPLE], [FAITHFULNESS], judge).results[0].scores["faithfulness_composite"]
    assert s.unscored_reason is UnscoredReason.PARSE_FAILURE
    assert "'faithfulness.verdict'" in (s.detail or "") and "item 2" in (s.detail or "")
    assert len(s.calls) == 3


def test_per_item_runs_concurrently_keep_input_order() -> None:
    def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        user = messages[-1]["content"]
        if "<statement>" not in user:
            return STATEMENTS_JSON
        return verdict(1 if "capital" in user.split("<statement>")[1] else 0, "r")

    s = evaluate([SAMPLE], [FAITHFULNESS], FunctionJudge(answer)).results[0].scores["faithfulness_composite"]
    assert s.value == 0.5
    assert [v.value for v in s.verdicts] == [1, 0]


def test_extraction_failure_stops_before_any_verdict_call() -> None:
    judge = ScriptedJudge(['{"statements": ["a", '])
    s = evaluate([SAMPLE], [FAITHFULNESS], judge).results[0].scores["faithfulness_composite"]
    assert s.unscored_reason is UnscoredReason.TRUNCATED_OUTPUT
    assert "'faithfulness.statements'" in (s.detail or "")
    assert len(judge.requests) == 1


def test_aggregate_can_leave_the_score_unscored() -> None:
    s = evaluate([SAMPLE], [FAITHFULNESS], ScriptedJudge([json.dumps({"statements": []})])).results[0]
    assert s.scores["faithfulness_composite"].unscored_reason is UnscoredReason.NO_STATEMENTS
    assert len(s.scores["faithfulness_composite"].calls) == 1


def test_an_orchestrator_that_swallows_a_failure_still_yields_unscored() -> None:
    async def stubborn(sample: Sample, run: CompositeRun) -> None:
        with contextlib.suppress(SubMetricFailed):
            await run.run(ON_TOPIC)

    metric = CompositeMetric("d", sub_metrics=(ON_TOPIC,), aggregate=lambda o: 1.0, orchestrate=stubborn)
    s = evaluate([SAMPLE], [metric], ScriptedJudge(["I cannot answer that."])).results[0].scores["d"]
    assert s.unscored_reason is UnscoredReason.REFUSAL


@pytest.mark.parametrize(
    ("aggregate", "match"),
    [
        (lambda o: math.nan, "aggregate returned nan"),
        (lambda o: 1 / 0, "aggregate: ZeroDivisionError"),
        (lambda o: o.each(ON_TOPIC), "aggregate: TypeError: .* use get"),
    ],
)
def test_aggregate_bugs_are_metric_errors_that_keep_the_calls(aggregate: object, match: str) -> None:
    metric = CompositeMetric("d", sub_metrics=(ON_TOPIC,), aggregate=aggregate)  # type: ignore[arg-type]
    s = evaluate([SAMPLE], [metric], ScriptedJudge([topic(1)])).results[0].scores["d"]
    assert s.unscored_reason is UnscoredReason.METRIC_ERROR
    assert len(s.calls) == 1
    assert re.search(match, s.detail or ""), s.detail


def test_running_an_undeclared_sub_metric_is_a_metric_error() -> None:
    async def sneaky(sample: Sample, run: CompositeRun) -> None:
        await run.run(TONE)

    metric = CompositeMetric("d", sub_metrics=(ON_TOPIC,), aggregate=lambda o: 1.0, orchestrate=sneaky)
    s = evaluate([SAMPLE], [metric], ScriptedJudge([])).results[0].scores["d"]
    assert s.unscored_reason is UnscoredReason.METRIC_ERROR
    assert "not declared" in (s.detail or "")


def test_composite_over_several_samples_summarises() -> None:
    def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        user = messages[-1]["content"]
        if request.schema is Tone:
            return json.dumps({"tone": "calm"})
        return topic(0) if "bananas" in user else ("I'm sorry, I can't." if "refuse" in user else topic(1))

    samples = [
        SAMPLE.model_copy(update={"id": "a"}),
        SAMPLE.model_copy(update={"id": "b", "answer": "bananas"}),
        SAMPLE.model_copy(update={"id": "c", "answer": "please refuse"}),
    ]
    summary = evaluate(samples, [DEMO], FunctionJudge(answer)).summary()["demo"]
    assert summary.mean == 0.5 and summary.n_scored == 2
    assert dict(summary.unscored_by_reason) == {"refusal": 1}
