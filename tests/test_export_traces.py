"""``assay export --to otlp``: a stored run's scores as EVALUATOR spans and gen_ai.evaluation.result events.

Read back through opentelemetry-sdk's in-memory exporters, and through a loopback OTLP/HTTP
server started here that decodes what the standard exporter sends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay import Faithfulness, evaluate
from assay.cli import app
from assay.errors import ExportError
from assay.models import FunctionJudge
from assay.run import RunStore

pytest.importorskip("opentelemetry.sdk", reason="assay[otel] is not installed (make install adds it)")

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from assay.integrations.traces import export_run

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"
KEY = "sk-live-abcdefghijklmnopqrstuvwx"


def judge_fn(messages: Any, request: Any) -> str:
    """Statements are the answer's sentences; one is supported when 'sky' is in it; 'GARBLE' breaks the reply."""
    user = messages[-1]["content"]
    if "GARBLE" in user:
        return "this is not JSON"
    if "<answer>" in user:
        answer = user.split("<answer>\n")[1].split("\n</answer>")[0]
        return json.dumps({"statements": [s.strip() + "." for s in answer.split(".") if s.strip()]})
    items = user.split("<statements>\n")[1].split("\n</statements>")[0].splitlines()
    verdicts = [{"statement": t, "reason": f"not in the context ({KEY})", "verdict": int("sky" in t)}
                for t in (i.split("] ", 1)[1] for i in items)]  # fmt: skip
    return json.dumps({"verdicts": verdicts})


ROWS = [
    {"id": "linked", "question": "Colour?", "answer": "The sky is blue. Grass is red.",
     "contexts": ["The sky is blue."], "trace_id": TRACE, "span_id": SPAN},
    {"id": "bare", "question": "Colour?", "answer": "The sky is blue.", "contexts": ["The sky is blue."]},
    {"id": "broken", "question": "Colour?", "answer": "GARBLE the sky.", "contexts": ["The sky is blue."],
     "trace_id": "1" * 32, "span_id": "2" * 16},
]  # fmt: skip


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    store = tmp_path / "runs.sqlite"
    judge = FunctionJudge(judge_fn, per_statement=False)
    result = evaluate(str(data), [Faithfulness(strategy="batch")], judge, store=store, progress=False)
    assert result.run_id is not None
    return store, result.run_id


def exported(store: Path, run_id: str, **kwargs: Any) -> tuple[list[Any], list[Any], Any]:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    report = export_run(store, run_id, "otlp", span_exporter=spans, log_exporter=logs, **kwargs)
    return list(spans.get_finished_spans()), list(logs.get_finished_logs()), report


def hex_ids(span: Any) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def test_each_score_is_an_evaluator_span_in_the_rows_trace_linked_to_the_judged_span(stored: tuple[Path, str]) -> None:
    spans, _, report = exported(*stored, thresholds={"faithfulness": 0.8})
    evaluators = {
        s.attributes["assay.sample_id"]: s for s in spans if s.attributes.get("openinference.span.kind") == "EVALUATOR"
    }
    linked = evaluators["linked"]
    assert hex_ids(linked)[0] == TRACE and linked.parent is None
    (link,) = linked.links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == (TRACE, SPAN)
    attrs = linked.attributes
    assert attrs["evaluations.0.evaluation.name"] == "faithfulness"
    assert attrs["evaluations.0.evaluation.score"] == pytest.approx(0.5)
    assert attrs["evaluations.0.evaluation.label"] == "fail"  # 0.5 < 0.8
    assert attrs["evaluations.0.evaluation.annotator_kind"] == "LLM"
    explanation = attrs["evaluations.0.evaluation.explanation"]
    assert explanation.startswith("Grass is red.: not in the context") and "The sky" not in explanation  # failing only
    assert KEY not in explanation and "[redacted]" in explanation  # a key the judge quoted is masked
    assert evaluators["bare"].attributes["evaluations.0.evaluation.label"] == "pass"
    broken = evaluators["broken"].attributes
    assert broken["evaluations.0.evaluation.label"] == "unscored" and broken["error.type"] == "parse_failure"
    assert "evaluations.0.evaluation.score" not in broken  # never a made-up number
    # Each judge call a child span of its evaluator, with its model and tokens.
    calls = [s for s in spans if s.parent is not None and s.parent.span_id == linked.context.span_id]
    with RunStore(stored[0]) as runs:
        stored_calls = {r["id"]: len(r["scores"]["faithfulness"]["calls"]) for r in runs.records(stored[1])}
    assert len(calls) == stored_calls["linked"] >= 1 and all(hex_ids(c)[0] == TRACE for c in calls)
    assert {c.attributes["gen_ai.request.model"] for c in calls} == {"function"}
    assert all("assay.judge.cached" in c.attributes and "gen_ai.usage.input_tokens" in c.attributes for c in calls)
    # The row without ids: a trace of its own, no link, and the report says so.
    bare_trace = hex_ids(evaluators["bare"])[0]
    assert evaluators["bare"].links == () and bare_trace not in (TRACE, "1" * 32)
    assert report.rows_own_trace == 1 and report.n_sent == report.n_evaluations == 3 and report.ok
    assert any("1 of 3 results had no trace id" in line for line in report.lines())


