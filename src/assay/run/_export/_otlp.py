"""Evaluations as OpenTelemetry data: an OpenInference EVALUATOR span and a ``gen_ai.evaluation.result`` event each.

- The EVALUATOR span (OpenInference ``spec/annotations.md``) sits in the row's trace,
  parented to nothing and carrying exactly one span link to the judged span; its
  attributes are ``evaluations.0.evaluation.{name,score,label,explanation,annotator_kind}``.
  Each judge call behind the score is a child span (model, tokens, latency as its
  duration, whether the cache answered).
- The OpenTelemetry GenAI event ``gen_ai.evaluation.result`` is a log record with that
  event name, in the judged span's context (the evaluator span's when the row has no
  span), with ``gen_ai.evaluation.{name,score.value,score.label,explanation}``,
  ``gen_ai.response.id`` and ``error.type`` (the unscored reason). The attribute names are
  written here: the semantic-conventions package's GenAI constants are deprecated.

Every span id is derived from the run, the row and the metric (:func:`~._plan.stable_id`),
so exporting again sends the same spans, which backends keep once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from assay._safety import redact_secrets
from assay._version import __version__
from assay.run._export._plan import Evaluation

__all__ = ["EVALUATION_EVENT", "OtlpSink", "evaluation_logs", "evaluation_spans", "resource"]

EVALUATION_EVENT = "gen_ai.evaluation.result"
_SCOPE = InstrumentationScope("assay", __version__)
_MAX_ERROR_CHARS = 500


def resource() -> Resource:
    """``service.name`` assay unless ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` say otherwise."""
    return Resource.create({"service.name": "assay"})


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _evaluator_attributes(e: Evaluation) -> dict[str, str | float | int | bool]:
    prefix = "evaluations.0.evaluation."
    out: dict[str, str | float | int | bool] = {
        "openinference.span.kind": "EVALUATOR",
        prefix + "name": e.metric,
        prefix + "annotator_kind": e.annotator_kind,
        "assay.run_id": e.run_id,
        "assay.sample_id": e.sample_id,
        "assay.line": e.line,
        "assay.repeat": e.repeat,
    }
    if e.value is not None:
        out[prefix + "score"] = e.value
    if e.label is not None:
        out[prefix + "label"] = e.label
    if e.explanation is not None:
        out[prefix + "explanation"] = e.explanation
    if e.threshold is not None:
        out["assay.threshold"] = e.threshold
    if e.unscored_reason is not None:
        out["error.type"] = e.unscored_reason
    if e.response_id is not None:
        out["gen_ai.response.id"] = e.response_id
    return out


def evaluation_spans(evaluations: Sequence[Evaluation], res: Resource, now_ns: int | None = None) -> list[ReadableSpan]:
    """The EVALUATOR span of each evaluation and a child span per judge call, ready for a span exporter."""
    now = time.time_ns() if now_ns is None else now_ns
    spans: list[ReadableSpan] = []
    for e in evaluations:
        durations = [max(1, int(call.latency_s * 1e9)) for call in e.calls]
        start = now - max(1_000_000, sum(durations))
        context = _context(e.trace_id, e.span_id)
        links = [Link(_context(e.trace_id, e.target_span_id))] if e.target_span_id is not None else []
        spans.append(
            ReadableSpan(
                name=e.metric,
                context=context,
                parent=None,
                resource=res,
                attributes=_evaluator_attributes(e),
                links=links,
                kind=SpanKind.INTERNAL,
                status=Status(StatusCode.UNSET),
                start_time=start,
                end_time=now,
                instrumentation_scope=_SCOPE,
            )
        )
        at = start
        for index, (call, duration) in enumerate(zip(e.calls, durations, strict=True)):
            model = redact_secrets(call.model)
            attributes: dict[str, str | float | int | bool] = {
                "openinference.span.kind": "LLM",
                "llm.model_name": model,
                "llm.token_count.prompt": call.usage.prompt_tokens,
                "llm.token_count.completion": call.usage.completion_tokens,
                "llm.token_count.total": call.usage.total_tokens,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.usage.input_tokens": call.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": call.usage.completion_tokens,
                "assay.judge.purpose": call.purpose,
                "assay.judge.cached": call.cached,
                "assay.judge.attempts": call.attempts,
                "assay.judge.latency_s": call.latency_s,
            }
            status = Status(StatusCode.UNSET)
            if call.error is not None:
                attributes["error.type"] = "judge_error"
                status = Status(StatusCode.ERROR, redact_secrets(call.error)[:_MAX_ERROR_CHARS])
            spans.append(
                ReadableSpan(
                    name=f"chat {model}",
                    context=_context(e.trace_id, e.call_span_id(index)),
                    parent=context,
                    resource=res,
                    attributes=attributes,
                    kind=SpanKind.CLIENT,
                    status=status,
                    start_time=at,
                    end_time=at + duration,
                    instrumentation_scope=_SCOPE,
                )
            )
            at += duration
    return spans


def evaluation_logs(
    evaluations: Sequence[Evaluation], res: Resource, now_ns: int | None = None
) -> list[ReadableLogRecord]:
    """One ``gen_ai.evaluation.result`` event per evaluation, as log records for a log exporter."""
    from opentelemetry.trace import set_span_in_context

    now = time.time_ns() if now_ns is None else now_ns
    records: list[ReadableLogRecord] = []
    for e in evaluations:
        parent = _context(e.trace_id, e.target_span_id if e.target_span_id is not None else e.span_id)
        attributes: dict[str, str | float | int | bool] = {"gen_ai.evaluation.name": e.metric}
        if e.value is not None:
            attributes["gen_ai.evaluation.score.value"] = e.value
        if e.label is not None:
            attributes["gen_ai.evaluation.score.label"] = e.label
        if e.explanation is not None:
            attributes["gen_ai.evaluation.explanation"] = e.explanation
        if e.response_id is not None:
            attributes["gen_ai.response.id"] = e.response_id
        if e.unscored_reason is not None:
            attributes["error.type"] = e.unscored_reason
        attributes["assay.run_id"] = e.run_id
        attributes["assay.sample_id"] = e.sample_id
        record = LogRecord(
            timestamp=now,
            observed_timestamp=now,
            context=set_span_in_context(NonRecordingSpan(parent)),
            attributes=attributes,
            event_name=EVALUATION_EVENT,
        )
        records.append(ReadableLogRecord(log_record=record, resource=res, instrumentation_scope=_SCOPE))
    return records


class OtlpSink:
    """Sends each batch of evaluations as spans, then as events; raises ``RuntimeError`` when an exporter fails."""

    def __init__(self, span_exporter: Any, log_exporter: Any, *, owned: bool) -> None:
        self.span_exporter = span_exporter
        self.log_exporter = log_exporter
        self.owned = owned
        self.resource = resource()

    def send(self, batch: Sequence[Evaluation]) -> None:
        """Export the spans and the events of ``batch``."""
        from opentelemetry.sdk._logs.export import LogRecordExportResult
        from opentelemetry.sdk.trace.export import SpanExportResult

        now = time.time_ns()
        if self.span_exporter.export(evaluation_spans(batch, self.resource, now)) != SpanExportResult.SUCCESS:
            raise RuntimeError("the OTLP endpoint did not accept the spans")
        if self.log_exporter.export(evaluation_logs(batch, self.resource, now)) != LogRecordExportResult.SUCCESS:
            raise RuntimeError("the OTLP endpoint accepted the spans but not the gen_ai.evaluation.result events")

    def close(self) -> None:
        """Shut down the exporters this sink made (not ones it was given)."""
        if self.owned:
            self.span_exporter.shutdown()
            self.log_exporter.shutdown()
