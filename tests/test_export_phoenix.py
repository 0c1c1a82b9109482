"""``assay export --to phoenix``: spans over OTLP, then span annotations through ``arize-phoenix-client``.

The server here is a loopback stand-in for ``phoenix serve``: it takes the OTLP spans
(``POST /v1/traces``) and the annotations (``POST /v1/span_annotations?sync=true``) and
answers as Phoenix 20.26 answered the same requests on loopback (the ids of the annotations
it stored), and it can do what a real server cannot be made to do on demand: answer 404 a
set number of times (spans not stored yet), refuse every annotation. What Phoenix itself
makes of an export (the annotation on the right span, no duplicates, its API reading them
back) is tests/test_phoenix_server.py, against a real ``phoenix serve`` from ``make phoenix``.
"""

from __future__ import annotations

import json
import threading
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

pytest.importorskip("phoenix.client", reason="assay[phoenix] is not installed (make install adds it)")
pytest.importorskip("opentelemetry.sdk", reason="assay[phoenix] is not installed (make install adds it)")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from test_export_traces import ROWS, SPAN, judge_fn


class PhoenixStandIn:
    """Takes OTLP spans and span annotations.

    ``annotation_status`` answers the annotations (200, or a refusal); ``not_yet`` answers
    that many annotation requests 404 first, as a real Phoenix does while the spans it was
    just sent are not stored yet.
    """

    def __init__(self, annotation_status: int = 200, not_yet: int = 0) -> None:
        self.annotation_status = annotation_status
        self.not_yet = not_yet
        self.spans: list[str] = []
        self.annotations: list[tuple[str, dict[str, Any]]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                path, _, query = self.path.partition("?")
                if path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    stand_in.spans += [
                        s.span_id.hex() for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
                    ]
                    self._reply(200, b"", "application/x-protobuf")
                elif path == "/v1/span_annotations":
                    data = json.loads(body)["data"]
                    stand_in.annotations += [(query, item) for item in data]
                    status = 404 if stand_in.not_yet > 0 else stand_in.annotation_status
                    stand_in.not_yet -= 1
                    if status != 200:
                        self._reply(status, b'{"detail": "Span not found"}', "application/json")
                        return
                    ids = [{"id": f"U3BhbkFubm90YXRpb246{i}"} for i in range(len(data))]
                    self._reply(200, json.dumps({"data": ids}).encode(), "application/json")
                else:
                    self._reply(404, b"", "text/plain")

            def _reply(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> PhoenixStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    store = tmp_path / "runs.sqlite"
    result = evaluate(str(data), [Faithfulness(strategy="batch")], FunctionJudge(judge_fn, per_statement=False),
                      store=store, progress=False)  # fmt: skip
    assert result.run_id is not None
    return store, result.run_id


@pytest.fixture
def phoenix_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PHOENIX_ENDPOINT", "PHOENIX_COLLECTOR_ENDPOINT", "PHOENIX_BASE_URL", "PHOENIX_HOST", "PHOENIX_PORT",
                 "PHOENIX_API_KEY", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")


def test_one_endpoint_variable_sends_the_spans_and_annotates_the_judged_spans(
    stored: tuple[Path, str], phoenix_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_id = stored
    monkeypatch.setattr("assay.run._export._phoenix.ANNOTATION_WAITS", (0.05, 0.05))
    with PhoenixStandIn(not_yet=2) as phoenix:  # the spans are stored by the third request
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url)
        result = CliRunner().invoke(app, ["export", run_id, "--to", "phoenix", "--store", str(store), "-m",
                                          "faithfulness=0.8"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "sent 3 of 3 evaluations" in result.output and f"to phoenix at {phoenix.url}" in result.output
    assert len(phoenix.annotations) == 3 * 3  # asked again after each 404, then stored
    by = {item["metadata"]["assay.sample_id"]: (query, item) for query, item in phoenix.annotations}
    query, linked = by["linked"]
    assert query == "sync=true" and linked["span_id"] == SPAN  # on the span the row judged
    assert (linked["name"], linked["annotator_kind"]) == ("faithfulness", "LLM")
    assert linked["result"]["score"] == pytest.approx(0.5) and linked["result"]["label"] == "fail"
    assert linked["result"]["explanation"].startswith("Grass is red.: not in the context")
    assert linked["identifier"] == f"assay:{run_id}:0"
    broken = by["broken"][1]
    assert broken["result"] == {"label": "unscored", "explanation": broken["result"]["explanation"]}
    assert broken["metadata"]["error.type"] == "parse_failure"
    # The row without ids: its annotation is on its own EVALUATOR span, which went over OTLP first.
    assert by["bare"][1]["span_id"] in phoenix.spans and by["bare"][1]["span_id"] != SPAN


def test_a_refused_annotation_exits_non_zero_and_says_what_was_not_sent(
    stored: tuple[Path, str], phoenix_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_id = stored
    monkeypatch.setattr("assay.run._export._phoenix.ANNOTATION_WAITS", (0.05,))
    with RunStore(store) as runs:
        before = list(runs.records(run_id))
    with PhoenixStandIn(annotation_status=404) as phoenix:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url)
        result = CliRunner().invoke(app, ["export", run_id, "--to", "phoenix", "--store", str(store)])
        with pytest.raises(ExportError):
            from assay.integrations.traces import export_run

            export_run(store, run_id, "phoenix")
    assert result.exit_code == 1, result.output
    assert "sent 0 of 3 evaluations" in result.output and "404" in result.output
    with RunStore(store) as runs:
        assert list(runs.records(run_id)) == before
