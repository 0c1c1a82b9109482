"""A real ``phoenix serve`` on loopback: RAG rows read from its traces, judged, exported, read back through its API.

The server is arize-phoenix 20.26.1 from ``.venv-phoenix`` (``make phoenix``; ``make test``
builds it), a venv of its own because arize-phoenix pins much of what assay's ``.venv``
holds. It is started once for the module on free loopback ports, with its SQLite database
in a temporary directory and nothing that reaches the internet (telemetry pixels, web
fonts, the agent assistant, the MCP server off). A small RAG app's traces go to it over
OTLP with opentelemetry-sdk; its own REST API (``GET /v1/projects/P/spans``) gives them
back as the file ``assay run`` reads; a loopback judge judges the rows; the scores go
back with ``--export phoenix`` and ``assay export --to phoenix``; Phoenix's API then
shows each annotation on the span the row came from.

tests/test_export_phoenix.py keeps the stand-in for what a real server cannot be made to
do on demand (answer 404 a set number of times, refuse every annotation).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.run import RunStore
from assay.testing import FakeOpenAIServer

pytest.importorskip("phoenix.client", reason="assay[phoenix] is not installed (make install adds it)")
pytest.importorskip("opentelemetry.sdk", reason="assay[phoenix] is not installed (make install adds it)")

from phoenix.client import Client

from phoenix_app import APP, PHOENIX, PROJECT, Phoenix, get_json, send_app_traces, serve


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    if not PHOENIX.exists():
        pytest.skip(f"no Phoenix server at {PHOENIX}: run make phoenix (make test builds it)")
    server = serve(tmp_path_factory.mktemp("phoenix"))
    try:
        problem = server.wait_ready()
        if problem is not None:
            pytest.fail(problem)
        yield server
    finally:
        server.stop()


def spans_export(url: str, expected: int, timeout_s: float = 30.0) -> dict[str, Any]:
    """Phoenix's REST span export of the project, once it holds ``expected`` spans (it ingests in the background)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            export: dict[str, Any] = get_json(f"{url}/v1/projects/{PROJECT}/spans?limit=1000")
        except OSError:  # 404 until the project's first span is stored
            export = {"data": []}
        if len(export["data"]) >= expected or time.monotonic() > deadline:
            return export
        time.sleep(0.5)


