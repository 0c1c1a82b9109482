"""Scores where teams already look: a run's verdicts written into the user's own traces.

What is sent, where and how is told once, in the public door's docstring
(:mod:`assay.integrations.traces`); the code sits in the run layer so the engine can send
results as they finish (``evaluate(export=...)``, ``assay run --export``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from assay._safety import redact_url
from assay.errors import ConfigError, ExportError, MissingExtraError
from assay.run._export._plan import (
    MAX_EXPLANATION_CHARS,
    Evaluation,
    evaluations,
    explanation,
    result_evaluations,
    stable_id,
)
from assay.run._results import SampleResult
from assay.run._store import RunStore

__all__ = [
    "DESTINATIONS",
    "MAX_EXPLANATION_CHARS",
    "Evaluation",
    "ExportReport",
    "LiveExport",
    "check_destination",
    "evaluations",
    "explanation",
    "export_run",
    "otlp_endpoint",
    "result_evaluations",
    "stable_id",
]

Destination = Literal["otlp", "phoenix", "langfuse"]
DESTINATIONS: tuple[Destination, ...] = ("otlp", "phoenix", "langfuse")

_BATCH_RESULTS = 64
"""Stored results (rows and repeats) per request: a failure loses at most one batch's place."""


class _Sink(Protocol):
    def send(self, batch: list[Evaluation]) -> None: ...

    def close(self) -> None: ...


@dataclass
class ExportReport:
    """What an export sent.

    Attributes:
        run_id: The run exported.
        to: The destination (``otlp``, ``langfuse``).
        destination: Where it went (an endpoint or host, credentials masked).
        n_results: Stored results (row and repeat) in the run.
        n_evaluations: (row, repeat, metric) evaluations in the run.
        n_sent: Evaluations sent and accepted.
        sent_results: Results whose evaluations were all sent.
        rows_own_trace: Results whose row had no trace id: their evaluations have a trace of their own.
        rows_unlinked: Results whose row named a trace but no span: no link, no observation.
        labels: Label -> evaluations with it (``pass``, ``fail``, ``unscored``, ``none``).
        unlabelled_metrics: Scored metrics that had no threshold, so no pass/fail label.
        error: Why the export stopped, or ``None`` when everything was sent.
        first_unsent_line: The input line of the first result not sent.
    """

    run_id: str
    to: str
    destination: str
    n_results: int = 0
    n_evaluations: int = 0
    n_sent: int = 0
    sent_results: int = 0
    rows_own_trace: int = 0
    rows_unlinked: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    unlabelled_metrics: tuple[str, ...] = ()
    error: str | None = None
    first_unsent_line: int | None = None

    @property
    def ok(self) -> bool:
        """Everything was sent."""
        return self.error is None and self.n_sent == self.n_evaluations

    def lines(self) -> list[str]:
        """The report in words, a line each (what ``assay export`` prints)."""
        out = [
            f"sent {self.n_sent} of {self.n_evaluations} evaluations ({self.sent_results} of {self.n_results} "
            f"results) of run {self.run_id} to {self.to} at {self.destination}"
        ]
        if self.rows_own_trace:
            out.append(
                f"{self.rows_own_trace} of {self.n_results} results had no trace id (no trace_id column, no "
                "OTLP trace): each was given a trace of its own"
            )
        if self.rows_unlinked:
            out.append(f"{self.rows_unlinked} results named a trace but no span: their evaluations link to no span")
        if self.labels:
            out.append("labels: " + ", ".join(f"{name} {n}" for name, n in sorted(self.labels.items())))
        if self.unlabelled_metrics:
            names = ", ".join(self.unlabelled_metrics)
            out.append(
                f"no threshold for {names}: scores sent without a pass/fail label "
                f"(give one: -m {self.unlabelled_metrics[0]}=0.8)"
            )
        if self.error is not None:
            unsent = self.n_evaluations - self.n_sent
            where = f", from input line {self.first_unsent_line} on" if self.first_unsent_line is not None else ""
            out.append(
                f"not sent: {unsent} evaluations{where} ({self.error}); the run store is unchanged, and exporting "
                f"again ('assay export {self.run_id} --to {self.to}') sends the same ids, so nothing is duplicated"
            )
        return out


def otlp_endpoint() -> str:
    """The traces endpoint the standard variables name (credentials masked), as the OTLP/HTTP exporter resolves it.

    Raises:
        ConfigError: ``OTEL_EXPORTER_OTLP_PROTOCOL`` (or the traces one) asks for gRPC.
    """
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = os.environ.get(name, "").strip()
        if protocol and protocol != "http/protobuf":
            raise ConfigError(
                f"{name}={protocol}: assay exports over OTLP/HTTP with protobuf (http/protobuf); point "
                "OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318 by default) and unset it"
            )
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return redact_url(traces) or traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return redact_url(base.rstrip("/") + "/v1/traces") or base


