"""Evaluations in Phoenix: the EVALUATOR and judge-call spans over OTLP, then span annotations through its REST API.

OTLP alone makes no annotation in Phoenix: its annotation columns and filters read
annotations, which come through ``POST /v1/span_annotations`` (``arize-phoenix-client``,
extra ``phoenix``). Each evaluation is one annotation named after the metric, on the judged
span (on its EVALUATOR span when the row has none): score, label, explanation, annotator
kind ``LLM`` (the metric asked a judge) or ``CODE``. Phoenix keeps one annotation per
(name, span, identifier); the identifier is ``assay:RUN:REPEAT``, so exporting a run again
replaces its annotations and another run's stay beside them. The GenAI log events are not
sent: Phoenix takes spans, not logs.

Phoenix ingests OTLP spans in the background and refuses (404) a batch of annotations
naming a span it has not stored yet: against a real ``phoenix serve`` the first export of
a row without ids was refused that way, right after its EVALUATOR span was accepted. So a
404 is asked again after :data:`ANNOTATION_WAITS`; any other refusal fails at once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from assay.run._export._otlp import evaluation_spans, resource
from assay.run._export._plan import Evaluation

__all__ = ["ANNOTATION_WAITS", "PhoenixSink", "annotation"]

ANNOTATION_WAITS: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
"""Seconds to wait before asking again while Phoenix answers 404 (spans not stored yet): 7.5 s in all."""


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
        annotations = [annotation(e) for e in batch]
        for wait in (*ANNOTATION_WAITS, None):
            try:
                self.client.spans.log_span_annotations(span_annotations=annotations, sync=True)
                return
            except Exception as exc:  # httpx.HTTPStatusError, named without importing httpx
                status = getattr(getattr(exc, "response", None), "status_code", None)
                if wait is None or status != 404:
                    raise
                time.sleep(wait)

    def close(self) -> None:
        """Shut down the span exporter this sink made."""
        if self.owned:
            self.span_exporter.shutdown()
