"""Holistic agent goal accuracy (version 1, kept to reproduce old runs) and the trace formatter, on scripted judges."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from assay import Message, Sample, Score, ToolCall, UnscoredReason
from assay.errors import ConfigError, JudgeError
from assay.metrics._holistic import GOAL_PROMPT, OUTCOME_PROMPT, HolisticGoalAccuracy
from assay.metrics._trace import TraceFormatter
from assay.models import ScriptedJudge

TRACE = (
    Message(role="system", content="You are an airline agent. Follow the policy."),
    Message(role="user", content="Cancel my reservation ABC123, please."),
    Message(
        role="assistant",
        content=None,
        tool_calls=(ToolCall(name="get_reservation", arguments={"id": "ABC123"}, id="c1"),),
    ),
    Message(role="tool", name="get_reservation", tool_call_id="c1", content='{"id": "ABC123", "status": "active"}'),
    Message(
        role="assistant",
        content="Cancelling it now.",
        tool_calls=(ToolCall(name="cancel_reservation", arguments={"id": "ABC123", "reason": "user"}, id="c2"),),
    ),
    Message(role="tool", name="cancel_reservation", tool_call_id="c2", content='{"status": "cancelled"}'),
    Message(role="assistant", content="Your reservation ABC123 is cancelled."),
)

EXPECTED_TEXT = """\
[2] USER: Cancel my reservation ABC123, please.

[3] ASSISTANT CALLS get_reservation({"id": "ABC123"})

[4] TOOL RESULT get_reservation: {"id": "ABC123", "status": "active"}

[5] ASSISTANT: Cancelling it now.
[5] ASSISTANT CALLS cancel_reservation({"id": "ABC123", "reason": "user"})

[6] TOOL RESULT cancel_reservation: {"status": "cancelled"}

