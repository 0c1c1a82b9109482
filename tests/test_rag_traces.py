"""RAG rows read straight from a file of spans (issue 67 item 2): one row per trace, keeping its ids.

The exports are written here: OpenInference spans in OTLP JSON, ids in hex (OTLP JSON) and
base64 (protobuf's JSON mapping), as Phoenix and the OpenTelemetry Collector write them.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.errors import SampleError
from assay.run import RunStore
from assay.run._data import read_rows
from assay.run._data._rows import Row

RAG_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT = "00f067aa0ba902b7"
RETRIEVER = "53995c3f42cd8ad8"
LLM = "5fb397be34d26b51"
BARE_TRACE = "0af7651916cd43dd8448eb211c80319c"  # written in base64 below
BARE_ROOT = "b7ad6b7169203331"
BARE_LLM = "e457b5a2e4d86bd1"


def b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def span(trace: str, span_id: str, parent: str | None, name: str, start: int, **attrs: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start),
        "attributes": [attr(k.replace("__", "."), v) for k, v in attrs.items()],
    }
    if parent is not None:
        out["parentSpanId"] = parent
    return out


def rag_spans(*, root_io: bool = True) -> list[dict[str, Any]]:
    """A complete RAG trace (hex ids): a chain, its retriever (two documents), its LLM call."""
    io = {"input__value": "What colour is the sky?", "output__value": "The sky is blue."} if root_io else {}
    return [
        span(RAG_TRACE, LLM, ROOT, "ChatCompletion", 3, openinference__span__kind="LLM",
             llm__input_messages__0__message__role="system", llm__input_messages__0__message__content="Answer.",
             llm__input_messages__1__message__role="user", llm__input_messages__1__message__content="What colour?",
             llm__output_messages__0__message__role="assistant",
             llm__output_messages__0__message__content="Blue, the sky is."),
        span(RAG_TRACE, ROOT, None, "rag", 1, openinference__span__kind="CHAIN", **io),
        span(RAG_TRACE, RETRIEVER, ROOT, "retrieve", 2, openinference__span__kind="RETRIEVER",
             retrieval__documents__0__document__content="The sky is blue.",
             retrieval__documents__0__document__id="d1",
             retrieval__documents__1__document__content="Grass is green."),
    ]  # fmt: skip


def bare_spans() -> list[dict[str, Any]]:
    """A trace without a retriever span, its ids in base64."""
    return [
        span(b64(BARE_TRACE), b64(BARE_ROOT), None, "rag", 10, openinference__span__kind="CHAIN",
             input__value="Who wrote it?", output__value="Nobody knows."),
        span(b64(BARE_TRACE), b64(BARE_LLM), b64(BARE_ROOT), "ChatCompletion", 11, openinference__span__kind="LLM"),
    ]  # fmt: skip


def export(*spans: dict[str, Any]) -> dict[str, Any]:
    scope = {"scope": {"name": "openinference"}, "spans": list(spans)}
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [scope]}]}


def read(path: Path, required: tuple[str, ...] = ()) -> list[Any]:
    return [
        item.sample.model_dump(include={"id", "question", "answer", "contexts", "trace_id", "span_id"})
        if isinstance(item, Row)
        else str(item)
        for item in read_rows(path, required=required)
    ]


COMPLETE = {
    "id": RAG_TRACE,
    "question": "What colour is the sky?",
    "answer": "The sky is blue.",
    "contexts": ("The sky is blue.", "Grass is green."),
    "trace_id": RAG_TRACE,
    "span_id": ROOT,
}


def test_an_otlp_export_of_a_rag_app_is_one_row_per_trace_and_a_trace_without_a_retriever_is_a_row_error_naming_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(export(*rag_spans(), *bare_spans()), indent=2))
    assert read(path) == [
        COMPLETE,
        f"{path}: trace {BARE_TRACE}: no contexts (no RETRIEVER span)",
    ]


def test_without_output_on_the_root_the_llm_span_gives_the_question_and_answer_and_is_the_judged_span(
    tmp_path: Path,
) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps([export(*rag_spans(root_io=False))]))  # a list of exports
    assert read(path) == [
        COMPLETE | {"question": "What colour?", "answer": "Blue, the sky is.", "span_id": LLM},
    ]


def test_a_trace_lacking_several_parts_names_each(tmp_path: Path) -> None:
    lone = span(RAG_TRACE, ROOT, None, "retrieve", 1, openinference__span__kind="RETRIEVER")
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(export(lone)))
    assert read(path) == [
        f"{path}: trace {RAG_TRACE}: no a question (no input.value on the root span, no user message on an LLM "
        "span); no an answer (no output.value on the root span, no output on an LLM span); no contexts (the "
        "RETRIEVER spans hold no retrieval.documents.<i>.document.content)"
    ]


@pytest.mark.parametrize("name", ["spans.json", "spans.jsonl"])
def test_collector_json_lines_one_export_per_line_read_as_one_file_of_traces(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    first, second, third = rag_spans()
    path.write_text("\n".join(json.dumps(export(s)) for s in (second, third, first)) + "\n")  # one batch per span
    assert read(path) == [COMPLETE]


def test_a_file_mixing_agent_and_rag_traces_reads_the_agent_trace_as_a_trace_row_and_a_rag_metric_refuses_it(
    tmp_path: Path,
) -> None:
    from test_trace_ids import ROOT_SPAN, TRACE_ID, span_list, spans

    path = tmp_path / "spans.json"
    path.write_text(json.dumps(export(*rag_spans(), *span_list(spans()))))
    items = list(read_rows(path))
    assert isinstance(items[0], Row) and items[0].sample.contexts == COMPLETE["contexts"]
    agent = items[1]
    assert isinstance(agent, Row) and agent.sample.trace and agent.sample.contexts == ()
    assert (agent.sample.id, agent.sample.trace_id, agent.sample.span_id) == (TRACE_ID, TRACE_ID, ROOT_SPAN)
    assert [m.role for m in agent.sample.trace][:2] == ["system", "user"]
    refused = list(read_rows(path, required=("contexts",)))[1]
    assert isinstance(refused, SampleError)
    assert str(refused) == f"{path}: trace {TRACE_ID}: missing or empty field 'contexts'"


def test_a_file_of_agent_traces_only_keeps_reading_every_trace_as_an_agent_trace(tmp_path: Path) -> None:
    from test_trace_ids import span_list, spans

    plain = span(BARE_TRACE, BARE_ROOT, None, "chat", 1, openinference__span__kind="LLM",
                 llm__input_messages__0__message__role="user", llm__input_messages__0__message__content="Hi",
                 llm__output_messages__0__message__role="assistant",
                 llm__output_messages__0__message__content="Hello")  # fmt: skip
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(export(*span_list(spans()), plain)))
    items = list(read_rows(path))
    assert all(isinstance(i, Row) and i.sample.trace for i in items) and len(items) == 2
    assert [m.content for m in items[1].sample.trace] == ["Hi", "Hello"]  # type: ignore[union-attr]


def test_a_json_array_of_rows_holding_otlp_traces_in_a_column_is_still_rows(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"id": "r", "question": "q", "answer": "a", "trace": export(*rag_spans())}]))
    (item,) = read_rows(path)
    assert isinstance(item, Row) and item.sample.id == "r" and item.sample.trace_id == RAG_TRACE


def test_assay_run_scores_the_complete_trace_reports_the_other_and_export_puts_the_score_on_its_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="assay[otel] is not installed (make install adds it)")
    from assay.testing import FakeOpenAIServer
    from test_export_traces import Collector, judge_fn

    for signal in ("TRACES_ENDPOINT", "LOGS_ENDPOINT", "PROTOCOL"):
        monkeypatch.delenv(f"OTEL_EXPORTER_OTLP_{signal}", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spans.json").write_text(json.dumps(export(*rag_spans(), *bare_spans())))
    store = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(lambda body: judge_fn(body["messages"], None)) as judge:
        args = ["run", "spans.json", "-m", "faithfulness", "--set", "faithfulness.strategy=batch",
                "--judge", "openai:fake", "--base-url", judge.base_url, "--store", str(store)]  # fmt: skip
        result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": "sk-test", "COLUMNS": "200"})
    assert result.exit_code == 2, result.output  # evaluated, but an input row was invalid
    assert f"trace {BARE_TRACE}: no contexts (no RETRIEVER span)" in result.output
    with RunStore(store) as runs:
        run_id = runs.latest()
        (record,) = runs.records(run_id)
    assert (record["sample"]["trace_id"], record["sample"]["span_id"]) == (RAG_TRACE, ROOT)
    assert record["scores"]["faithfulness"]["value"] == 1.0

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    with Collector([]) as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        out = CliRunner().invoke(app, ["export", run_id, "--store", str(store), "--to", "otlp"])
        assert out.exit_code == 0, out.output
    sent = [
        s
        for path, body in collector.requests
        if path == "/v1/traces"
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
        if s.links
    ]
    (evaluator,) = sent
    assert evaluator.trace_id.hex() == RAG_TRACE and evaluator.links[0].span_id.hex() == ROOT


def test_the_guides_span_file_is_the_export_these_tests_read() -> None:
    fixture = Path(__file__).parent / "fixtures" / "traces" / "rag_spans.json"
    assert json.loads(fixture.read_text()) == export(*rag_spans(), *bare_spans())


def phoenix(otlp_spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The spans as Phoenix's REST API gives them: hex ids in a context, ISO times, nested attributes."""
    from datetime import datetime

    def hex_id(value: str, size: int) -> str:
        return value if len(value) == 2 * size else base64.b64decode(value).hex()

    out = []
    for s in otlp_spans:
        attributes: dict[str, Any] = {}
        for a in s["attributes"]:
            *parents, leaf = a["key"].split(".")
            node = attributes
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = a["value"]["stringValue"]
        docs = attributes.get("retrieval", {}).get("documents")
        if docs:  # Phoenix keeps a list where OTLP has indexed keys
            attributes["retrieval"]["documents"] = [docs[k] for k in sorted(docs)]
        seconds = int(s["startTimeUnixNano"]) // 1_000_000_000 + int(s["startTimeUnixNano"]) % 1000  # same order
        kind = attributes["openinference"]["span"]["kind"]
        span = {"id": "U3Bhbjox", "name": s["name"], "span_kind": kind, "status_code": "OK",
                "context": {"trace_id": hex_id(s["traceId"], 16), "span_id": hex_id(s["spanId"], 8)},
                "parent_id": hex_id(s["parentSpanId"], 8) if "parentSpanId" in s else None,
                "start_time": datetime.fromtimestamp(seconds, UTC).isoformat(),
                "end_time": datetime.fromtimestamp(seconds + 1, UTC).isoformat(),
                "attributes": attributes, "events": []}  # fmt: skip
        out.append(span)
    return out


@pytest.mark.parametrize("shape", ["page", "list", "pages as lines"])
def test_a_phoenix_span_export_reads_as_the_otlp_export_it_stands_for(tmp_path: Path, shape: str) -> None:
    spans = phoenix([*rag_spans(), *bare_spans()])
    path = tmp_path / "phoenix_spans.json"
    if shape == "page":
        path.write_text(json.dumps({"data": spans, "next_cursor": None}, indent=2))
    elif shape == "list":
        path.write_text(json.dumps(spans))
    else:
        path.write_text("\n".join(json.dumps({"data": [s], "next_cursor": None}) for s in spans) + "\n")
    assert read(path) == [COMPLETE, f"{path}: trace {BARE_TRACE}: no contexts (no RETRIEVER span)"]
