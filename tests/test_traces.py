"""Agent traces in every common shape become the same assay trace (assay._traces).

``tests/fixtures/traces/`` holds one airline conversation (a user asks to cancel a booking,
the agent calls two tools, gets their results and answers) in each format, written after
each format's published schema: openai-python's Chat Completions and Responses types,
anthropic-sdk-python's content blocks, langchain_core's ``messages_to_dict`` and the
OpenInference semantic conventions in an OTLP JSON export. The ``broken_*`` files each
have one field wrong.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import assay
from assay import Message, Sample, ToolCall
from assay.errors import SampleError, TraceFormatError
from assay.metrics._holistic import HolisticGoalAccuracy
from assay.metrics._tools import ToolCallAccuracy
from assay.metrics._trace import TraceFormatter
from assay.models import ScriptedJudge
from assay.run._data import sample_from_record

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
FORMATS = ["openai_chat", "openai_responses", "anthropic", "langchain", "openinference"]

SYSTEM = (
    "You are an airline customer service agent. Cancel a reservation only for the user who owns it, "
    "and only after looking it up."
)
USER = "Hi, I need to cancel my booking ABC123. My user id is mia_li_3668."
ARGS1 = {"reservation_id": "ABC123"}
RESULT1 = (
    '{"reservation_id": "ABC123", "user_id": "mia_li_3668", "status": "confirmed", "flights": [{"flight_number": '
    '"HAT136", "date": "2024-05-20", "origin": "JFK", "destination": "SFO"}], "cabin": "economy", "insurance": '
    '"yes", "total_paid": 348.0}'
)
TEXT2 = "The booking is yours and has travel insurance, so I can cancel it with a full refund."
ARGS2 = {"reservation_id": "ABC123", "reason": "change of plan"}
RESULT2 = (
    '{"reservation_id": "ABC123", "status": "cancelled", "refund": {"amount": 348.0, "currency": "USD", '
    '"method": "original payment"}}'
)
FINAL = (
    "Your reservation ABC123 is cancelled. The full refund of $348.00 goes back to your original payment "
    "method within 5 to 7 business days."
)
THINKING = "The user owns ABC123 and it has insurance, so a full refund applies. Cancel it."

# (role, content, [(tool, arguments)], tool name of a result, is_error): ids differ by format.
EXPECTED = [
    ("system", SYSTEM, [], None, False),
    ("user", USER, [], None, False),
    ("assistant", None, [("get_reservation_details", ARGS1)], None, False),
    ("tool", RESULT1, [], "get_reservation_details", False),
    ("assistant", TEXT2, [("cancel_reservation", ARGS2)], None, False),
    ("tool", RESULT2, [], "cancel_reservation", False),
    ("assistant", FINAL, [], None, False),
]

EXPECTED_TEXT = f"""\
[2] USER: {USER}

[3] ASSISTANT CALLS get_reservation_details({{"reservation_id": "ABC123"}})

[4] TOOL RESULT get_reservation_details: {RESULT1}

[5] ASSISTANT: {TEXT2}
[5] ASSISTANT CALLS cancel_reservation({{"reservation_id": "ABC123", "reason": "change of plan"}})

[6] TOOL RESULT cancel_reservation: {RESULT2}

