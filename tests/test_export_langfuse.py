"""``assay export --to langfuse``: scores through the Langfuse SDK, recorded by a loopback server started here.

No Langfuse server installs from PyPI; the server below answers the SDK's score ingestion
(``POST /api/public/scores``) as Langfuse does (202, or 400 to refuse) and keeps what it got.
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

pytest.importorskip("langfuse", reason="assay[langfuse] is not installed (make install adds it)")

from langfuse import Langfuse

from assay.integrations.traces import export_run
from test_export_traces import ROWS, SPAN, TRACE, judge_fn

SECRET = "sk-lf-DO-NOT-LEAK-1234567890"


class LangfuseRecorder:
    """Answers ``POST /api/public/scores`` with the next status of ``statuses`` (202 once they run out)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.requests: list[tuple[str, Any, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw) if raw.startswith((b"[", b"{")) else raw
                recorder.requests.append((self.path, body, self.headers.get("Authorization", "")))
                status = recorder.statuses.pop(0) if recorder.statuses else 202
                reply = json.dumps({"message": "Accepted"} if status < 300 else {"message": "rejected"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LangfuseRecorder:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def scores(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for path, body, _ in self.requests:
            if path == "/api/public/scores":
                out += body if isinstance(body, list) else [body]
        return out


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, str]:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    store = tmp_path / "runs.sqlite"
    result = evaluate(str(data), [Faithfulness(strategy="batch")], FunctionJudge(judge_fn, per_statement=False),
                      store=store, progress=False)  # fmt: skip
    assert result.run_id is not None
    return store, result.run_id


def langfuse_at(url: str) -> Langfuse:
    # The SDK keeps one sender per public key in a process, bound to the first base URL: a key per server.
    return Langfuse(public_key=f"pk-lf-{url.rsplit(':', 1)[1]}", secret_key=SECRET, base_url=url)


def test_scores_go_on_the_trace_and_the_observation_the_row_judged(stored: tuple[Path, str]) -> None:
    with LangfuseRecorder([]) as server:
        report = export_run(
            *stored, "langfuse", thresholds={"faithfulness": 0.8}, langfuse_client=langfuse_at(server.url)
        )
    assert report.ok and report.n_sent == 3
    scores = server.scores()
    by = {(s["metadata"]["assay.sample_id"], s["name"]): s for s in scores}
    value = by[("linked", "faithfulness")]
    assert (value["traceId"], value["observationId"]) == (TRACE, SPAN)
    assert value["value"] == pytest.approx(0.5) and value["dataType"] == "NUMERIC"
    assert value["comment"].startswith("Grass is red.: not in the context") and "[redacted]" in value["comment"]
    label = by[("linked", "faithfulness.label")]
    assert (label["value"], label["dataType"], label["observationId"]) == ("fail", "CATEGORICAL", SPAN)
    # Unscored: no number, only the label with the reason; the row without ids: a trace of its own, no observation.
    assert ("broken", "faithfulness") not in by
    broken = by[("broken", "faithfulness.label")]
    assert broken["value"] == "unscored" and broken["metadata"]["error.type"] == "parse_failure"
    bare = by[("bare", "faithfulness")]
    assert "observationId" not in bare and len(bare["traceId"]) == 32 and bare["traceId"] != TRACE
    assert len(scores) == 5 and len({s["id"] for s in scores}) == 5


def test_a_repeated_export_sends_the_same_score_ids_so_langfuse_replaces_them(stored: tuple[Path, str]) -> None:
    ids = []
    for _ in range(2):
        with LangfuseRecorder([]) as server:
            export_run(*stored, "langfuse", langfuse_client=langfuse_at(server.url))
        ids.append(sorted(s["id"] for s in server.scores()))
    assert ids[0] == ids[1] and len(ids[0]) == len(set(ids[0])) == 3


def test_a_refused_batch_exits_non_zero_and_leaves_the_run_intact(
    stored: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_id = stored
    with RunStore(store) as runs:
        before = list(runs.records(run_id))
    with LangfuseRecorder([400]) as server, pytest.raises(ExportError) as info:
        export_run(store, run_id, "langfuse", langfuse_client=langfuse_at(server.url))
    assert info.value.report.n_sent == 0  # type: ignore[attr-defined]
    with LangfuseRecorder([400]) as server:
        for name, value in (("LANGFUSE_PUBLIC_KEY", "pk-lf-cli"), ("LANGFUSE_SECRET_KEY", SECRET),
                            ("LANGFUSE_BASE_URL", server.url)):  # fmt: skip
            monkeypatch.setenv(name, value)
        result = CliRunner().invoke(app, ["export", run_id, "--to", "langfuse", "--store", str(store)])
    assert result.exit_code == 1, result.output
    assert "sent 0 of 3 evaluations" in result.output and "not sent: 3 evaluations" in result.output
    assert SECRET not in result.output
    with RunStore(store) as runs:
        assert list(runs.records(run_id)) == before


def test_without_keys_the_command_says_which_variables_it_needs(
    stored: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LANGFUSE_PUBLIC_KEY", raising=False)
    monkeypatch.delenv("LANGFUSE_SECRET_KEY", raising=False)
    result = CliRunner().invoke(app, ["export", stored[1], "--to", "langfuse", "--store", str(stored[0])])
    assert result.exit_code == 1 and "LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY" in result.output