def test_each_score_is_a_gen_ai_evaluation_result_event_on_the_judged_span(stored: tuple[Path, str]) -> None:
    _, logs, _ = exported(*stored, thresholds={"faithfulness": 0.8})
    by_sample = {log.log_record.attributes["assay.sample_id"]: log.log_record for log in logs}
    linked = by_sample["linked"]
    assert linked.event_name == "gen_ai.evaluation.result"
    assert (f"{linked.trace_id:032x}", f"{linked.span_id:016x}") == (TRACE, SPAN)
    assert linked.attributes["gen_ai.evaluation.name"] == "faithfulness"
    assert linked.attributes["gen_ai.evaluation.score.value"] == pytest.approx(0.5)
    assert linked.attributes["gen_ai.evaluation.score.label"] == "fail"
    broken = by_sample["broken"].attributes
    assert broken["gen_ai.evaluation.score.label"] == "unscored" and broken["error.type"] == "parse_failure"
    assert "gen_ai.evaluation.score.value" not in broken


def test_without_a_threshold_a_scored_metric_is_sent_unlabelled_and_the_report_says_so(
    stored: tuple[Path, str],
) -> None:
    spans, _, report = exported(*stored)
    labels = [s.attributes.get("evaluations.0.evaluation.label") for s in spans if s.name == "faithfulness"]
    assert sorted(map(str, labels)) == ["None", "None", "unscored"]
    assert report.unlabelled_metrics == ("faithfulness",)
    assert any("no threshold for faithfulness" in line for line in report.lines())


def test_a_repeated_export_sends_the_same_ids_so_nothing_is_duplicated(stored: tuple[Path, str]) -> None:
    first, first_logs, _ = exported(*stored)
    second, second_logs, _ = exported(*stored)
    ids = [hex_ids(s) for s in first]
    assert len(set(ids)) == len(ids)  # no two spans share an id within an export
    assert ids == [hex_ids(s) for s in second]
    assert [(r.log_record.trace_id, r.log_record.span_id) for r in first_logs] == [
        (r.log_record.trace_id, r.log_record.span_id) for r in second_logs
    ]
    with RunStore(stored[0]) as runs:  # a second run of the same rows gets ids of its own
        assert runs.spec(stored[1])