[7] ASSISTANT: {FINAL}"""


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def shape(trace: tuple[Message, ...]) -> list[tuple[object, ...]]:
    return [(m.role, m.content, [(c.name, c.arguments) for c in m.tool_calls], m.name, m.is_error) for m in trace]


# --- every format, the same trace -----------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_converts_to_the_same_assay_trace(fmt: str) -> None:
    data = fixture(fmt)
    assert assay.detect_trace_format(data) == fmt
    trace = assay.load_trace(data)
    assert shape(trace) == EXPECTED
    # Each result answers the call just before it, by that call's own id.
    for i, message in enumerate(trace):
        if message.role == "tool":
            assert message.tool_call_id is not None
            assert message.tool_call_id == trace[i - 1].tool_calls[-1].id


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_dataset_row_converts_its_trace_column(fmt: str) -> None:
    for column in ("trace", "messages"):
        sample = sample_from_record({"id": fmt, column: fixture(fmt)}, line=1, source="d.jsonl")
        assert shape(sample.trace) == EXPECTED
    # A JSON string in the column (CSV, Parquet) reads the same.
    assert shape(Sample(id="s", trace=json.dumps(fixture(fmt))).trace) == EXPECTED


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_trace_formatter_prints_the_same_text_for_every_format(fmt: str) -> None:
    assert TraceFormatter().format(assay.load_trace(fixture(fmt))) == EXPECTED_TEXT


def test_agent_goal_accuracy_judges_the_same_question_for_every_format() -> None:
    inferred = json.dumps({"user_goal": "Cancel booking ABC123.", "end_state": "ABC123 cancelled with a refund."})
    verdict = json.dumps({"verdict": 1, "reason": "cancelled as asked"})
    prompts = {}
    for fmt in FORMATS:
        judge = ScriptedJudge([inferred, verdict])
        sample = Sample(id=fmt, trace=fixture(fmt), reference="Cancel reservation ABC123 with a refund.")
        score = asyncio.run(HolisticGoalAccuracy(reference=True).score(sample, judge))
        assert judge.remaining == 0
        assert score.value == 1.0, fmt
        prompts[fmt] = [request.messages for request in judge.requests]
    first = prompts["openai_chat"]
    assert EXPECTED_TEXT in first[0][-1]["content"]  # the judge read the flattened trace
    assert all(prompts[fmt] == first for fmt in FORMATS)


@pytest.mark.parametrize(
    ("reference", "value"),
    [
        (
            [
                ToolCall(name="get_reservation_details", arguments=ARGS1),
                ToolCall(name="cancel_reservation", arguments=ARGS2),
            ],
            1.0,
        ),
        ([ToolCall(name="cancel_reservation", arguments={"reservation_id": "ABC123", "reason": "other"})], 0.0),
    ],
)
def test_tool_call_accuracy_is_the_same_for_every_format(reference: list[ToolCall], value: float) -> None:
    scores = []
    for fmt in FORMATS:
        sample = Sample(id=fmt, trace=fixture(fmt), reference_tool_calls=tuple(reference))
        scores.append(asyncio.run(ToolCallAccuracy().score(sample, ScriptedJudge([]))))
    assert {score.value for score in scores} == {value}
    assert len({(score.explanation, score.verdicts) for score in scores}) == 1


# --- errors ---------------------------------------------------------------------------------

BROKEN = {
    "openai_chat": "trace[2].tool_calls[0].function.arguments: tool call 'get_reservation_details': arguments "
    "must be a JSON object, got a number",
    "openai_responses": "trace[3]: Responses function_call needs 'call_id'",
    "anthropic": "trace.messages[1].content[0]: Anthropic block of type 'tool_use' needs 'name'",
    "langchain": "trace[2].data.tool_calls[0]: LangChain tool call needs 'name'",
    "openinference": "trace.resourceSpans[0].scopeSpans[0].spans[0].attributes: span 'ChatCompletion': "
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name is missing",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_broken_trace_names_the_closest_format_and_the_field(fmt: str) -> None:
    with pytest.raises(TraceFormatError) as info:
        assay.load_trace(fixture(f"broken_{fmt}"))
    error = info.value
    assert str(error).startswith(BROKEN[fmt])
    assert error.format == fmt
    assert f"closest: {fmt} (" in str(error)
    assert "accepted: openai_chat, openai_responses, anthropic, langchain, openinference" in str(error)
    assert "Field required" not in str(error) and "validation error" not in str(error)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_broken_trace_in_a_row_is_a_row_error_with_its_line(fmt: str) -> None:
    with pytest.raises(SampleError) as info:
        sample_from_record({"id": "r", "trace": fixture(f"broken_{fmt}")}, line=7, source="agent.jsonl")
    text = str(info.value)
    assert text.startswith("agent.jsonl:7: ")
    assert BROKEN[fmt] in text
    assert "Value error" not in text and "input_value" not in text


def test_an_agents_unparseable_argument_string_is_kept_as_a_call_not_a_broken_trace() -> None:
    # What the agent wrote is data about the agent (issue 26): the call stays, with its raw text.
    call = {"id": "c1", "type": "function", "function": {"name": "cancel", "arguments": '{"order": 7'}}
    listed = {"id": "c2", "type": "function", "function": {"name": "cancel", "arguments": "[7]"}}
    trace = assay.load_trace([{"role": "assistant", "content": None, "tool_calls": [call, listed]}])
    assert [c.arguments for c in trace[0].tool_calls] == [
        {"__invalid_arguments__": '{"order": 7'},
        {"__invalid_arguments__": "[7]"},
    ]


def test_the_closest_format_is_the_one_whose_marks_the_trace_carries() -> None:
    # The brief's example: an Anthropic trace whose third message has a tool_use without a name.
    trace = [
        {"role": "user", "content": "Cancel ABC123."},
        {"role": "assistant", "content": "Looking it up."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "input": {}}]},
    ]
    with pytest.raises(TraceFormatError, match=r"^trace\[2\]\.content\[0\]: Anthropic block of type 'tool_use' needs"):
        assay.load_trace(trace)


def test_a_trace_of_no_known_shape_says_what_is_accepted() -> None:
    with pytest.raises(TraceFormatError) as info:
        assay.load_trace([{"speaker": "user", "text": "hi"}])
    assert str(info.value).startswith("trace[0]: OpenAI chat message needs 'role'")
    assert "accepted: openai_chat, openai_responses, anthropic, langchain, openinference" in str(info.value)


def test_an_explicit_format_reports_its_own_failure() -> None:
    with pytest.raises(TraceFormatError, match=r"trace\.messages: .*read as anthropic|read as anthropic"):
        assay.load_trace(fixture("openai_chat"), format="anthropic")
    with pytest.raises(TraceFormatError, match="unknown trace format 'xml'"):
        assay.load_trace([], format="xml")
    assert shape(assay.load_trace(fixture("langchain"), format="langchain")) == EXPECTED


# --- what each format carries beyond the common trace -------------------------------------------


@pytest.mark.parametrize("fmt", ["openai_responses", "anthropic"])
def test_reasoning_is_left_out_unless_asked_for(fmt: str) -> None:
    assert shape(assay.load_trace(fixture(fmt))) == EXPECTED
    kept = assay.load_trace(fixture(fmt), keep_reasoning=True)
    assert kept[4].content == f"[reasoning] {THINKING}\n{TEXT2}"
    assert [m.role for m in kept] == [m.role for m in assay.load_trace(fixture(fmt))]


def test_a_failed_tool_is_marked_and_printed_as_an_error() -> None:
    anthropic = [
        {"role": "user", "content": "Cancel ABC123."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "cancel", "input": {"id": "ABC123"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "not found", "is_error": True}],
        },
    ]
    langchain = [
        {"type": "human", "data": {"content": "Cancel ABC123.", "type": "human"}},
        {
            "type": "ai",
            "data": {
                "content": "",
                "type": "ai",
                "tool_calls": [{"name": "cancel", "args": {"id": "ABC123"}, "id": "t1"}],
            },
        },
        {"type": "tool", "data": {"content": "not found", "type": "tool", "tool_call_id": "t1", "status": "error"}},
    ]
    for data in (anthropic, langchain):
        trace = assay.load_trace(data)
        assert trace[-1].is_error and trace[-1].name == "cancel"
        assert TraceFormatter().format(trace).endswith("[3] TOOL ERROR cancel: not found")


def test_an_openinference_tool_span_with_error_status_is_a_failed_tool() -> None:
    data = fixture("openinference")
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        if span["name"] == "cancel_reservation":
            span["status"] = {"code": 2, "message": "payment service unavailable"}
    trace = assay.load_trace(data)
    assert [m.is_error for m in trace if m.role == "tool"] == [False, True]


def test_langchain_calls_only_in_anthropic_content_blocks_are_not_lost() -> None:
    # Older langchain-anthropic dumps kept the calls as tool_use blocks in the content only.
    ai = {
        "type": "ai",
        "data": {
            "type": "ai",
            "content": [
                {"type": "text", "text": "Looking it up."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_reservation_details", "input": ARGS1},
            ],
            "tool_calls": [],
        },
    }
    (message,) = assay.load_trace([ai])
    assert message.content == "Looking it up."
    assert [(c.name, c.arguments, c.id) for c in message.tool_calls] == [("get_reservation_details", ARGS1, "toolu_1")]


def test_anthropic_user_text_after_a_tool_result_stays_after_it() -> None:
    trace = assay.load_trace(
        [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                    {"type": "text", "text": "Go on."},
                ],
            },
        ]
    )
    assert [(m.role, m.content) for m in trace] == [("assistant", None), ("tool", "ok"), ("user", "Go on.")]


def test_openinference_spans_are_read_in_start_time_order_whatever_the_file_order() -> None:
    data = fixture("openinference")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for seed in range(3):
        random.Random(seed).shuffle(spans)
        assert shape(assay.load_trace(data)) == EXPECTED


def test_openinference_tool_and_agent_spans_alone_still_give_the_conversation() -> None:
    # An agent traced without LLM spans: the AGENT span's input and output are the ends,
    # the TOOL spans the calls and their results.
    data = fixture("openinference")
    scope = data["resourceSpans"][0]["scopeSpans"][0]
    kinds = {}
    for span in scope["spans"]:
        kinds[span["spanId"]] = next(
            a["value"]["stringValue"] for a in span["attributes"] if a["key"] == "openinference.span.kind"
        )
    scope["spans"] = [s for s in scope["spans"] if kinds[s["spanId"]] != "LLM"]
    assert shape(assay.load_trace(data)) == [
        ("user", USER, [], None, False),
        ("assistant", None, [("get_reservation_details", ARGS1)], None, False),
        ("tool", RESULT1, [], "get_reservation_details", False),
        ("assistant", None, [("cancel_reservation", ARGS2)], None, False),
        ("tool", RESULT2, [], "cancel_reservation", False),
        ("assistant", FINAL, [], None, False),
    ]


def test_a_responses_object_with_instructions_and_output() -> None:
    response = {
        "object": "response",
        "instructions": SYSTEM,
        "input": USER,
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": FINAL}]},
        ],
    }
    assert assay.detect_trace_format(response) == "openai_responses"
    assert [(m.role, m.content) for m in assay.load_trace(response)] == [
        ("system", SYSTEM),
        ("user", USER),
        ("assistant", FINAL),
    ]


def test_chat_tool_results_take_the_name_of_the_call_they_answer() -> None:
    trace = Sample(id="s", trace=fixture("openai_chat")).trace
    assert [m.name for m in trace if m.role == "tool"] == ["get_reservation_details", "cancel_reservation"]
    # Given as Messages, a nameless result gets its name the same way.
    given = (
        Message(role="assistant", tool_calls=(ToolCall(name="lookup", id="c9"),)),
        Message(role="tool", tool_call_id="c9", content="x"),
    )
    assert Sample(id="s", trace=given).trace[1].name == "lookup"


def test_a_stored_sample_reads_back_unchanged() -> None:
    sample = Sample(id="s", trace=fixture("anthropic"), reference_tool_calls=(ToolCall(name="x"),))
    again = Sample.model_validate(json.loads(sample.model_dump_json(exclude_defaults=True)))
    assert again == sample


def test_empty_and_absent_traces_are_empty() -> None:
    assert assay.load_trace([]) == ()
    assert assay.load_trace(None) == ()
    assert Sample(id="s").trace == ()


# --- through the CLI --------------------------------------------------------------------------


@pytest.fixture
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # assay run writes .assay/ into the working directory


@pytest.mark.usefixtures("_in_tmp")
def test_assay_run_tool_call_accuracy_on_every_format(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from assay.cli import app
    from assay.cli._console import EXIT_BAD_ROWS, EXIT_OK
    from assay.testing import FakeOpenAIServer

    reference = [
        {"name": "get_reservation_details", "arguments": ARGS1},
        {"name": "cancel_reservation", "arguments": ARGS2},
    ]
    rows = [{"id": fmt, "trace": fixture(fmt), "reference_tool_calls": reference} for fmt in FORMATS]
    data = tmp_path / "agent.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out.jsonl"
    calls: list[object] = []

    def judge(body: dict[str, Any]) -> str:
        calls.append(body)
        return "{}"

    with FakeOpenAIServer(judge) as server:
        args = ["run", str(data), "-m", "tool_call_accuracy", "--judge", "openai:fake", "--base-url", server.base_url]
        result = CliRunner().invoke(app, [*args, "--out", str(out)])
        assert result.exit_code == EXIT_OK, result.output
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert {r["sample"]["id"]: r["scores"]["tool_call_accuracy"]["value"] for r in records} == dict.fromkeys(
            FORMATS, 1.0
        )
        assert calls == []  # tool-call accuracy never asks a judge

        # A broken trace is a row error naming its line and field; the other rows are still scored.
        rows.append({"id": "broken", "trace": fixture("broken_anthropic"), "reference_tool_calls": reference})
        data.write_text("".join(json.dumps(row) + "\n" for row in rows))
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "out2.jsonl")])
    assert result.exit_code == EXIT_BAD_ROWS, result.output
    assert "agent.jsonl:6" in result.output
    assert "Anthropic block of type 'tool_use' needs 'name'" in result.output
