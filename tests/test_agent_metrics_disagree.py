"""When ``tool_call_accuracy`` and ``agent_state_match`` disagree: the cases docs/guides/agents.md states, run.

Each case of the guide's table is a sample here, scored by both metrics, so the page cannot
say what the metrics do not do (issue 63).
"""

from __future__ import annotations

from typing import Any

import pytest

import assay
from assay.metrics import AgentStateMatch, ToolCallAccuracy


def _scores(trace: list[dict[str, Any]], reference: list[dict[str, Any]]) -> tuple[float, float]:
    sample = assay.Sample(id="s", question="q", answer="a", trace=trace, reference_tool_calls=reference)
    result = assay.evaluate([sample], [ToolCallAccuracy(), AgentStateMatch()], judge=assay.models.ScriptedJudge([]),
                            progress=False)  # fmt: skip
    scores = result.results[0].scores
    return scores["tool_call_accuracy"].value, scores["agent_state_match"].value


def _call(name: str, arguments: dict[str, Any], result: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "tool_calls": [{"name": name, "arguments": arguments}]},
        {"role": "tool", "content": result},
    ]


USER = [{"role": "user", "content": "Cancel order 7."}]
CANCEL_7 = [{"name": "cancel_order", "arguments": {"order": 7}}]


@pytest.mark.parametrize(
    ("case", "trace", "reference", "expected"),
    [
        # the expected call was made and returned an error: the call is right, nothing changed
        (
            "error result",
            USER + _call("cancel_order", {"order": 7}, "Error: order 7 is already shipped"),
            CANCEL_7,
            (1.0, 0.0),
        ),
        # an empty reference: the agent should change nothing; it only looked something up
        ("empty reference, a read", USER + _call("get_order", {"order": 7}, '{"status": "shipped"}'), [], (0.0, 1.0)),
        # ...and with no call at all, both agree
        ("empty reference, no call", [*USER, {"role": "assistant", "content": "Done."}], [], (1.0, 1.0)),
        # a read before the change: charged by tool_call_accuracy's default calls="all", free for the state
        (
            "an extra read",
            USER + _call("get_order", {"order": 7}, "ok") + _call("cancel_order", {"order": 7}, "ok"),
            CANCEL_7,
            (0.5, 1.0),
        ),
        # "7" against 7: a string is not a number in either metric (arguments compare as JSON values)
        ('"7" against 7', USER + _call("cancel_order", {"order": "7"}, "ok"), CANCEL_7, (0.0, 0.0)),
        # " 7 " against "7": only agent_state_match normalises strings (strips outer spaces, NFC)
        (
            '" 7 " against "7"',
            USER + _call("cancel_order", {"order": " 7 "}, "ok"),
            [{"name": "cancel_order", "arguments": {"order": "7"}}],
            (0.0, 1.0),
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_tool_call_accuracy_and_agent_state_match_on_the_guides_cases(
    case: str, trace: list[dict[str, Any]], reference: list[dict[str, Any]], expected: tuple[float, float]
) -> None:
    assert _scores(trace, reference) == expected, case


def same_number(expected: Any, actual: Any) -> bool:
    """``7`` and ``"7"`` are the same order number."""
    return str(expected).strip() == str(actual).strip()


def test_a_comparator_of_your_own_makes_both_read_7_as_7() -> None:
    from assay.metrics import ArgumentMatch

    sample = assay.Sample(
        id="s", question="q", answer="a", trace=USER + _call("cancel_order", {"order": "7"}, "ok"),
        reference_tool_calls=CANCEL_7,
    )  # fmt: skip
    arguments = ArgumentMatch(compare={"order": same_number})
    metrics = [ToolCallAccuracy(arguments=arguments), AgentStateMatch(arguments=arguments)]
    result = assay.evaluate([sample], metrics, judge=assay.models.ScriptedJudge([]), progress=False)
    assert [s.value for s in result.results[0].scores.values()] == [1.0, 1.0]