class Collector:
    """A loopback OTLP/HTTP receiver: decodes each request, answers with the next status of ``statuses``."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.requests: list[tuple[str, bytes]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                collector.requests.append((self.path, body))
                status = collector.statuses.pop(0) if collector.statuses else 200
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def span_ids(self) -> list[str]:
        out = []
        for path, body in self.requests:
            if path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                out += [s.span_id.hex() for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        return out


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    yield


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_the_command_sends_to_the_endpoint_the_standard_variables_name(
    stored: tuple[Path, str], otel_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_id = stored
    with Collector([]) as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        code, out = cli("export", run_id, "--to", "otlp", "--store", str(store), "-m", "faithfulness=0.8")
    assert code == 0, out
    assert "sent 3 of 3 evaluations" in out and "1 of 3 results had no trace id" in out
    assert sorted({path for path, _ in collector.requests}) == ["/v1/logs", "/v1/traces"]
    with RunStore(store) as runs:
        n_calls = sum(len(r["scores"]["faithfulness"]["calls"]) for r in runs.records(run_id))
    ids = collector.span_ids()
    assert len(ids) == len(set(ids)) == 3 + n_calls  # an evaluator span per result, a span per judge call
    (logs_body,) = [body for path, body in collector.requests if path == "/v1/logs"]
    events = [
        r
        for rl in ExportLogsServiceRequest.FromString(logs_body).resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    ]
    assert {e.event_name for e in events} == {"gen_ai.evaluation.result"}
    assert TRACE in {e.trace_id.hex() for e in events}


def test_a_failing_endpoint_exits_non_zero_says_what_was_not_sent_and_leaves_the_run_intact(
    stored: tuple[Path, str], otel_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_id = stored
    with RunStore(store) as runs:
        before = (list(runs.records(run_id)), runs.info(run_id).status)
    monkeypatch.setattr("assay.run._export._BATCH_RESULTS", 1)  # a request per result
    with Collector([200, 200, 400]) as collector:  # the first result's spans and events, then a refusal
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        code, out = cli("export", run_id, "--store", str(store))
    assert code == 1, out
    assert "sent 1 of 3 evaluations (1 of 3 results)" in out
    assert "not sent: 2 evaluations, from input line 2 on" in out and "the run store is unchanged" in out
    with RunStore(store) as runs:
        assert (list(runs.records(run_id)), runs.info(run_id).status) == before
    with pytest.raises(ExportError) as info, Collector([400]) as collector:  # from Python: the report on the error
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        export_run(store, run_id)
    assert info.value.report.n_sent == 0  # type: ignore[attr-defined]


def test_a_grpc_protocol_is_refused_with_what_to_do(stored: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    code, out = cli("export", stored[1], "--store", str(stored[0]))
    assert code == 1 and "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in out and "4318" in out


def test_a_row_read_from_an_otlp_trace_is_scored_on_its_root_span_by_a_code_annotator(tmp_path: Path) -> None:
    from assay.metrics import ToolCallAccuracy
    from test_trace_ids import CALLS, ROOT_SPAN, TRACE_ID, spans

    data = tmp_path / "agent.jsonl"
    data.write_text(json.dumps({"id": "a", "trace": spans(), "reference_tool_calls": CALLS}) + "\n")
    store = tmp_path / "runs.sqlite"
    result = evaluate(str(data), [ToolCallAccuracy()], store=store, progress=False)
    exported_spans, logs, report = exported(store, result.run_id or "")
    (evaluator,) = exported_spans  # a metric without a judge: no call spans
    assert hex_ids(evaluator)[0] == TRACE_ID and f"{evaluator.links[0].context.span_id:016x}" == ROOT_SPAN
    assert evaluator.attributes["evaluations.0.evaluation.annotator_kind"] == "CODE"
    assert f"{logs[0].log_record.span_id:016x}" == ROOT_SPAN and report.rows_own_trace == 0


@pytest.mark.parametrize("limit", [40, 120, 500, 2000])
def test_an_explanation_is_the_failing_reasons_cut_at_the_limit_with_a_count_of_the_rest(limit: int) -> None:
    from assay._scores import Score, Verdict
    from assay.integrations.traces import explanation

    verdicts = tuple(
        Verdict(subject=f"Statement {i} says something.", value=i % 2, reason=f"reason {i}") for i in range(60)
    )
    text = explanation(Score(metric="faithfulness", value=0.5, verdicts=verdicts), limit)
    assert text is not None and len(text) <= limit
    lines = text.splitlines()
    shown = [line for line in lines if not line.startswith("(+")]
    assert all("says something" in line and int(line.split()[1]) % 2 == 0 for line in shown[:-1])  # failing only
    more = int(lines[-1].removeprefix("(+").split()[0]) if lines[-1].startswith("(+") else 0
    assert len(shown) + more == 30  # every failing verdict shown (whole or its head) or counted


def test_results_exported_as_they_finish_carry_the_ids_a_later_export_of_the_stored_run_sends(tmp_path: Path) -> None:
    from assay.integrations.traces import LiveExport

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    store = tmp_path / "runs.sqlite"
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    live = LiveExport("live-run", "otlp", batch_results=2, span_exporter=spans, log_exporter=logs)
    judge = FunctionJudge(judge_fn, per_statement=False)
    evaluate(str(data), [Faithfulness(strategy="batch")], judge, store=store, run_id="live-run", on_result=live,
             progress=False)  # fmt: skip
    report = live.close()
    assert report.ok and report.n_sent == 3 and report.rows_own_trace == 1
    later, later_logs, _ = exported(store, "live-run")
    assert sorted(hex_ids(s) for s in spans.get_finished_spans()) == sorted(hex_ids(s) for s in later)
    assert len(logs.get_finished_logs()) == len(later_logs) == 3


def test_a_refusal_while_the_run_goes_on_stops_the_sending_and_says_how_to_send_the_rest(
    stored: tuple[Path, str], otel_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.integrations.traces import LiveExport
    from assay.run import SampleResult

    store, run_id = stored
    with RunStore(store) as runs:
        results = list(runs.results(run_id))
    with Collector([400]) as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        live = LiveExport(run_id, "otlp", batch_results=1)
        for result in results:
            live(SampleResult(result.sample, result.scores, result.line, result.repeat))
        report = live.close()
    assert not report.ok and report.n_sent == 0 and report.n_evaluations == 3
    assert len([path for path, _ in collector.requests if path == "/v1/traces"]) == 1  # nothing after the refusal
    assert any(f"'assay export {run_id} --to otlp'" in line for line in report.lines())


def test_a_metric_named_without_a_threshold_needs_min(stored: tuple[Path, str]) -> None:
    store, run_id = stored
    code, out = cli("export", run_id, "--store", str(store), "-m", "faithfulness")
    assert code == 1 and "--metric faithfulness gives no threshold; write faithfulness=MIN, or give --min" in out
    code, out = cli("export", run_id, "--store", str(store), "-m", "faithfulness=1.5")
    assert code == 1 and "threshold" in out


def test_assay_run_export_sends_each_result_as_it_finishes_with_the_ids_of_a_later_export(
    tmp_path: Path, otel_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.testing import FakeOpenAIServer

    monkeypatch.chdir(tmp_path)
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS[:2]))  # both judged
    with FakeOpenAIServer(lambda body: judge_fn(body["messages"], None)) as judge, Collector([]) as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        run_args = ["run", "rows.jsonl", "--judge", "openai:fake", "--base-url", judge.base_url, "--export", "otlp"]
        result = CliRunner().invoke(app, run_args, env={"OPENAI_API_KEY": "sk-test", "COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "export: sent 2 of 2 evaluations" in result.output
        live_ids = sorted(collector.span_ids())
        collector.requests.clear()
        code, out = cli("export", "--latest", "--to", "otlp")
        assert code == 0, out
    assert live_ids == sorted(collector.span_ids()) and len(live_ids) == len(set(live_ids)) >= 2


def test_assay_run_export_to_an_unknown_destination_is_refused_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    result = CliRunner().invoke(app, ["run", str(tmp_path / "rows.jsonl"), "--export", "jaeger", "--store",
                                      str(tmp_path / "runs.sqlite")])  # fmt: skip
    assert result.exit_code == 1 and "export='jaeger' (--export): use one of otlp, phoenix, langfuse" in result.output
    assert not (tmp_path / "runs.sqlite").exists()
