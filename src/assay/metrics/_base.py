"""The metric protocol."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from assay._samples import Sample
from assay._scores import MetricSpec, Score, Verdict
from assay.metrics._common import lacking, metric_error
from assay.models._protocol import JudgeModel

__all__ = ["Metric", "Reviewable", "missing_fields", "score_safely"]


@runtime_checkable
class Metric(Protocol):
    """Something that scores one sample, possibly by asking a judge.

    A metric is a plain value (a frozen dataclass or pydantic model): printable,
    comparable, and rebuildable from its :meth:`spec` by
    :func:`~assay.metrics.metric_from_spec`. Write ``spec()`` as
    ``return spec_from_fields(self)`` and every field is recorded.
    """

    @property
    def name(self) -> str:
        """The metric's name in results and on the command line."""
        ...

    @property
    def required_fields(self) -> tuple[str, ...]:
        """The :class:`~assay.Sample` fields that must be present and non-empty."""
        ...

    def spec(self) -> MetricSpec:
        """The configuration that rebuilds this metric."""
        ...

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Score one sample. Judge failures become unscored results, never exceptions."""
        ...


@runtime_checkable
class Reviewable(Protocol):
    """A metric whose value is an aggregate of two-valued verdicts a person can give (``assay review``).

    A cascade leaves the verdicts no judge was sure of pending (``needs_review``); a person's
    answers fill them in, and the metric itself turns the verdicts into its value again, so
    review never re-implements a metric's arithmetic.
    """

    def review_value(self, supported: bool) -> int | str:
        """The verdict value a person's "supported" (``True``) or "not supported" answer is recorded as."""
        ...

    def rescored(self, score: Score) -> Score:
        """``score`` with its value computed from its verdicts, as :meth:`Metric.score` computes it.

        Called once no question of the score is pending; the calls, spec and whatever else
        the score carries are kept.
        """
        ...

    def label_item(self, sample: Sample, verdict: Verdict) -> dict[str, Any] | None:
        """``verdict`` as a labelled item in ``assay calibrate``'s format (``None``: the sample gives none)."""
        ...


def missing_fields(metric: Metric, sample: Sample) -> list[str]:
    """The fields ``metric`` needs that ``sample`` lacks or has empty."""
    return [name for name in metric.required_fields if not sample.field_present(name)]


async def score_safely(metric: Metric, sample: Sample, judge: JudgeModel) -> Score:
    """``metric.score`` that always returns a Score.

    A sample lacking a required field is ``missing_field`` (no judge call); an exception
    from the metric (a bug) is ``metric_error`` with its type and message, so one bad
    metric never sinks a run or a combined score.
    """
    missing = missing_fields(metric, sample)
    if missing:
        return lacking(metric.name, missing, metric.spec())
    try:
        return await metric.score(sample, judge)
    except Exception as exc:  # a bug in a metric must not sink the run: record it
        return metric_error(metric.name, exc, metric.spec())