def test_rag_rows_read_from_phoenix_get_their_scores_back_on_the_spans_they_came_from(
    phoenix: Phoenix, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traced = send_app_traces(phoenix.url)
    export = spans_export(phoenix.url, expected=3 * len(APP))
    stored_spans = len(export["data"])
    assert stored_spans == 3 * len(APP), f"Phoenix stored {stored_spans} spans; its log ends:\n{phoenix.log_tail()}"
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(export))

    for name in list(os.environ):
        if name.startswith(("PHOENIX_", "OTEL_", "LANGFUSE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PHOENIX_ENDPOINT", phoenix.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url)
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", f"openinference.project.name={PROJECT}")
    store = tmp_path / "runs.sqlite"
    with FakeOpenAIServer() as judge:
        run = CliRunner().invoke(app, ["run", str(spans), "--judge", "openai:fake-judge", "--base-url", judge.base_url,
                                       "--store", str(store), "-m", "faithfulness", "--export", "phoenix"])  # fmt: skip
    assert run.exit_code == 0, run.output
    with RunStore(store) as runs:
        run_id = runs.latest()
        results = {r.sample.trace_id: r for r in runs.results(run_id)}
    by_trace: dict[str | None, str] = {trace: name for name, trace in traced.trace_ids.items()}
    assert set(results) == set(by_trace)  # one row per trace, each keeping its trace id
    scores = {by_trace[t]: r.scores["faithfulness"].value for t, r in results.items()}
    assert scores["complete"] == scores["llm_only"] == 1.0 and scores["gilded"] == 0.5, scores

    client = Client(base_url=phoenix.url)
    every_span = [*traced.judged.values(), *traced.other_spans]

    def annotations() -> list[Any]:
        return client.spans.get_span_annotations(span_ids=every_span, project_identifier=PROJECT)

    live = annotations()  # sent as the run went: no threshold yet, so scored results have no label
    assert sorted(a["span_id"] for a in live) == sorted(traced.judged.values())
    assert all("label" not in a["result"] or a["result"]["label"] is None for a in live), live

    for _ in range(2):  # exported twice: the second replaces the first, nothing is added
        out = CliRunner().invoke(app, ["export", run_id, "--to", "phoenix", "--store", str(store),
                                       "-m", "faithfulness=0.8"])  # fmt: skip
        assert out.exit_code == 0, out.output
        assert f"sent 3 of 3 evaluations (3 of 3 results) of run {run_id} to phoenix at {phoenix.url}" in out.output
        assert "labels: fail 1, pass 2" in out.output, out.output

    stored = annotations()
    assert len(stored) == len(APP), stored  # no duplicate from the live send nor from the second export
    on = {a["span_id"]: a for a in stored}
    assert set(on) == set(traced.judged.values()) and not set(on) & traced.other_spans
    for name, span_id in traced.judged.items():
        a = on[span_id]
        assert (a["name"], a["annotator_kind"], a["identifier"]) == ("faithfulness", "LLM", f"assay:{run_id}:0")
        assert a["result"]["score"] == pytest.approx(scores[name])
        assert a["result"]["label"] == ("pass" if scores[name] >= 0.8 else "fail")
        assert a["metadata"]["assay.run_id"] == run_id and a["metadata"]["threshold"] == 0.8
    assert "solid gold" in on[traced.judged["gilded"]]["result"]["explanation"]
    assert "1889" not in (on[traced.judged["complete"]]["result"]["explanation"] or "")

    # The traces now hold assay's EVALUATOR spans and judge calls too: read again, they are the same rows.
    again = tmp_path / "spans_again.json"
    # One EVALUATOR span a row, and a span a judge call: a verdicts call a row, a statement split for the one
    # answer of two sentences.
    with_assay = spans_export(phoenix.url, expected=3 * len(APP) + len(APP) + len(APP) + 1)
    kinds = sorted(s["span_kind"] for s in with_assay["data"])
    assert kinds == sorted(["CHAIN", "RETRIEVER"] * len(APP) + ["EVALUATOR"] * len(APP) + ["LLM"] * (2 * len(APP) + 1))
    again.write_text(json.dumps(with_assay))
    with FakeOpenAIServer() as judge:
        rerun = CliRunner().invoke(app, ["run", str(again), "--judge", "openai:fake-judge", "--base-url",
                                         judge.base_url, "--store", str(store), "-m", "faithfulness"])  # fmt: skip
    assert rerun.exit_code == 0, rerun.output
    with RunStore(store) as runs:
        second = {r.sample.trace_id: r for r in runs.results(runs.latest())}

    def rows(by_trace: dict[str | None, Any]) -> dict[str | None, tuple[Any, ...]]:
        return {t: (r.sample.question, r.sample.answer, r.sample.contexts, r.sample.span_id)
                for t, r in by_trace.items()}  # fmt: skip

    assert rows(second) == rows(results)


def test_a_server_whose_port_was_taken_before_it_bound_is_started_again_on_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in for phoenix serve with its real exit when the port is taken (uvicorn's line, exit 3):
    # the first start finds its port taken, the second serves /healthz.
    import socket
    import sys

    import phoenix_app

    stand_in = tmp_path / "phoenix"
    stand_in.write_text(
        f"#!{sys.executable}\n"
        "import http.server, os, sys\n"
        "port = int(os.environ['PHOENIX_PORT'])\n"
        "try:\n"
        "    server = http.server.HTTPServer(('127.0.0.1', port), http.server.SimpleHTTPRequestHandler)\n"
        "except OSError as err:\n"
        "    print(f'ERROR:    [Errno {err.errno}] error while attempting to bind on address (127.0.0.1, {port}): '\n"
        "          'address already in use', flush=True)\n"
        "    sys.exit(3)\n"
        "os.chdir(os.environ['PHOENIX_WORKING_DIR']); open('healthz', 'w').write('ok')\n"
        "server.serve_forever()\n"
    )
    stand_in.chmod(0o755)
    monkeypatch.setattr(phoenix_app, "PHOENIX", stand_in)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        probe = phoenix_app.free_port
        monkeypatch.setattr(phoenix_app, "free_port", lambda: next(ports, None) or probe())
        server = phoenix_app.serve(tmp_path)
        try:
            assert server.wait_ready(timeout_s=20) is None
            assert server.starts == 2 and server.url != f"http://127.0.0.1:{taken.getsockname()[1]}"
        finally:
            server.stop()

    # Any other exit is said as it is, never started again.
    stand_in.write_text(f"#!{sys.executable}\nimport sys\nprint('no such table: spans'); sys.exit(1)\n")
    (tmp_path / "again").mkdir()
    server = phoenix_app.serve(tmp_path / "again")
    problem = server.wait_ready(timeout_s=20)
    assert problem is not None and "exited with 1" in problem and "no such table" in problem and server.starts == 1
