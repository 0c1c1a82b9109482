"""Tool-call accuracy: matching expected calls to the calls in a trace (no judge)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from assay import Message, Sample, Score, ToolCall, UnscoredReason
from assay.errors import ConfigError
from assay.metrics._endstate import StateChanges
from assay.metrics._matching import ArgumentMatch
from assay.metrics._tools import ToolCallAccuracy, actual_tool_calls
from assay.models import ScriptedJudge


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def sample(expected: list[ToolCall], actual: list[ToolCall]) -> Sample:
    trace = [Message(role="user", content="please do it")]
    for i, c in enumerate(actual):
        trace.append(Message(role="assistant", tool_calls=(c,)))
        trace.append(Message(role="tool", name=c.name, content=f"result {i}"))
    trace.append(Message(role="assistant", content="done"))
    return Sample(id="t", trace=tuple(trace), reference_tool_calls=tuple(expected))


def run(expected: list[ToolCall], actual: list[ToolCall], metric: ToolCallAccuracy | None = None) -> Score:
    judge = ScriptedJudge([])  # any call to the judge would raise
    score = asyncio.run((metric or ToolCallAccuracy()).score(sample(expected, actual), judge))
    assert not judge.requests
    return score


GET = call("get_user", user_id="mia")
BOOK = call("book", flight="HAT136", seats=1)
PAY = call("pay", amount=250)


def test_identical_calls_score_one() -> None:
    score = run([GET, BOOK], [GET, BOOK])
    assert score.metric == "tool_call_accuracy"
    assert score.value == 1.0
    assert [(v.subject, v.value, v.reason) for v in score.verdicts] == [
        ('get_user({"user_id": "mia"})', 1, "matched call 1 of 2"),
        ('book({"flight": "HAT136", "seats": 1})', 1, "matched call 2 of 2"),
    ]


def test_swapped_order_counts_once_in_strict_mode_and_fully_as_multiset() -> None:
    strict = run([GET, BOOK], [BOOK, GET])
    assert strict.value == 0.5
    assert [v.value for v in strict.verdicts] == [1, 0]
    assert strict.verdicts[1].reason == "a matching call to book was made, but out of order"
    assert run([GET, BOOK], [BOOK, GET], ToolCallAccuracy(strict_order=False)).value == 1.0


def test_extra_call_lowers_the_score_and_is_listed() -> None:
    score = run([GET, BOOK], [GET, PAY, BOOK])
    assert score.value == pytest.approx(2 / 3)  # 2 matched / max(2, 3)
    assert [v.value for v in score.verdicts] == [1, 1]
    assert 'unmatched calls made: 2: pay({"amount": 250})' in (score.explanation or "")


def test_missing_call_is_a_zero_verdict_saying_so() -> None:
    score = run([GET, BOOK, PAY], [GET, PAY])
    assert score.value == pytest.approx(2 / 3)  # 2 matched / max(3, 2)
    assert [v.value for v in score.verdicts] == [1, 0, 1]
    assert score.verdicts[1].reason == "no call to book was made"


def test_no_calls_at_all_scores_zero() -> None:
    score = run([GET], [])
    assert score.value == 0.0 and score.is_scored
    assert score.verdicts[0].reason == "no call to get_user was made"


@pytest.mark.parametrize(
    ("actual", "reason"),
    [
        (call("book", flight="HAT137", seats=1), 'flight: expected "HAT136", got "HAT137"'),
        (call("book", flight="HAT136"), "missing arguments seats"),
        (call("book", flight="HAT136", seats=1, insurance="no"), "unexpected arguments insurance"),
        (call("book", flight="HAT136", seats="1"), 'seats: expected 1, got "1"'),
        (call("book", flight="HAT136", seats=True), "seats: expected 1, got true"),
    ],
)
def test_argument_differences_are_named_in_the_reason(actual: ToolCall, reason: str) -> None:
    score = run([BOOK], [actual])
    assert score.value == 0.0
    assert score.verdicts[0].reason == f"call 1 to book differs: {reason}"


def test_numbers_compare_as_json_values() -> None:
    assert run([BOOK], [call("book", flight="HAT136", seats=1.0)]).value == 1.0


def test_nested_arguments_compare_exactly() -> None:
    expected = call("book", flights=[{"n": "A", "date": "2024-05-20"}])
    assert run([expected], [call("book", flights=[{"n": "A", "date": "2024-05-20"}])]).value == 1.0
    assert run([expected], [call("book", flights=[{"n": "A", "date": "2024-05-21"}])]).value == 0.0


def test_ignore_extra_arguments_allows_additional_arguments_only() -> None:
    metric = ToolCallAccuracy(ignore_extra_arguments=True)
    assert run([BOOK], [call("book", flight="HAT136", seats=1, insurance="no")], metric).value == 1.0
    score = run([BOOK], [call("book", flight="HAT136")], metric)
    assert score.value == 0.0 and "missing arguments seats" in score.verdicts[0].reason


def test_multiset_matching_is_maximal_not_greedy() -> None:
    # With extra arguments ignored, the first expected call fits both actual calls; a greedy
    # pairing would take the first one and leave the second expected call unmatched.
    expected = [call("f", a=1), call("f", a=1, b=2)]
    actual = [call("f", a=1, b=2), call("f", a=1)]
    metric = ToolCallAccuracy(strict_order=False, ignore_extra_arguments=True)
    assert run(expected, actual, metric).value == 1.0


def test_strict_order_allows_calls_in_between() -> None:
    assert run([GET, PAY], [GET, BOOK, BOOK, PAY]).value == pytest.approx(2 / 4)


def test_repeated_expected_call_needs_two_actual_calls() -> None:
    score = run([GET, GET], [GET])
    assert score.value == 0.5
    assert score.verdicts[1].reason == "every call to get_user was already matched to another expected call"


def test_only_assistant_tool_calls_count() -> None:
    trace = (
        Message(role="user", content="hi"),
        Message(role="assistant", content="checking", tool_calls=(GET, BOOK)),
        Message(role="tool", name="get_user", content="{}"),
    )
    assert actual_tool_calls(trace) == (GET, BOOK)


@pytest.mark.parametrize(
    "update",
    [{"reference_tool_calls": None}, {"trace": ()}],
)
def test_missing_fields_are_unscored(update: dict[str, object]) -> None:
    s = sample([GET], [GET]).model_copy(update=update)
    score = asyncio.run(ToolCallAccuracy().score(s, ScriptedJudge([])))
    assert score.unscored_reason is UnscoredReason.MISSING_FIELD


def test_spec_and_required_fields() -> None:
    metric = ToolCallAccuracy(strict_order=False, ignore_extra_arguments=True)
    assert metric.required_fields == ("trace", "reference_tool_calls")
    params = metric.spec().params
    assert {k: params[k] for k in ("strict_order", "ignore_extra_arguments", "calls", "trajectory")} == {
        "strict_order": False,
        "ignore_extra_arguments": True,
        "calls": "all",
        "trajectory": "score",
    }
    assert params["arguments"] == {"mode": "exact", "ignore": [], "compare": {}, "normalize": False}
    assert metric.spec().name == "tool_call_accuracy"


# --- trajectory modes and which calls count -------------------------------------------------------

LOOKUP = call("get_user", user_id="mia")
SEARCH = call("search_flights", city="SEA")
CANCEL = call("cancel", order=7)


@pytest.mark.parametrize(
    ("trajectory", "actual", "value"),
    [
        # expected: [BOOK, CANCEL]
        ("exact", [BOOK, CANCEL], 1.0),
        ("exact", [CANCEL, BOOK], 0.0),
        ("exact", [BOOK, PAY, CANCEL], 0.0),
        ("unordered", [CANCEL, BOOK], 1.0),
        ("unordered", [CANCEL, BOOK, PAY], 0.0),
        ("unordered", [BOOK], 0.0),
        ("in_order", [BOOK, PAY, CANCEL], 1.0),
        ("in_order", [CANCEL, PAY, BOOK], 0.0),
        ("superset", [CANCEL, PAY, BOOK], 1.0),
        ("superset", [CANCEL, PAY], 0.0),
        ("subset", [CANCEL], 1.0),
        ("subset", [], 1.0),
        ("subset", [CANCEL, PAY], 0.0),
    ],
)
def test_binary_trajectory_modes_as_peers_name_them(trajectory: str, actual: list[ToolCall], value: float) -> None:
    score = run([BOOK, CANCEL], actual, ToolCallAccuracy(trajectory=trajectory))  # type: ignore[arg-type]
    assert score.value == value
    assert (score.explanation or "").startswith(f"{trajectory} match {'holds' if value else 'fails'}")


def test_read_calls_the_reference_leaves_out_are_free_when_asked() -> None:
    # The case: the agent looks things up that the expected list does not name.
    actual = [LOOKUP, SEARCH, BOOK, SEARCH]
    assert run([BOOK], actual).value == pytest.approx(1 / 4)
    free = run([BOOK], actual, ToolCallAccuracy(calls="ignore_extra_reads"))
    assert free.value == 1.0
    assert "(extra read calls not charged)" in (free.explanation or "")
    # An expected read must still be made; an extra state change still costs.
    assert run([LOOKUP, BOOK], [BOOK], ToolCallAccuracy(calls="ignore_extra_reads")).value == 0.5
    assert run([BOOK], [BOOK, CANCEL], ToolCallAccuracy(calls="ignore_extra_reads")).value == 0.5


def test_state_changing_scope_compares_only_state_changes_on_both_sides() -> None:
    metric = ToolCallAccuracy(calls="state_changing", trajectory="unordered")
    score = run([LOOKUP, BOOK, CANCEL], [SEARCH, CANCEL, LOOKUP, BOOK], metric)
    assert score.value == 1.0
    assert [v.subject for v in score.verdicts] == [
        'book({"flight": "HAT136", "seats": 1})',
        'cancel({"order": 7})',
    ]
    assert score.verdicts[0].reason == "matched call 4 of 4"  # the trace's call number
    assert "2 of 2 expected state-changing calls matched; 2 state-changing calls made" in (score.explanation or "")
    declared = ToolCallAccuracy(calls="state_changing", state=StateChanges(tools=("book",)))
    assert run([BOOK], [BOOK, CANCEL], declared).value == 1.0


def test_argument_modes_reach_tool_call_accuracy() -> None:
    loose = ToolCallAccuracy(arguments=ArgumentMatch(mode="expected_keys"))
    assert run([call("book", flight="HAT136")], [BOOK], loose).value == 1.0
    assert (
        run(
            [BOOK], [call("book", flight="HAT136", seats=2)], ToolCallAccuracy(arguments=ArgumentMatch(mode="names"))
        ).value
        == 1.0
    )
    with pytest.raises(ConfigError, match="either ignore_extra_arguments or an arguments mode"):
        ToolCallAccuracy(ignore_extra_arguments=True, arguments=ArgumentMatch(mode="names"))
    with pytest.raises(ConfigError, match="trajectory must be"):
        ToolCallAccuracy(trajectory="strict")  # type: ignore[arg-type]


def test_expected_nothing_scores_one_when_nothing_is_called() -> None:
    assert run([], []).value == 1.0
    assert run([], [LOOKUP]).value == 0.0
    assert run([], [LOOKUP], ToolCallAccuracy(calls="ignore_extra_reads")).value == 1.0
