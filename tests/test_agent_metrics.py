"""Agent goal accuracy (requirements against the end state) and agent state match, on test judges."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import assay
from assay import Message, Sample, Score, ToolCall, UnscoredReason
from assay.metrics import AgentGoalAccuracy, AgentStateMatch, ArgumentMatch, StateChanges, build_metric
from assay.metrics._agent import REQUIREMENT_PROMPT, REQUIREMENTS_PROMPT, USER_REQUIREMENTS_PROMPT, render_actions
from assay.metrics._endstate import read_end_state
from assay.models import ChatMessage, FunctionJudge, JudgeRequest, ScriptedJudge


def call(name: str, id: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=id)


POLICY = "Basic economy reservations cannot be cancelled without insurance."
TRACE = (
    Message(role="system", content=POLICY),
    Message(role="user", content="Please cancel reservation ABC and book me on HAT1 on May 20."),
    Message(role="assistant", tool_calls=(call("get_reservation_details", "a", reservation_id="ABC"),)),
    Message(role="tool", tool_call_id="a", content='{"cabin": "economy", "insurance": "yes"}'),
    Message(role="assistant", tool_calls=(call("cancel_reservation", "b", reservation_id="ABC"),)),
    Message(role="tool", tool_call_id="b", content='{"status": "cancelled"}'),
    Message(role="assistant", tool_calls=(call("book_reservation", "c", flight="HAT1", date="2024-05-20"),)),
    Message(role="tool", tool_call_id="c", content="Error: not enough seats on flight HAT1"),
    Message(role="user", content="Actually, do not rebook, just the cancellation."),
    Message(role="assistant", content="ABC is cancelled; the refund goes to your card."),
)
GOAL = "You are mia_3. You want to cancel reservation ABC. You do not want a new booking. You are polite."
SAMPLE = Sample(id="s", trace=TRACE, reference=GOAL)


def requirements(*items: str) -> str:
    return json.dumps({"requirements": list(items)})


def verdict(value: str, calls: Sequence[int] = (), reason: str = "because") -> str:
    return json.dumps({"verdict": value, "calls": list(calls), "reason": reason})


def run(metric: AgentGoalAccuracy, script: list[object], sample: Sample = SAMPLE) -> tuple[Score, ScriptedJudge]:
    judge = ScriptedJudge(script)
    score = asyncio.run(metric.score(sample, judge))
    assert judge.remaining == 0
    return score, judge


def test_every_requirement_met_scores_one_and_the_record_holds_everything() -> None:
    score, judge = run(
        AgentGoalAccuracy(reference=True),
        [
            requirements("Cancel reservation ABC", "Do not book a new reservation"),
            verdict("met", [2], "call 2 cancelled ABC"),
            verdict("met", [3], "the only booking attempt failed"),
        ],
    )
    assert score.metric == "agent_goal_accuracy_with_reference"
    assert score.value == 1.0
    assert [(v.subject, v.value, v.reason) for v in score.verdicts] == [
        ("Cancel reservation ABC", 1, "call 2 cancelled ABC"),
        ("Do not book a new reservation", 1, "the only booking attempt failed"),
    ]
    assert score.verdicts[0].details == {
        "calls": [2],
        "cited": ['call 2: cancel_reservation({"reservation_id": "ABC"})'],
    }
    assert score.verdicts[1].flags == ("rests_on_failed_calls",)  # marked, not overridden
    details = score.details or {}
    assert details["requirements_from"] == "reference goal"
    assert details["fraction_met"] == 1.0
    assert [(c["call"], c["tool"], c["outcome"]) for c in details["end_state"]["state_changes"]] == [
        (2, "cancel_reservation", "succeeded"),
        (3, "book_reservation", "failed"),
    ]
    assert details["requirements"][0] == {
        "requirement": "Cancel reservation ABC",
        "verdict": 1,
        "reason": "call 2 cancelled ABC",
        "calls": [2],
    }
    # One extraction call, then one call per requirement.
    assert [r.messages[0]["content"] == REQUIREMENTS_PROMPT.system_text() for r in judge.requests] == [
        True,
        False,
        False,
    ]
    assert len(score.calls) == 3
    assert "2 of 2 requirements met (reference goal)" in (score.explanation or "")


def test_the_requirement_judge_sees_the_policy_the_numbered_calls_and_the_reply_with_the_requirement_last() -> None:
    _, judge = run(
        AgentGoalAccuracy(reference=True),
        [requirements("Cancel reservation ABC", "Tell the user where the refund goes"), verdict("met"), verdict("met")],
    )
    first, second = (r.messages for r in judge.requests[1:])
    assert first[0]["content"] == REQUIREMENT_PROMPT.system_text()
    user = first[1]["content"]
    assert user.index("<policy>") < user.index("<calls>") < user.index("<final_reply>") < user.index("<requirement>")
    assert POLICY in user
    assert "[call 2] CHANGE, succeeded: cancel_reservation" in user
    assert "[call 3] CHANGE FAILED: book_reservation" in user
    assert "result: Error: not enough seats on flight HAT1" in user
    assert "the refund goes to your card" in user
    # The two prompts differ only in the requirement, at the end: llama.cpp reuses the prefix.
    prefix = user[: user.index("<requirement>")]
    assert second[1]["content"].startswith(prefix)
    assert GOAL not in user  # the goal reaches the judge only through the requirements


def test_one_requirement_not_met_scores_zero_whatever_the_others_say() -> None:
    score, _ = run(
        AgentGoalAccuracy(reference=True),
        [
            requirements("Cancel reservation ABC", "Book HAT1 on May 20", "Tell the user the refund amount"),
            verdict("met", [2]),
            verdict("not met", [3], "the booking failed"),
            verdict("cannot tell", [], "no amount in the reply"),
        ],
    )
    assert score.value == 0.0 and score.is_scored
    assert [v.value for v in score.verdicts] == [1, 0, "NA"]
    assert (score.details or {})["fraction_met"] == pytest.approx(1 / 3)
    assert "not met: Book HAT1 on May 20" in (score.explanation or "")


def test_an_undecidable_requirement_leaves_the_score_unscored_with_the_reason() -> None:
    score, _ = run(
        AgentGoalAccuracy(reference=True),
        [requirements("Cancel reservation ABC", "Pick the cheapest flight"), verdict("met", [2]),
         verdict("cannot tell", [], "no prices shown")],
    )  # fmt: skip
    assert score.unscored_reason is UnscoredReason.UNDECIDED
    assert "Pick the cheapest flight (no prices shown)" in (score.detail or "")
    assert [v.value for v in score.verdicts] == [1, "NA"]
    assert (score.details or {})["end_state"]["state_changes"]


def test_without_reference_the_requirements_come_from_the_users_turns_only() -> None:
    score, judge = run(
        AgentGoalAccuracy(reference=False),
        [requirements("Cancel reservation ABC"), verdict("met", [2])],
    )
    assert score.metric == "agent_goal_accuracy_without_reference"
    extraction = judge.requests[0].messages
    assert extraction[0]["content"] == USER_REQUIREMENTS_PROMPT.system_text()
    text = extraction[1]["content"]
    assert "[2] Please cancel reservation ABC and book me on HAT1 on May 20." in text
    assert "[9] Actually, do not rebook, just the cancellation." in text
    assert "refund goes to your card" not in text  # never the agent's words
    assert GOAL not in text
    assert (score.details or {})["requirements_from"] == "user turns"


def test_reference_none_uses_the_reference_when_there_is_one() -> None:
    score, judge = run(AgentGoalAccuracy(), [requirements("Cancel ABC"), verdict("met", [2])])
    assert score.metric == "agent_goal_accuracy"
    assert judge.requests[0].messages[0]["content"] == REQUIREMENTS_PROMPT.system_text()
    no_reference = SAMPLE.model_copy(update={"reference": None})
    _, judge = run(AgentGoalAccuracy(), [requirements("Cancel ABC"), verdict("met", [2])], no_reference)
    assert judge.requests[0].messages[0]["content"] == USER_REQUIREMENTS_PROMPT.system_text()


def test_policy_checks_ask_once_per_performed_change_with_the_same_evidence() -> None:
    score, judge = run(
        AgentGoalAccuracy(reference=True, policy_checks=True),
        [requirements("Cancel ABC"), verdict("met", [2]), verdict("not met", [1, 2], "ABC was basic economy")],
    )
    assert score.value == 0.0
    policy = score.verdicts[1]
    assert (
        policy.subject
        == "Call 2 (cancel_reservation) is allowed by the policy in <policy>, given what the calls before it show"
    )
    assert policy.flags == ("policy_check",)
    assert (score.details or {})["requirements"][1]["kind"] == "policy check"
    first, second = (r.messages[1]["content"] for r in judge.requests[1:])
    assert second.startswith(first[: first.index("<requirement>")])  # one shared prefix
    # No policy in the trace (or not shown): no policy check.
    _, judge = run(AgentGoalAccuracy(reference=True, policy_checks=True, include_policy=False),
                   [requirements("Cancel ABC"), verdict("met", [2])])  # fmt: skip
    assert len(judge.requests) == 2


def test_cited_calls_that_do_not_exist_are_dropped_and_said() -> None:
    score, _ = run(AgentGoalAccuracy(reference=True), [requirements("Cancel ABC"), verdict("met", [2, 42])])
    assert score.verdicts[0].details == {
        "calls": [2],
        "cited": ['call 2: cancel_reservation({"reservation_id": "ABC"})'],
    }
    assert score.verdicts[0].reason.endswith("[cited calls that do not exist, dropped: 42]")


@pytest.mark.parametrize(
    ("script", "reason", "judged"),
    [
        (["I will not do that."], UnscoredReason.REFUSAL, 0),
        (["{\"requirements\": "], UnscoredReason.TRUNCATED_OUTPUT, 0),
        ([requirements()], UnscoredReason.NO_STATEMENTS, 0),
        ([requirements("Cancel ABC", "No rebooking"), verdict("met", [2]), "garbage"], UnscoredReason.PARSE_FAILURE, 1),
        ([requirements("Cancel ABC"), json.dumps({"verdict": "yes", "calls": [], "reason": "x"})],
         UnscoredReason.PARSE_FAILURE, 0),
    ],
)  # fmt: skip
def test_judge_failures_are_unscored_and_keep_the_end_state(
    script: list[object], reason: UnscoredReason, judged: int
) -> None:
    score, _ = run(AgentGoalAccuracy(reference=True), script)
    assert score.unscored_reason is reason
    assert len(score.verdicts) == judged
    assert (score.details or {})["end_state"]["state_changes"][0]["tool"] == "cancel_reservation"


def test_a_failed_check_does_not_hide_a_requirement_that_is_not_met() -> None:
    score, _ = run(
        AgentGoalAccuracy(reference=True),
        [requirements("Cancel ABC", "Book HAT1"), "garbage", verdict("not met", [3], "booking failed")],
    )
    assert score.value == 0.0
    assert "1 requirement(s) not judged" in (score.explanation or "")


def test_missing_fields_are_unscored_without_a_judge_call() -> None:
    score, _ = run(AgentGoalAccuracy(reference=True), [], SAMPLE.model_copy(update={"reference": None}))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD
    score, _ = run(AgentGoalAccuracy(), [], SAMPLE.model_copy(update={"trace": ()}))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD
    agent_only = (Message(role="assistant", content="Hello!"),)
    score, _ = run(AgentGoalAccuracy(reference=False), [], Sample(id="x", trace=agent_only))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD
    assert "no user turn" in (score.detail or "")


def test_policy_can_be_left_out_and_long_texts_are_capped() -> None:
    _, judge = run(
        AgentGoalAccuracy(reference=True, include_policy=False), [requirements("Cancel ABC"), verdict("met")]
    )
    assert "<policy>\n(no policy given)\n</policy>" in judge.requests[1].messages[1]["content"]
    long_policy = SAMPLE.model_copy(update={"trace": (Message(role="system", content="rule. " * 3000), *TRACE[1:])})
    _, judge = run(
        AgentGoalAccuracy(reference=True, policy_chars=100), [requirements("x"), verdict("met")], long_policy
    )
    assert "characters of policy left out]" in judge.requests[1].messages[1]["content"]


def test_render_actions_shortens_read_results_first_to_fit() -> None:
    big = "x" * 5000
    trace = (
        Message(role="assistant", tool_calls=(call("search_flights", "a", city="SEA"),)),
        Message(role="tool", tool_call_id="a", content=big),
        Message(role="assistant", tool_calls=(call("book", "b", flight="HAT1"),)),
        Message(role="tool", tool_call_id="b", content='{"ok": true}'),
    )
    end = read_end_state(trace)
    full = render_actions(end, max_chars=None)
    assert "[4601 more characters]" in full
    short = render_actions(end, max_chars=400)
    assert len(short) <= 400
    assert '[call 2] CHANGE, succeeded: book({"flight": "HAT1"})\n  result: {"ok": true}' in short
    assert render_actions(read_end_state(())) == "(the agent made no tool call)"


def test_the_registry_builds_it_with_declared_tools() -> None:
    metric = build_metric("agent_goal_accuracy_with_reference", {"state_changing": "book_*,cancel_*"})
    assert isinstance(metric, AgentGoalAccuracy)
    assert metric.state == StateChanges(tools=("book_*", "cancel_*"))
    assert metric.required_fields == ("trace", "reference")
    assert AgentGoalAccuracy(reference=False).required_fields == ("trace",)


# --- agent state match -------------------------------------------------------------------------------


def state_sample(expected: list[dict[str, Any]] | None, trace: Sequence[Message] = TRACE) -> Sample:
    return Sample(id="m", trace=tuple(trace), reference_tool_calls=expected)


def match(sample: Sample, metric: AgentStateMatch | None = None) -> Score:
    judge = ScriptedJudge([])
    score = asyncio.run((metric or AgentStateMatch()).score(sample, judge))
    assert not judge.requests
    return score


def test_state_match_compares_performed_changes_and_ignores_reads_and_failed_attempts() -> None:
    expected = [
        {"name": "get_reservation_details", "arguments": {"reservation_id": "ABC"}},
        {"name": "cancel_reservation", "arguments": '{"reservation_id": "ABC"}'},
    ]
    score = match(state_sample(expected))
    assert score.metric == "agent_state_match"
    assert score.value == 1.0  # the failed booking changed nothing; the read is not compared
    assert [(v.subject, v.value, v.reason) for v in score.verdicts] == [
        ('cancel_reservation({"reservation_id": "ABC"})', 1, "performed by call 2"),
    ]
    assert "1 read calls in the reference not compared" in (score.explanation or "")
    assert (score.details or {})["pairs"] == [{"expected": 1, "call": 2}]


def test_state_match_fails_on_a_missing_a_failed_a_different_or_an_extra_change() -> None:
    book = {"name": "book_reservation", "arguments": {"flight": "HAT1", "date": "2024-05-20"}}
    cancel = {"name": "cancel_reservation", "arguments": {"reservation_id": "ABC"}}
    score = match(state_sample([cancel, book]))
    assert score.value == 0.0
    assert (
        score.verdicts[1].reason
        == "every call to book_reservation failed (call 3: Error: not enough seats on flight HAT1)"
    )
    score = match(state_sample([{"name": "cancel_reservation", "arguments": {"reservation_id": "XYZ"}}]))
    assert score.verdicts[0].reason == 'call 2 to cancel_reservation differs: reservation_id: expected "XYZ", got "ABC"'
    assert score.verdicts[1].subject == 'unexpected: cancel_reservation({"reservation_id": "ABC"})'
    assert score.verdicts[1].reason == "call 2 changed state (succeeded) and no expected call asks for it"
    score = match(state_sample([{"name": "send_certificate", "arguments": {}}, cancel]))
    assert score.verdicts[0].reason == "no call to send_certificate was made"
    score = match(state_sample([]))  # nothing should change; something did
    assert score.value == 0.0 and [v.value for v in score.verdicts] == [0]
    quiet = [m for m in TRACE if not m.tool_calls and m.role != "tool"]
    assert match(state_sample([], quiet)).value == 1.0


def test_state_match_takes_the_declared_tools_and_argument_modes() -> None:
    cancel_loose = {"name": "cancel_reservation", "arguments": {}}
    assert match(state_sample([cancel_loose])).value == 0.0
    assert (
        match(state_sample([cancel_loose]), AgentStateMatch(arguments=ArgumentMatch(mode="expected_keys"))).value == 1.0
    )
    only_books = AgentStateMatch(state=StateChanges(tools=("book_*",)))
    assert match(state_sample([]), only_books).value == 1.0  # the cancellation is not declared state-changing
    per_dataset = state_sample([]).model_copy(update={"metadata": {"state_changing_tools": ["book_*"]}})
    assert match(per_dataset).value == 1.0
    assert match(state_sample(None)).unscored_reason is UnscoredReason.MISSING_FIELD


# --- every input shape reaches the agent metrics -----------------------------------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
FORMATS = ["openai_chat", "openai_responses", "anthropic", "langchain", "openinference"]


def scripted(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
    if "<goal>" in messages[-1]["content"] or "<user_turns>" in messages[-1]["content"]:
        return requirements("Cancel reservation ABC123")
    return verdict("met", [2], "cancelled")


def test_every_trace_format_gives_the_same_end_state_and_the_same_judge_prompts() -> None:
    seen = {}
    for fmt in FORMATS:
        trace = assay.load_trace(json.loads((FIXTURES / f"{fmt}.json").read_text()))
        sample = Sample(id=fmt, trace=trace, reference="Cancel reservation ABC123.")
        judge = FunctionJudge(scripted)
        score = asyncio.run(AgentGoalAccuracy(reference=True).score(sample, judge))
        seen[fmt] = (read_end_state(trace), [r.messages for r in judge.requests], score.value)
    first = seen["openai_chat"]
    assert first[0].performed and first[2] == 1.0
    assert all(seen[fmt] == first for fmt in FORMATS)


RAGAS_ROW = {
    "user_input": [
        {"content": "Cancel reservation ABC123, please.", "type": "human"},
        {
            "content": "Cancelling.",
            "type": "ai",
            "tool_calls": [{"name": "cancel_reservation", "args": {"reservation_id": "ABC123"}}],
        },
        {"content": '{"status": "cancelled"}', "type": "tool"},
        {"content": "Done: ABC123 is cancelled.", "type": "ai", "metadata": None},
    ],
    "reference_tool_calls": [{"name": "cancel_reservation", "args": {"reservation_id": "ABC123"}}],
    "reference": "The user wants reservation ABC123 cancelled.",
}

DEEPEVAL_ROW = {
    "input": "Cancel reservation ABC123, please.",
    "actual_output": "Done: ABC123 is cancelled.",
    "tools_called": [
        {"name": "get_reservation_details", "input_parameters": {"reservation_id": "ABC123"}, "output": {"ok": 1}},
        {"name": "cancel_reservation", "input_parameters": {"reservation_id": "ABC123"}, "output": "cancelled"},
    ],
    "expected_tools": [{"name": "cancel_reservation", "input_parameters": {"reservation_id": "ABC123"}}],
}


@pytest.mark.parametrize("row", [RAGAS_ROW, DEEPEVAL_ROW], ids=["ragas", "deepeval"])
def test_ragas_and_deepeval_rows_reach_the_agent_metrics_without_conversion(row: dict[str, Any]) -> None:
    from assay.run import sample_from_record

    sample = sample_from_record({"id": "r", **row}, line=1, required=("trace", "reference_tool_calls"))
    end = read_end_state(sample.trace)
    assert [(a.name, a.arguments, a.succeeded) for a in end.performed] == [
        ("cancel_reservation", {"reservation_id": "ABC123"}, True)
    ]
    assert end.final_reply == "Done: ABC123 is cancelled."
    assert match(sample).value == 1.0
    assert sample.trace[0].role == "user" and "ABC123" in (sample.trace[0].content or "")


# --- properties of the state match -------------------------------------------------------------------

TOOLS = ["book_flight", "cancel_order", "get_user", "search_items", "update_seat"]
calls_strategy = st.lists(
    st.tuples(st.sampled_from(TOOLS), st.dictionaries(st.sampled_from("abc"), st.integers(0, 3), max_size=2)),
    max_size=6,
)


def trace_of(calls: list[tuple[str, dict[str, int]]], failed: frozenset[int] = frozenset()) -> tuple[Message, ...]:
    messages: list[Message] = [Message(role="user", content="do things")]
    for i, (name, arguments) in enumerate(calls):
        messages.append(Message(role="assistant", tool_calls=(ToolCall(name=name, arguments=arguments, id=f"c{i}"),)))
        messages.append(Message(role="tool", tool_call_id=f"c{i}", content="Error: no" if i in failed else "ok"))
    return tuple(messages)


@settings(max_examples=60, deadline=None)
@given(calls_strategy, st.randoms(use_true_random=False))
def test_the_state_match_of_a_trace_against_its_own_changes_is_one_in_any_order(
    calls: list[tuple[str, dict[str, int]]], rng: Any
) -> None:
    expected = [{"name": n, "arguments": a} for n, a in calls]
    rng.shuffle(expected)
    assert match(state_sample(expected, trace_of(calls))).value == 1.0


@settings(max_examples=60, deadline=None)
@given(calls_strategy.filter(lambda c: any(not n.startswith(("get", "search")) for n, _ in c)))
def test_dropping_an_expected_change_or_failing_its_call_breaks_the_match(
    calls: list[tuple[str, dict[str, int]]],
) -> None:
    changing = [i for i, (n, _) in enumerate(calls) if not n.startswith(("get", "search"))]
    expected = [{"name": n, "arguments": a} for n, a in calls]
    dropped = [e for i, e in enumerate(expected) if i != changing[0]]
    assert match(state_sample(dropped, trace_of(calls))).value == 0.0  # an unexpected change
    assert (
        match(state_sample(expected, trace_of(calls, frozenset({changing[0]})))).value == 0.0
    )  # a change not performed
    # A failed attempt on top of the performed changes changes nothing.
    retried = [*calls, calls[changing[0]]]
    assert match(state_sample(expected, trace_of(retried, frozenset({len(calls)})))).value == 1.0


class WindowedJudge(ScriptedJudge):
    """A scripted judge with a fixed context window that counts a token per 4 characters (as the local judge)."""

    n_ctx = 1500

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1


def test_a_long_policy_is_cut_to_fit_a_judge_with_a_fixed_window_and_the_record_says_so() -> None:
    # With the local judge's 4,096-token window, tau-bench's 6,000-character policy and the
    # calls made 6 of 100 dev trajectories' requirement prompts too long (refused, unscored)
    # and left 17 no room for the answer.
    policy = "Rule one: economy fares are not refundable. " + "Another rule of the airline. " * 400
    sample = SAMPLE.model_copy(update={"trace": (Message(role="system", content=policy), *TRACE[1:])})
    metric = AgentGoalAccuracy(reference=True)
    judge = WindowedJudge([requirements("Cancel ABC", "Do not book a new flight"), verdict("met", [2]), verdict("met")])
    score = asyncio.run(metric.score(sample, judge))
    assert score.value == 1.0
    for request in judge.requests[1:]:
        prompt = "\n".join(m["content"] for m in request.messages)
        assert judge.count_tokens(prompt) <= WindowedJudge.n_ctx - metric.config.max_tokens
        assert "<policy>\nRule one: economy fares are not refundable." in prompt  # its start is kept
        assert "to fit the judge's window]" in prompt and "cancel_reservation" in prompt
    fitted = (score.details or {})["fitted_to_window"]
    assert fitted.startswith("policy cut to ") and "1500-token window" in fitted
    assert fitted in (score.explanation or "")
    # A judge that states no window gets the policy up to its cap, and no note.
    score, judge = run(metric, [requirements("Cancel ABC"), verdict("met", [2])], sample)
    assert "fitted_to_window" not in (score.details or {})
    assert len(judge.requests[1].messages[1]["content"]) > 8000