def _otlp_sink(span_exporter: Any, log_exporter: Any) -> tuple[_Sink, str]:
    try:
        from assay.run._export._otlp import OtlpSink
    except ImportError:
        raise MissingExtraError("opentelemetry-sdk", "otel", "assay export --to otlp") from None
    if span_exporter is not None and log_exporter is not None:
        return OtlpSink(span_exporter, log_exporter, owned=False), "the given exporters"
    endpoint = otlp_endpoint()
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise MissingExtraError("opentelemetry-exporter-otlp-proto-http", "otel", "assay export --to otlp") from None
    return OtlpSink(OTLPSpanExporter(), OTLPLogExporter(), owned=True), endpoint


def _phoenix_sink(span_exporter: Any, client: Any) -> tuple[_Sink, str]:
    try:
        from assay.run._export._phoenix import PhoenixSink
    except ImportError:
        raise MissingExtraError("opentelemetry-sdk", "phoenix", "assay export --to phoenix") from None
    if client is None:
        try:
            from phoenix.client import Client
        except ImportError:
            raise MissingExtraError("arize-phoenix-client", "phoenix", "assay export --to phoenix") from None
        client = Client()
    http = getattr(client, "_client", None)  # the client's httpx.Client, which holds the URL it resolved
    where = redact_url(str(getattr(http, "base_url", "") or "")) or "the given Phoenix client"
    if span_exporter is not None:
        return PhoenixSink(span_exporter, client, owned=False), where
    otlp_endpoint()  # a gRPC setting is refused here too
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return PhoenixSink(OTLPSpanExporter(), client, owned=True), where


def _langfuse_sink(client: Any) -> tuple[_Sink, str]:
    from assay.run._export._langfuse import LangfuseSink

    if client is not None:
        return LangfuseSink(client), "the given Langfuse client"
    if client is None:
        try:
            from langfuse import Langfuse
        except ImportError:
            raise MissingExtraError("langfuse", "langfuse", "assay export --to langfuse") from None
        if not os.environ.get("LANGFUSE_PUBLIC_KEY") or not os.environ.get("LANGFUSE_SECRET_KEY"):
            raise ConfigError(
                "assay export --to langfuse needs LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY (and LANGFUSE_BASE_URL "
                "for a server other than Langfuse Cloud), as the Langfuse SDK reads them"
            )
        client = Langfuse()
    host = os.environ.get("LANGFUSE_BASE_URL") or os.environ.get("LANGFUSE_HOST") or "Langfuse Cloud"
    return LangfuseSink(client), redact_url(host) or host


def check_destination(to: str) -> None:
    """Raise :class:`~assay.errors.MissingExtraError` unless the SDKs ``to`` needs are installed."""
    import importlib.util

    needs = {
        "otlp": (
            ("opentelemetry.sdk", "opentelemetry-sdk"),
            ("opentelemetry.exporter.otlp.proto.http", "opentelemetry-exporter-otlp-proto-http"),
        ),
        "phoenix": (("opentelemetry.sdk", "opentelemetry-sdk"), ("phoenix.client", "arize-phoenix-client")),
        "langfuse": (("langfuse", "langfuse"),),
    }
    extra = {"otlp": "otel"}.get(to, to)
    for module, package in needs.get(to, ()):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise MissingExtraError(package, extra, f"export to {to}")


def _sink(
    to: Destination, span_exporter: Any, log_exporter: Any, langfuse_client: Any, phoenix_client: Any
) -> tuple[_Sink, str]:
    if to == "otlp":
        return _otlp_sink(span_exporter, log_exporter)
    if to == "phoenix":
        return _phoenix_sink(span_exporter, phoenix_client)
    return _langfuse_sink(langfuse_client)


def export_run(
    store: RunStore | str | Path,
    run_id: str,
    to: Destination = "otlp",
    *,
    thresholds: Mapping[str, float] | None = None,
    span_exporter: Any = None,
    log_exporter: Any = None,
    langfuse_client: Any = None,
    phoenix_client: Any = None,
) -> ExportReport:
    """Send a stored run's evaluations to a trace backend (nothing is judged again; the store is only read).

    Args:
        store: The run store (or its path).
        run_id: The run.
        to: ``otlp``, ``phoenix`` or ``langfuse``.
        thresholds: Metric -> pass mark for the ``pass`` / ``fail`` label; a metric without
            one keeps its own (a combined grader's ``pass_threshold``) or is sent unlabelled.
        span_exporter: An OpenTelemetry span exporter to use instead of OTLP/HTTP (with
            ``log_exporter``; tests pass the SDK's in-memory ones).
        log_exporter: An OpenTelemetry log record exporter, with ``span_exporter``.
        langfuse_client: A ``langfuse.Langfuse`` client to use instead of one built from
            the ``LANGFUSE_*`` variables.
        phoenix_client: A ``phoenix.client.Client`` to use instead of one built from the
            environment (``PHOENIX_ENDPOINT``, else ``OTEL_EXPORTER_OTLP_ENDPOINT``).

    Returns:
        What was sent.

    Raises:
        ExportError: a batch was not accepted; ``.report`` says what was sent and what was not.
        MissingExtraError: the destination's extra is not installed.
        ConfigError: an unknown destination, or its settings are missing.
    """
    if to not in DESTINATIONS:
        raise ConfigError(f"unknown export destination {to!r}; use one of {', '.join(DESTINATIONS)}")
    runs = store if isinstance(store, RunStore) else RunStore(store)
    try:
        batches = list(evaluations(runs, run_id, thresholds))
    finally:
        if runs is not store:
            runs.close()
    sink, destination = _sink(to, span_exporter, log_exporter, langfuse_client, phoenix_client)
    report = _report(run_id, to, destination, batches)
    try:
        for start in range(0, len(batches), _BATCH_RESULTS):
            chunk = batches[start : start + _BATCH_RESULTS]
            flat = [e for result in chunk for e in result]
            try:
                sink.send(flat)
            except Exception as exc:  # an SDK's own error type: reported with what was sent
                report.error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, RuntimeError) else str(exc)
                report.first_unsent_line = chunk[0][0].line if chunk and chunk[0] else None
                raise ExportError("; ".join(report.lines()[:1] + report.lines()[-1:]), report=report) from None
            report.n_sent += len(flat)
            report.sent_results += len(chunk)
    finally:
        sink.close()
    return report


