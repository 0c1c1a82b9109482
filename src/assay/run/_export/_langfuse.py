"""Evaluations as Langfuse scores, through the Langfuse SDK (extra ``langfuse``).

Langfuse's trace and observation ids are the OpenTelemetry ones, so a row's ``trace_id``
and ``span_id`` name the trace and the observation a score goes on. Each evaluation is up
to two scores, each with an id derived from the run, the row and the metric (Langfuse
replaces a score sent again with the same id):

- ``NAME``: the value (``NUMERIC``), the failing verdicts' reasons as its comment;
- ``NAME.label``: ``pass`` / ``fail`` against the threshold, or ``unscored`` with the
  reason (``CATEGORICAL``); not sent for a scored metric without a threshold.

The SDK sends scores from a background thread and logs, rather than raises, a batch it
could not send; assay flushes after each batch and listens to the SDK's logger, so a lost
batch is a failed export, not a quiet one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from assay.run._export._plan import Evaluation, stable_id

__all__ = ["LangfuseSink"]


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.levelno >= logging.ERROR or "dropped" in text.lower():
            self.messages.append(text)


class LangfuseSink:
    """Sends each batch of evaluations as scores and flushes; raises ``RuntimeError`` when the SDK reports a loss."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._errors = _Errors()
        logging.getLogger("langfuse").addHandler(self._errors)

    def send(self, batch: Sequence[Evaluation]) -> None:
        """Create the scores of ``batch`` and wait until the SDK has sent them."""
        self._errors.messages.clear()
        for e in batch:
            metadata: dict[str, Any] = {
                "assay.run_id": e.run_id,
                "assay.sample_id": e.sample_id,
                "assay.repeat": e.repeat,
                "annotator_kind": e.annotator_kind,
            }
            if e.threshold is not None:
                metadata["threshold"] = e.threshold
            if e.unscored_reason is not None:
                metadata["error.type"] = e.unscored_reason
            if e.response_id is not None:
                metadata["gen_ai.response.id"] = e.response_id
            where = {"trace_id": e.trace_id, "observation_id": e.target_span_id}
            if e.value is not None:
                self.client.create_score(
                    name=e.metric,
                    value=e.value,
                    score_id=e.key,
                    data_type="NUMERIC",
                    comment=e.explanation,
                    metadata=metadata,
                    **where,
                )
            if e.label is not None:
                self.client.create_score(
                    name=f"{e.metric}.label",
                    value=e.label,
                    score_id=stable_id(32, e.key, "label"),
                    data_type="CATEGORICAL",
                    comment=e.explanation if e.value is None else None,
                    metadata=metadata,
                    **where,
                )
        self.client.flush()
        if self._errors.messages:
            raise RuntimeError("the Langfuse SDK could not send the scores: " + self._errors.messages[0])

    def close(self) -> None:
        """Stop listening to the SDK's logger; the client stays open.

        Not shut down: the SDK keeps one set of sending threads per public key in the
        process, so a shut-down client would drop the scores of the next export with the
        same key (every score was flushed after its batch already).
        """
        logging.getLogger("langfuse").removeHandler(self._errors)
