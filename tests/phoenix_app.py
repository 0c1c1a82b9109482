"""A real ``phoenix serve`` on loopback and a small traced RAG app: what tests/test_phoenix_server.py and
scripts/phoenix_screenshot.py both start.

The server comes from ``.venv-phoenix`` (``make phoenix``), on free loopback ports, its database
in a directory of the caller's, with nothing that reaches the internet (telemetry pixels, web
fonts, the agent assistant, the MCP server off). The app traces three questions over OTLP with
OpenInference attributes: a root CHAIN span, a RETRIEVER span with the documents, an LLM span;
one of them keeps its answer on the LLM span only, so the score belongs there.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PHOENIX = Path(__file__).resolve().parents[1] / ".venv-phoenix" / "bin" / "phoenix"
PROJECT = "rag-app"
READY_TIMEOUT_S = 180.0  # 38 s measured on the 2-core EPYC with a model job and a pip install beside it

# Each trace: question, answer, retrieved documents, and whether the root span holds the answer
# (else only the LLM span does, and the score belongs there).
APP = {
    "complete": ("When was the Eiffel Tower completed?", "The Eiffel Tower was completed in 1889.",
                 ["The Eiffel Tower was completed in 1889 for the World's Fair."], True),
    "gilded": ("What is the Eiffel Tower made of?", "The Eiffel Tower is made of wrought iron. Its tip is solid gold.",
               ["The Eiffel Tower is made of wrought iron.", "It was painted in 1968."], True),
    "llm_only": ("How tall is the Eiffel Tower?", "The Eiffel Tower is 330 metres tall.",
                 ["The Eiffel Tower is 330 metres tall since 2022."], False),
}  # fmt: skip


def free_port() -> int:
    """A port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def get_json(url: str) -> Any:
    """The JSON body of ``GET url``."""
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.load(reply)


PORT_TAKEN = "address already in use"
"""What ``phoenix serve`` (uvicorn) logs when a port it was given was taken in the meantime."""
STARTS = 3


@dataclass
class Phoenix:
    """A ``phoenix serve`` process with its database in ``work``: where it answers and where it logs.

    Its ports are probed free, then bound by the server a moment later; another process (a
    test worker's client socket takes an ephemeral port from the same range) can take one
    in between. A server that exits saying so is started again on new ports, up to
    ``STARTS`` times; any other exit is reported as it is.
    """

    work: Path
    url: str = ""
    log: Path = field(init=False)
    process: subprocess.Popen[bytes] = field(init=False)
    starts: int = 0

    def __post_init__(self) -> None:
        self.log = self.work / "server.log"
        self.start()

    def start(self) -> None:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_", "LANGFUSE_"))}
        env.update(
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(port),
            PHOENIX_GRPC_PORT=str(free_port()),
            PHOENIX_WORKING_DIR=str(self.work),
            PHOENIX_TELEMETRY_ENABLED="false",
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
            PHOENIX_DISABLE_AGENT_ASSISTANT="true",
            PHOENIX_ENABLE_MCP_SERVER="false",
        )
        with self.log.open("wb") as out:
            self.process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        self.starts += 1

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> str | None:
        """Until ``/healthz`` answers 200 (at :attr:`url`, which a new start changes): ``None``, or why it never did."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.process.poll() is not None:
                if PORT_TAKEN in self.log_tail().lower() and self.starts < STARTS:
                    self.start()
                    continue
                return (f"phoenix serve exited with {self.process.returncode} before answering "
                        f"{self.url}/healthz (start {self.starts} of at most {STARTS}); its log ends:\n"
                        f"{self.log_tail()}")  # fmt: skip
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as reply:
                    if reply.status == 200:
                        return None
            except OSError:
                pass
            if time.monotonic() > deadline:
                return (f"phoenix serve did not answer {self.url}/healthz with 200 within {timeout_s:.0f} s; "
                        f"its log ends:\n{self.log_tail()}")  # fmt: skip
            time.sleep(0.5)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serve(work: Path) -> Phoenix:
    """Start ``phoenix serve`` with its database in ``work``; the caller waits for it and stops it."""
    return Phoenix(work)


@dataclass
class Traced:
    """The app's trace and span ids, as the app itself saw them: where each score must land."""

    trace_ids: dict[str, str] = field(default_factory=dict)
    judged: dict[str, str] = field(default_factory=dict)  # row -> the span whose output is the answer
    other_spans: set[str] = field(default_factory=set)


def send_app_traces(url: str, project: str = PROJECT) -> Traced:
    """Trace the small RAG app (root CHAIN, RETRIEVER, LLM spans, OpenInference attributes) to ``url`` over OTLP."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource({"service.name": project, "openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("rag-app")
    traced = Traced()
    for name, (question, answer, documents, root_answers) in APP.items():
        with tracer.start_as_current_span("rag") as root:
            root.set_attribute("openinference.span.kind", "CHAIN")
            root.set_attribute("input.value", question)
            if root_answers:
                root.set_attribute("output.value", answer)
            with tracer.start_as_current_span("retrieve") as retriever:
                retriever.set_attribute("openinference.span.kind", "RETRIEVER")
                retriever.set_attribute("input.value", question)
                for i, doc in enumerate(documents):
                    retriever.set_attribute(f"retrieval.documents.{i}.document.content", doc)
            with tracer.start_as_current_span("generate") as llm:
                llm.set_attribute("openinference.span.kind", "LLM")
                llm.set_attribute("llm.model_name", "tiny-rag-model")
                llm.set_attribute("llm.input_messages.0.message.role", "user")
                llm.set_attribute("llm.input_messages.0.message.content", question)
                llm.set_attribute("llm.output_messages.0.message.role", "assistant")
                llm.set_attribute("llm.output_messages.0.message.content", answer)
        spans = {"rag": root, "retrieve": retriever, "generate": llm}
        ids = {n: f"{s.get_span_context().span_id:016x}" for n, s in spans.items()}
        traced.trace_ids[name] = f"{root.get_span_context().trace_id:032x}"
        traced.judged[name] = ids["rag"] if root_answers else ids["generate"]
        traced.other_spans |= set(ids.values()) - {traced.judged[name]}
    provider.shutdown()
    return traced