def _report(run_id: str, to: str, destination: str, batches: list[list[Evaluation]]) -> ExportReport:
    labels: dict[str, int] = {}
    unlabelled: dict[str, None] = {}
    own = unlinked = 0
    for result in batches:
        if result and result[0].own_trace:
            own += 1
        elif result and result[0].target_span_id is None:
            unlinked += 1
        for e in result:
            labels[e.label or "none"] = labels.get(e.label or "none", 0) + 1
            if e.label is None:
                unlabelled[e.metric] = None
    return ExportReport(
        run_id=run_id,
        to=to,
        destination=destination,
        n_results=len(batches),
        n_evaluations=sum(len(result) for result in batches),
        rows_own_trace=own,
        rows_unlinked=unlinked,
        labels=labels,
        unlabelled_metrics=tuple(unlabelled),
    )


class LiveExport:
    """Sends each result's evaluations as the run finishes it: ``assay run --export`` (``evaluate(on_result=...)``).

    The ids are those ``assay export`` derives for the same run, so exporting the stored
    run afterwards replaces, and never duplicates, what was sent live. A refused batch
    stops the sending (the run goes on, and its store keeps everything): :meth:`close`
    returns the report, whose ``error`` says what was not sent; ``assay export RUN`` sends
    it. The annotator kind is read from each result's own calls.

    Raises (at construction):
        MissingExtraError, ConfigError: as :func:`export_run`.
    """

    def __init__(
        self,
        run_id: str,
        to: Destination = "otlp",
        *,
        thresholds: Mapping[str, float] | None = None,
        batch_results: int = 16,
        span_exporter: Any = None,
        log_exporter: Any = None,
        langfuse_client: Any = None,
        phoenix_client: Any = None,
    ) -> None:
        if to not in DESTINATIONS:
            raise ConfigError(f"unknown export destination {to!r}; use one of {', '.join(DESTINATIONS)}")
        self.run_id = run_id
        self.thresholds = dict(thresholds or {})
        self.batch_results = batch_results
        self._sink, destination = _sink(to, span_exporter, log_exporter, langfuse_client, phoenix_client)
        self.report = ExportReport(run_id=run_id, to=to, destination=destination)
        self._pending: list[list[Evaluation]] = []
        self._lock = threading.Lock()

    def __call__(self, result: SampleResult) -> None:
        """Queue one finished result; send when a batch is full."""
        evaluations_ = result_evaluations(self.run_id, result, self.thresholds)
        with self._lock:
            self._count(evaluations_)
            self._pending.append(evaluations_)
            if len(self._pending) >= self.batch_results:
                self._flush()

    def _count(self, result: list[Evaluation]) -> None:
        report = self.report
        report.n_results += 1
        report.n_evaluations += len(result)
        if result and result[0].own_trace:
            report.rows_own_trace += 1
        elif result and result[0].target_span_id is None:
            report.rows_unlinked += 1
        for e in result:
            report.labels[e.label or "none"] = report.labels.get(e.label or "none", 0) + 1
            if e.label is None and e.metric not in report.unlabelled_metrics:
                report.unlabelled_metrics = (*report.unlabelled_metrics, e.metric)

    def _flush(self) -> None:
        chunk, self._pending = self._pending, []
        if not chunk or self.report.error is not None:
            return  # after a refusal nothing more is sent: 'assay export RUN' sends it all
        flat = [e for result in chunk for e in result]
        try:
            self._sink.send(flat)
        except Exception as exc:  # an SDK's own error type: reported, the run goes on
            self.report.error = str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}"
            return  # results finish out of input order: no "from line N on" here
        self.report.n_sent += len(flat)
        self.report.sent_results += len(chunk)

    def close(self) -> ExportReport:
        """Send what is left and return the report (``report.ok``: everything was sent)."""
        with self._lock:
            self._flush()
            self._sink.close()
        return self.report
