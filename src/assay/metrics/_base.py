"""The metric protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from assay._samples import Sample
from assay._scores import MetricSpec, Score
from assay.errors import ConfigError
from assay.metrics._common import lacking, metric_error
from assay.metrics._escalate import EscalatingMetric, Escalation
from assay.models._protocol import JudgeModel

__all__ = ["Metric", "missing_fields", "score_safely"]


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


def missing_fields(metric: Metric, sample: Sample) -> list[str]:
    """The fields ``metric`` needs that ``sample`` lacks or has empty."""
    return [name for name in metric.required_fields if not sample.field_present(name)]


async def score_safely(
    metric: Metric, sample: Sample, judge: JudgeModel, escalation: Escalation | None = None
) -> Score:
    """``metric.score`` that always returns a Score.

    A sample lacking a required field is ``missing_field`` (no judge call); an exception
    from the metric (a bug) is ``metric_error`` with its type and message, so one bad
    metric never sinks a run or a combined score.

    With ``escalation`` (a cascade run), an escalating metric is scored along it
    (:meth:`~assay.metrics.EscalatingMetric.score_escalating`); a metric that cannot escalate
    is a ``ConfigError`` (a cascade run refuses it at its start, before any call).
    """
    missing = missing_fields(metric, sample)
    if missing:
        return lacking(metric.name, missing, metric.spec())
    if escalation is not None and not isinstance(metric, EscalatingMetric):
        raise ConfigError(f"{metric.name} cannot escalate: a cascade run judges only metrics that escalate")
    try:
        if escalation is not None:
            assert isinstance(metric, EscalatingMetric)
            return await metric.score_escalating(sample, escalation)
        return await metric.score(sample, judge)
    except Exception as exc:  # a bug in a metric must not sink the run: record it
        return metric_error(metric.name, exc, metric.spec())
