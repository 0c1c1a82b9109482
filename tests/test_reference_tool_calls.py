"""Issue 26, items 6 and 14: reference tool calls as people write them, and what an agent's bad call scores.

Each test names the behaviour it pins; each failed before the fix.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from assay import Sample, ToolCall
from assay.metrics import ToolCallAccuracy
from assay.models import ScriptedJudge
from assay.run import read_jsonl


def score(sample: Sample, metric: ToolCallAccuracy | None = None) -> Any:
    judge = ScriptedJudge([])
    result = asyncio.run((metric or ToolCallAccuracy()).score(sample, judge))
    assert not judge.requests
    return result


CHAT_TRACE = [
    {"role": "user", "content": "Cancel order 7."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "cancel", "arguments": '{"order": 7}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "cancelled"},
    {"role": "assistant", "content": "Done."},
]


def test_reference_tool_calls_with_json_string_arguments_are_read() -> None:
    sample = Sample(id="s", trace=CHAT_TRACE, reference_tool_calls=[{"name": "cancel", "arguments": '{"order": 7}'}])
    assert sample.reference_tool_calls == (ToolCall(name="cancel", arguments={"order": 7}),)
    assert score(sample).value == 1.0


def test_reference_tool_calls_with_ragas_args_are_read() -> None:
    sample = Sample(id="s", trace=CHAT_TRACE, reference_tool_calls=[{"name": "cancel", "args": {"order": 7}}])
    assert sample.reference_tool_calls == (ToolCall(name="cancel", arguments={"order": 7}),)
    assert score(sample).value == 1.0


def test_tau_bench_actions_and_anthropic_tool_use_blocks_are_read_as_reference_calls(tmp_path: Path) -> None:
    # tau-bench keeps a task's expected actions as {"name", "kwargs"}; every row of a tau-bench
    # results file was refused ("Extra inputs are not permitted"), so nothing was judged.
    taubench = {"name": "cancel", "kwargs": {"order": 7}}
    anthropic = {"type": "tool_use", "id": "toolu_1", "name": "cancel", "input": {"order": 7}}
    for call in (taubench, anthropic):
        sample = Sample(id="s", trace=CHAT_TRACE, reference_tool_calls=[call])
        assert sample.reference_tool_calls[0].name == "cancel"
        assert sample.reference_tool_calls[0].arguments == {"order": 7}
        assert score(sample).value == 1.0
    path = tmp_path / "taubench.jsonl"
    path.write_text(json.dumps({"id": "t", "messages": CHAT_TRACE, "reference_tool_calls": [taubench]}) + "\n")
    assert [r.sample.id for r in read_jsonl(path, required=("trace", "reference_tool_calls"))] == ["t"]


def test_a_tool_call_with_an_unknown_key_names_the_key_and_the_accepted_ones(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    row = {"id": "a", "messages": CHAT_TRACE, "reference_tool_calls": [{"name": "cancel", "params": {"order": 7}}]}
    path.write_text(json.dumps(row) + "\n")
    (error,) = list(read_jsonl(path))
    message = str(error)
    assert "rows.jsonl:1" in message and "reference_tool_calls[0]" in message
    assert "unknown key 'params' in a tool call" in message and "'kwargs'" in message


def test_a_dataset_row_with_string_and_args_reference_calls_is_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows = [
        {"id": "a", "messages": CHAT_TRACE, "reference_tool_calls": [{"name": "cancel", "arguments": '{"order": 7}'}]},
        {"id": "b", "messages": CHAT_TRACE, "reference_tool_calls": [{"name": "cancel", "args": {"order": 7}}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = list(read_jsonl(path, required=("trace", "reference_tool_calls")))
    assert [getattr(r, "sample", r).id for r in read] == ["a", "b"]


def test_a_malformed_argument_string_in_the_agents_call_scores_zero_with_a_reason() -> None:
    trace = json.loads(json.dumps(CHAT_TRACE))
    trace[1]["tool_calls"][0]["function"]["arguments"] = '{"order": 7'  # the agent wrote broken JSON
    sample = Sample(id="s", trace=trace, reference_tool_calls=[{"name": "cancel", "arguments": {"order": 7}}])
    result = score(sample)
    assert result.is_scored and result.value == 0.0
    assert "not valid JSON" in result.verdicts[0].reason


def test_a_malformed_reference_argument_string_is_a_row_error_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    row = {"id": "a", "messages": CHAT_TRACE, "reference_tool_calls": [{"name": "cancel", "arguments": '{"order"'}]}
    path.write_text(json.dumps(row) + "\n")
    (error,) = list(read_jsonl(path))
    assert "reference_tool_calls[0]" in str(error) and "not valid JSON" in str(error)


def test_empty_reference_tool_calls_mean_the_agent_should_call_nothing_and_are_judged() -> None:
    silent = Sample(id="s", trace=[CHAT_TRACE[0], CHAT_TRACE[3]], reference_tool_calls=[])
    busy = Sample(id="b", trace=CHAT_TRACE, reference_tool_calls=[])
    assert silent.field_present("reference_tool_calls")
    assert score(silent).value == 1.0
    result = score(busy)
    assert result.is_scored and result.value == 0.0
    assert "cancel" in (result.explanation or "")
    assert not Sample(id="n", trace=CHAT_TRACE).field_present("reference_tool_calls")


def test_inspect_scorer_reads_reference_tool_calls_from_metadata() -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.scorer import Target
    from inspect_ai.tool import ToolCall as InspectToolCall

    from assay.integrations.inspect import to_sample

    messages = [
        ChatMessageUser(content="Cancel order 7."),
        ChatMessageAssistant(
            content="", tool_calls=[InspectToolCall(id="c1", function="cancel", arguments={"order": 7})]
        ),
        ChatMessageTool(content="cancelled", tool_call_id="c1", function="cancel"),
        ChatMessageAssistant(content="Done."),
    ]
    metadata = {"reference_tool_calls": [{"function": "cancel", "arguments": {"order": 7}}], "topic": "orders"}
    state = SimpleNamespace(
        sample_id=1,
        input_text="Cancel order 7.",
        output=SimpleNamespace(completion="Done."),
        metadata=metadata,
        messages=messages,
    )
    sample = to_sample(state, Target(""), trace=True)  # type: ignore[arg-type]
    assert sample.reference_tool_calls == (ToolCall(name="cancel", arguments={"order": 7}),)
    assert sample.metadata == {"topic": "orders"}
    assert score(sample).value == 1.0
