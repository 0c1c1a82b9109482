"""Scores where teams already look: a stored run's verdicts written into the user's own traces.

``assay export RUN --to otlp|phoenix|langfuse`` (and :func:`export_run`) send every (row, metric)
result of a stored run, without judging anything again:

- ``otlp`` (extra ``otel``): an OpenInference EVALUATOR span linked to the judged span, a
  child span per judge call, and the OpenTelemetry GenAI ``gen_ai.evaluation.result``
  event, to the endpoint the standard ``OTEL_EXPORTER_OTLP_*`` variables name
  (``assay.run._export._otlp``);
- ``phoenix`` (extra ``phoenix``): the same spans over OTLP, then Phoenix span annotations
  through ``arize-phoenix-client`` (``assay.run._export._phoenix``);
- ``langfuse`` (extra ``langfuse``): Langfuse scores on the trace and the observation
  (``assay.run._export._langfuse``).

A row read from an OTLP trace, or with ``trace_id`` / ``span_id`` columns, is scored in its
own trace; a row without ids gets a trace of its own, and the report counts them. Every id
sent is derived from the run, the row and the metric, so exporting again replaces what
was sent rather than adding to it. An export that fails part-way raises
:class:`~assay.errors.ExportError` naming what was sent and what was not; the run store is
only read. ``docs/guides/traces.md`` shows it end to end.
"""

from assay.run._export import (
    DESTINATIONS,
    MAX_EXPLANATION_CHARS,
    Evaluation,
    ExportReport,
    LiveExport,
    evaluations,
    explanation,
    export_run,
    otlp_endpoint,
    result_evaluations,
    stable_id,
)

__all__ = [
    "DESTINATIONS",
    "MAX_EXPLANATION_CHARS",
    "Evaluation",
    "ExportReport",
    "LiveExport",
    "evaluations",
    "explanation",
    "export_run",
    "otlp_endpoint",
    "result_evaluations",
    "stable_id",
]
