"""Evaluations in Phoenix: the EVALUATOR and judge-call spans over OTLP, then span annotations through its REST API.

OTLP alone makes no annotation in Phoenix: its annotation columns and filters read
annotations, which come through ``POST /v1/span_annotations`` (``arize-phoenix-client``,
extra ``phoenix``). Each evaluation is one annotation named after the metric, on the judged
span (on its EVALUATOR span when the row has none): score, label, explanation, annotator
kind ``LLM`` (the metric asked a judge) or ``CODE``. Phoenix keeps one annotation per
(name, span, identifier); the identifier is ``assay:RUN:REPEAT``, so exporting a run again
replaces its annotations and another run's stay beside them. The GenAI log events are not
sent: Phoenix takes spans, not logs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from assay.integrations.traces._otlp import evaluation_spans, resource
from assay.integrations.traces._plan import Evaluation

__all__ = ["PhoenixSink", "annotation"]


def annotation(e: Evaluation) -> dict[str, Any]:
    """The span annotation of one evaluation, as ``log_span_annotations`` takes it."""
    result: dict[str, Any] = {}
    if e.value is not None:
        result["score"] = e.value
    if e.label is not None:
        result["label"] = e.label
    if e.explanation is not None:
        result["explanation"] = e.explanation
    metadata: dict[str, Any] = {"assay.run_id": e.run_id, "assay.sample_id": e.sample_id, "assay.line": e.line}
    if e.threshold is not None:
        metadata["threshold"] = e.threshold
    if e.unscored_reason is not None:
        metadata["error.type"] = e.unscored_reason
    return {
        "name": e.metric,
        "annotator_kind": e.annotator_kind,
        "span_id": e.target_span_id if e.target_span_id is not None else e.span_id,
        "result": result,
        "metadata": metadata,
        "identifier": f"assay:{e.run_id}:{e.repeat}",
    }


class PhoenixSink:
    """Sends each batch's spans over OTLP, then its annotations; raises when either is refused."""

    def __init__(self, span_exporter: Any, client: Any, *, owned: bool) -> None:
        self.span_exporter = span_exporter
        self.client = client
        self.owned = owned
        self.resource = resource()

    def send(self, batch: Sequence[Evaluation]) -> None:
        """Export the spans of ``batch``, then annotate the judged spans."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        if not batch:
            return
        if (
            self.span_exporter.export(evaluation_spans(batch, self.resource, time.time_ns()))
            != SpanExportResult.SUCCESS
        ):
            raise RuntimeError("the OTLP endpoint did not accept the spans")
        self.client.spans.log_span_annotations(span_annotations=[annotation(e) for e in batch], sync=True)

    def close(self) -> None:
        """Shut down the span exporter this sink made."""
        if self.owned:
            self.span_exporter.shutdown()
