"""What an export sends, decided once for every backend: one :class:`Evaluation` per (row, repeat, metric).

Nothing here imports a backend's SDK: the OTLP, Langfuse and Phoenix writers all read
the same evaluations, so a label, an explanation or an id means one thing everywhere.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from assay._safety import redact_secrets
from assay._scores import JudgeCall, Score
from assay.run._results import SampleResult
from assay.run._store import RunStore

__all__ = [
    "MAX_EXPLANATION_CHARS",
    "Evaluation",
    "evaluations",
    "explanation",
    "result_evaluations",
    "stable_id",
]

MAX_EXPLANATION_CHARS = 2000
"""Longest explanation sent (characters): the failing verdicts' reasons, cut with a count of the rest.

About 500 tokens, a dozen failing statements with their reasons; backends show it in a
table cell or a tooltip (Langfuse and Phoenix truncate long comments in their lists), and
an OTLP attribute that long stays far below collectors' default limits. The whole record
stays in the run store (``assay runs show RUN --sample ID``).
"""

Label = Literal["pass", "fail", "unscored"]


@dataclass(frozen=True)
class Evaluation:
    """One metric's result on one row (and repeat), as every backend receives it.

    Attributes:
        run_id: The stored run.
        sample_id: The row's id.
        line: The row's line in its input.
        repeat: The repeat index.
        metric: The metric's name (the evaluation's name).
        value: The score, or ``None`` when unscored.
        label: ``pass`` / ``fail`` against ``threshold``, ``unscored``, or ``None`` when the
            metric has no threshold in this export.
        threshold: The pass mark the label was read against.
        explanation: The failing verdicts' reasons (or the unscored detail), bounded and
            with key-shaped text masked; ``None`` when there is nothing to say.
        unscored_reason: Why there is no value (``error.type``).
        annotator_kind: ``LLM`` when the metric asked a judge in this run, ``CODE`` otherwise.
        trace_id: The row's trace, or one derived from the run and the row when the row
            has none (``own_trace``).
        target_span_id: The judged span (linked to, annotated, scored), or ``None``.
        own_trace: The row carried no trace id; its evaluations have a trace of their own.
        response_id: The judged response's ``gen_ai.response.id``, where known.
        span_id: The evaluation's own span id: stable, so a repeated export replaces.
        calls: The judge calls behind the score.
    """

    run_id: str
    sample_id: str
    line: int
    repeat: int
    metric: str
    value: float | None
    label: Label | None
    threshold: float | None
    explanation: str | None
    unscored_reason: str | None
    annotator_kind: Literal["LLM", "CODE"]
    trace_id: str
    target_span_id: str | None
    own_trace: bool
    response_id: str | None
    span_id: str
    calls: tuple[JudgeCall, ...]

    @property
    def key(self) -> str:
        """A stable id for this result (run, row, repeat, metric) as a 32-hex string: a score's id."""
        return stable_id(32, self.run_id, self.sample_id, str(self.repeat), self.metric, "score")

    def call_span_id(self, index: int) -> str:
        """The stable span id of the ``index``-th judge call."""
        return stable_id(16, self.run_id, self.sample_id, str(self.repeat), self.metric, "call", str(index))


def stable_id(hex_digits: int, *parts: str) -> str:
    """``hex_digits`` lowercase hex digits derived from ``parts``: the same parts, the same id (never all zero)."""
    digest = hashlib.sha256("\x00".join(("assay-export", *parts)).encode("utf-8", "surrogatepass")).hexdigest()
    text = digest[:hex_digits]
    return text if text.strip("0") else "1".rjust(hex_digits, "0")


def _failing(value: object) -> bool:
    return value in (0, "FAIL")


