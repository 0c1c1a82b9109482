"""Rows keep the OpenTelemetry ids of what they judged: from an OTLP trace or from columns, into the store."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import evaluate
from assay.cli import app
from assay.errors import SampleError
from assay.metrics import ToolCallAccuracy
from assay.run import RunStore
from assay.run._data import read_rows
from assay.run._data._rows import Row

FIXTURE = Path(__file__).parent / "fixtures" / "traces" / "openinference.json"
TRACE_ID = "5b8efff798038103d269b633813fc60c"
ROOT_SPAN = "eee19b7ec3c1b174"  # airline_agent: the span no other span of the export is a child of


def spans() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def span_list(data: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


CALLS = [{"name": "get_reservation_details", "arguments": {"reservation_id": "EHGLP3"}}]


def test_an_otlp_trace_keeps_its_trace_id_root_span_and_response_id_through_the_store_and_the_jsonl(
    tmp_path: Path,
) -> None:
    with_response = spans()
    llm = span_list(with_response)[-2]  # the last ChatCompletion
    llm["attributes"].append({"key": "gen_ai.response.id", "value": {"stringValue": "chatcmpl-42"}})
    data = tmp_path / "agent.jsonl"
    data.write_text(
        json.dumps({"id": "a", "trace": with_response, "reference_tool_calls": CALLS})
        + "\n"
        + json.dumps({"id": "b", "trace": json.dumps(spans()), "reference_tool_calls": CALLS})  # the trace as JSON text
        + "\n"
    )
    store = tmp_path / "runs.sqlite"
    result = evaluate(str(data), [ToolCallAccuracy()], store=store, progress=False)
    with RunStore(store) as runs:
        records = list(runs.records(result.run_id))  # type: ignore[arg-type]
    ids = [(r["sample"].get("trace_id"), r["sample"].get("span_id"), r["sample"].get("response_id")) for r in records]
    assert ids == [(TRACE_ID, ROOT_SPAN, "chatcmpl-42"), (TRACE_ID, ROOT_SPAN, None)]
    out = CliRunner().invoke(app, ["runs", "export", result.run_id or "", "--store", str(store)]).output
    exported = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [r["sample"]["span_id"] for r in exported] == [ROOT_SPAN, ROOT_SPAN]


def test_ids_in_base64_and_upper_case_hex_are_read_as_lowercase_hex() -> None:
    import base64

    data = spans()
    for span in span_list(data):
        span["traceId"] = base64.b64encode(bytes.fromhex(span["traceId"])).decode()
        span["spanId"] = span["spanId"].upper()
        if span.get("parentSpanId"):
            span["parentSpanId"] = base64.b64encode(bytes.fromhex(span["parentSpanId"])).decode()
    (row,) = read_rows([{"trace": data, "answer": "x"}])
    assert isinstance(row, Row)
    assert (row.sample.trace_id, row.sample.span_id) == (TRACE_ID, ROOT_SPAN)


def test_a_trace_of_several_traces_keeps_no_id_and_says_so() -> None:
    data = spans()
    span_list(data)[0]["traceId"] = "f" * 32
    (row,) = read_rows([{"trace": data, "answer": "x"}])
    assert isinstance(row, Row)
    assert (row.sample.trace_id, row.sample.span_id) == (None, None)
    assert row.notes == ("trace_ids_several",)


def test_id_columns_are_kept_and_phoenix_column_names_read_as_them() -> None:
    rows = list(
        read_rows(
            [
                {"answer": "x", "trace_id": "a" * 32, "span_id": "b" * 16},
                {"answer": "y", "context.trace_id": "c" * 32, "context.span_id": "d" * 16},
                {"answer": "z"},
            ]
        )
    )
    assert [(r.sample.trace_id, r.sample.span_id) for r in rows if isinstance(r, Row)] == [
        ("a" * 32, "b" * 16),
        ("c" * 32, "d" * 16),
        (None, None),
    ]


@pytest.mark.parametrize(
    ("column", "value", "says"),
    [
        ("trace_id", "A" * 32, "field 'trace_id': expected an OpenTelemetry trace id, 32 lowercase hex digits"),
        ("trace_id", "ab" * 8, "field 'trace_id': expected an OpenTelemetry trace id, 32 lowercase hex digits"),
        (
            "trace_id",
            12345,
            "field 'trace_id': expected an OpenTelemetry trace id, 32 lowercase hex digits, got a number",
        ),
        ("span_id", "g" * 16, "field 'span_id': expected an OpenTelemetry span id, 16 lowercase hex digits"),
        ("span_id", "0x" + "a" * 14, "field 'span_id': expected an OpenTelemetry span id"),
        ("span_id", "0" * 16, "field 'span_id': an all-zero span id"),
        ("context.span_id", "b" * 32, "field 'context.span_id': expected an OpenTelemetry span id"),
    ],
)
def test_an_id_of_another_shape_is_a_row_error_naming_the_field_and_the_line(
    tmp_path: Path, column: str, value: object, says: str
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"answer": "fine"}) + "\n" + json.dumps({"answer": "x", column: value}) + "\n")
    first, second = read_rows(str(data))
    assert isinstance(first, Row)
    assert isinstance(second, SampleError)
    assert f"rows.jsonl:2: {says}" in str(second), str(second)


def test_a_trace_id_column_naming_another_trace_than_the_spans_is_a_row_error() -> None:
    (row,) = read_rows([{"trace": spans(), "answer": "x", "trace_id": "a" * 32}])
    assert isinstance(row, SampleError)
    assert f"field 'trace_id' is '{'a' * 32}', but the spans in field 'trace' are in trace {TRACE_ID}" in str(row)
    same = copy.deepcopy(spans())
    (kept,) = read_rows([{"trace": same, "answer": "x", "trace_id": TRACE_ID, "span_id": "1" * 16}])
    assert isinstance(kept, Row) and kept.sample.span_id == "1" * 16  # a column names the span it judged