[7] ASSISTANT: Your reservation ABC123 is cancelled."""

SAMPLE = Sample(id="a1", trace=TRACE, reference="Cancel reservation ABC123.")
INFERRED = json.dumps({"user_goal": "Cancel reservation ABC123.", "end_state": "Reservation ABC123 was cancelled."})


def verdict(value: object, reason: str = "r") -> str:
    return json.dumps({"verdict": value, "reason": reason})


def run(metric: HolisticGoalAccuracy, script: list[object], sample: Sample = SAMPLE) -> tuple[Score, ScriptedJudge]:
    judge = ScriptedJudge(script)  # type: ignore[arg-type]
    score = asyncio.run(metric.score(sample, judge))
    assert judge.remaining == 0, "the metric made fewer calls than scripted"
    return score, judge


# --- the trace formatter ----------------------------------------------------------------


def test_formatter_output_is_stable_for_a_fixed_trace() -> None:
    assert TraceFormatter().format(TRACE) == EXPECTED_TEXT


def test_formatter_keeps_the_system_prompt_when_asked() -> None:
    text = TraceFormatter(include_system=True).format(TRACE)
    assert text == "[1] SYSTEM: You are an airline agent. Follow the policy.\n\n" + EXPECTED_TEXT


def test_formatter_caps_each_tool_result_keeping_start_and_end() -> None:
    long_result = "S" * 60 + "M" * 100 + "E" * 40
    trace = (Message(role="tool", name="search", content=long_result),)
    text = TraceFormatter(max_tool_result_chars=80).format(trace)
    assert text == "[1] TOOL RESULT search: " + "S" * 60 + " … [truncated 120 characters] … " + "E" * 20


def test_budget_elides_the_middle_and_keeps_head_and_tail() -> None:
    trace = tuple(
        Message(role="user" if i % 2 else "assistant", content=f"turn {i:02d} " + "x" * 80) for i in range(40)
    )
    formatter = TraceFormatter(max_chars=1200, head_share=0.5)
    full = "\n\n".join(formatter.blocks(trace))
    text = formatter.format(trace)
    assert len(full) > 1200 >= len(text)
    assert text.startswith("[1] ASSISTANT: turn 00 ")
    assert text.endswith("[40] USER: turn 39 " + "x" * 80)
    assert "messages and" in text and "omitted to fit the budget" in text
    head, _, tail = text.partition("\n\n[… ")
    kept = head.count("turn ") + tail.count("turn ")
    n_omitted = int(tail.split(" messages")[0])
    assert kept + n_omitted == 40
    # Whole messages only, on both sides of the marker.
    assert all(block.startswith("[") for block in text.split("\n\n"))


def test_budget_cuts_an_oversized_first_message_visibly() -> None:
    trace = (Message(role="user", content="G" * 5000), Message(role="assistant", content="done"))
    text = TraceFormatter(max_chars=600).format(trace)
    assert len(text) <= 600
    assert text.startswith("[1] USER: GGG") and text.endswith("[2] ASSISTANT: done")
    assert "omitted to fit the budget" in text


def test_short_trace_is_not_elided() -> None:
    assert "omitted" not in TraceFormatter(max_chars=5000).format(TRACE)


def test_formatter_rejects_nonsense_options() -> None:
    with pytest.raises(ConfigError):
        TraceFormatter(head_share=1.0)
    with pytest.raises(ConfigError):
        TraceFormatter(max_chars=10)


# --- agent goal accuracy ----------------------------------------------------------------


def test_with_reference_compares_end_state_with_the_reference() -> None:
    score, judge = run(HolisticGoalAccuracy(reference=True), [INFERRED, verdict(1, "the reservation is cancelled")])
    assert score.metric == "agent_goal_accuracy_holistic_with_reference"
    assert score.value == 1.0
    assert [(v.subject, v.value, v.reason) for v in score.verdicts] == [
        ("Cancel reservation ABC123.", 1, "the reservation is cancelled")
    ]
    assert [c.purpose for c in score.calls] == [GOAL_PROMPT.name, OUTCOME_PROMPT.name]
    assert "Reservation ABC123 was cancelled." in (score.explanation or "")
    assert "inferred user goal: Cancel reservation ABC123." in (score.explanation or "")
    assert "reference goal" in (score.explanation or "")
    # The goal call sees the formatted trace; the verdict call sees only the goal and end state.
    assert EXPECTED_TEXT in judge.requests[0].messages[1]["content"]
    second = judge.requests[1].messages[1]["content"]
    assert "<goal>\nCancel reservation ABC123.\n</goal>" in second
    assert second.index("<goal>") < second.index("<end_state>")
    assert "ASSISTANT CALLS" not in second


def test_without_reference_compares_with_the_inferred_goal() -> None:
    inferred = json.dumps({"user_goal": "Get a refund.", "end_state": "The reservation was cancelled."})
    score, judge = run(HolisticGoalAccuracy(reference=False), [inferred, verdict(0, "no refund was issued")])
    assert score.metric == "agent_goal_accuracy_holistic_without_reference"
    assert score.value == 0.0
    assert score.verdicts[0].subject == "Get a refund."
    assert score.failing == score.verdicts
    assert "<goal>\nGet a refund.\n</goal>" in judge.requests[1].messages[1]["content"]


@pytest.mark.parametrize(
    ("reference", "goal"), [("Cancel reservation ABC123.", "Cancel reservation ABC123."), (None, "X")]
)
def test_auto_mode_uses_the_reference_only_when_present(reference: str | None, goal: str) -> None:
    inferred = json.dumps({"user_goal": "X", "end_state": "Y"})
    sample = SAMPLE.model_copy(update={"reference": reference})
    score, _ = run(HolisticGoalAccuracy(), [inferred, verdict(1)], sample)
    assert score.metric == "agent_goal_accuracy_holistic"
    assert score.verdicts[0].subject == goal


def test_spec_carries_the_formatter_version_and_prompt_versions() -> None:
    metric = HolisticGoalAccuracy(reference=True, formatter=TraceFormatter(max_chars=9000, include_system=True))
    spec = metric.spec()
    assert spec.name == "agent_goal_accuracy_holistic_with_reference"
    assert spec.params["formatter"] == {
        "version": "1",
        "include_system": True,
        "max_tool_result_chars": 1500,
        "max_chars": 9000,
        "head_share": 0.4,
    }
    assert spec.params["prompts"] == {"agent_goal.infer": "1", "agent_goal.verdict": "1"}
    assert spec.params["reference"] is True


def test_required_fields_follow_the_reference_mode() -> None:
    assert HolisticGoalAccuracy(reference=True).required_fields == ("trace", "reference")
    assert HolisticGoalAccuracy(reference=False).required_fields == ("trace",)
    assert HolisticGoalAccuracy().required_fields == ("trace",)


def test_missing_reference_is_unscored_without_calls() -> None:
    score, _ = run(HolisticGoalAccuracy(reference=True), [], SAMPLE.model_copy(update={"reference": None}))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD
    assert math.isnan(score.value)


@pytest.mark.parametrize("trace", [(), (Message(role="system", content="policy"),)])
def test_missing_trace_is_unscored(trace: tuple[Message, ...]) -> None:
    score, _ = run(HolisticGoalAccuracy(), [], SAMPLE.model_copy(update={"trace": trace}))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("I'm sorry, I cannot help with that.", UnscoredReason.REFUSAL),
        ('{"user_goal": "x"}', UnscoredReason.PARSE_FAILURE),
        ("", UnscoredReason.EMPTY_OUTPUT),
        (JudgeError("model crashed"), UnscoredReason.JUDGE_ERROR),
    ],
)
def test_goal_inference_failure_is_unscored_with_its_reason(bad: object, reason: UnscoredReason) -> None:
    score, _ = run(HolisticGoalAccuracy(), [bad])
    assert score.unscored_reason is reason
    assert (score.detail or "").startswith("goal inference:")
    assert len(score.calls) == 1


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (verdict(2), UnscoredReason.PARSE_FAILURE),
        (verdict(True), UnscoredReason.PARSE_FAILURE),
        ("I cannot determine this.", UnscoredReason.REFUSAL),
        (JudgeError("timeout"), UnscoredReason.JUDGE_ERROR),
    ],
)
def test_verdict_failure_keeps_both_calls_and_the_inferred_state(bad: object, reason: UnscoredReason) -> None:
    score, _ = run(HolisticGoalAccuracy(), [INFERRED, bad])
    assert score.unscored_reason is reason
    assert len(score.calls) == 2
    assert "Reservation ABC123 was cancelled." in (score.detail or "")