def explanation(score: Score, limit: int = MAX_EXPLANATION_CHARS) -> str | None:
    """The failing verdicts' reasons (``subject: reason``, one a line), else the score's own explanation.

    Unscored: the detail that says why. Cut at ``limit`` characters with the number of
    verdicts left out; API-key-shaped tokens and auth headers masked (an answer may quote one).
    """
    if score.unscored_reason is not None:
        lines = [score.detail or score.explanation or str(score.unscored_reason)]
    else:
        failing = [v for v in score.verdicts if _failing(v.value)]
        lines = [f"{v.subject}: {v.reason}" if v.reason else v.subject for v in failing]
        if not lines and score.explanation:
            lines = [score.explanation]
    lines = [redact_secrets(" ".join(line.split())) for line in lines if line and line.strip()]
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        left = len(lines) - i
        tail = f"\n(+{left} more)" if left > 1 else ""  # said only if this line is not the last
        if used + len(line) + (1 if kept else 0) + len(tail) > limit:
            if not kept:  # one line longer than the limit: its head
                kept.append(line[: max(1, limit - len(f"\n(+{left - 1} more)") - 1)] + "…")
                left -= 1
            return "\n".join(kept) + (f"\n(+{left} more)" if left else "")
        kept.append(line)
        used += len(line) + (1 if len(kept) > 1 else 0)
    return "\n".join(kept) or None


def _threshold(metric: str, score: Score, thresholds: Mapping[str, float]) -> float | None:
    if metric in thresholds:
        return thresholds[metric]
    params: Mapping[str, Any] = score.spec.params if score.spec is not None else {}
    mark = params.get("pass_threshold")
    return float(mark) if isinstance(mark, int | float) and not isinstance(mark, bool) else None


def _label(value: float | None, threshold: float | None) -> Label | None:
    if value is None:
        return "unscored"
    if threshold is None:
        return None
    return "pass" if value >= threshold else "fail"


def evaluations(
    store: RunStore, run_id: str, thresholds: Mapping[str, float] | None = None
) -> Iterator[list[Evaluation]]:
    """The run's evaluations, a list per stored result (row and repeat), in input order.

    ``thresholds``: metric -> pass mark (``assay export -m faithfulness=0.8``); a metric
    without one takes its own (a combined grader's ``pass_threshold``) or goes unlabelled.
    """
    results = list(store.results(run_id))
    judged = {name for r in results for name, s in r.scores.items() if s.calls}
    for result in results:
        yield result_evaluations(run_id, result, thresholds, judged)


def result_evaluations(
    run_id: str,
    result: SampleResult,
    thresholds: Mapping[str, float] | None = None,
    judged: Collection[str] | None = None,
) -> list[Evaluation]:
    """One result's evaluations, a metric each.

    ``judged``: the metrics that asked a judge somewhere in the run (annotator ``LLM``);
    ``None`` (a result exported as it finishes) reads it from the result's own calls.
    """
    marks = dict(thresholds or {})
    return [
        _evaluation(run_id, result, name, score, marks, bool(score.calls) if judged is None else name in judged)
        for name, score in result.scores.items()
    ]


def _evaluation(
    run_id: str, result: SampleResult, metric: str, score: Score, marks: Mapping[str, float], judged: bool
) -> Evaluation:
    sample = result.sample
    value = None if score.unscored_reason is not None or math.isnan(score.value) else float(score.value)
    threshold = _threshold(metric, score, marks)
    repeat = str(result.repeat)
    own = sample.trace_id is None
    trace_id = sample.trace_id or stable_id(32, run_id, sample.id, repeat, "trace")
    return Evaluation(
        run_id=run_id,
        sample_id=sample.id,
        line=result.line,
        repeat=result.repeat,
        metric=metric,
        value=value,
        label=_label(value, threshold),
        threshold=threshold,
        explanation=explanation(score),
        unscored_reason=None if score.unscored_reason is None else str(score.unscored_reason),
        annotator_kind="LLM" if judged else "CODE",
        trace_id=trace_id,
        target_span_id=None if own else sample.span_id,
        own_trace=own,
        response_id=sample.response_id,
        span_id=stable_id(16, run_id, sample.id, repeat, metric, "evaluation"),
        calls=score.calls,
    )
