"""Metrics by name: the built-ins, and plugins registered under the ``assay.metrics`` entry point.

A plugin package declares, in its ``pyproject.toml``::

    [project.entry-points."assay.metrics"]
    my_metric = "my_package:build_my_metric"

where ``build_my_metric(**options) -> Metric``. ``assay run -m my_metric --set
my_metric.key=value`` then builds it. The same registry rebuilds a stored run's metrics
for ``--resume`` from the names and options recorded in its spec.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from assay.errors import ConfigError
from assay.metrics._base import Metric

__all__ = ["MetricEntry", "build_metric", "metric_entries", "register_metric"]


@dataclass(frozen=True)
class MetricEntry:
    """How to build one named metric from keyword options."""

    name: str
    factory: Callable[..., Metric]
    summary: str

    @property
    def options(self) -> tuple[str, ...]:
        """The keyword options the factory accepts."""
        params = inspect.signature(self.factory).parameters.values()
        return tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))

    @property
    def required_options(self) -> tuple[str, ...]:
        """Options without a default."""
        params = inspect.signature(self.factory).parameters.values()
        return tuple(
            p.name
            for p in params
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty
        )


_BUILTIN: dict[str, MetricEntry] = {}


def register_metric(name: str, factory: Callable[..., Metric], summary: str) -> None:
    """Add a metric to the registry (built-ins do this at import; plugins use entry points)."""
    _BUILTIN[name] = MetricEntry(name, factory, summary)


def metric_entries() -> dict[str, MetricEntry]:
    """Every known metric: built-ins first, then entry-point plugins."""
    entries = dict(_BUILTIN)
    for point in entry_points(group="assay.metrics"):
        if point.name not in entries:
            entries[point.name] = MetricEntry(point.name, point.load(), f"plugin from {point.value}")
    return entries


def build_metric(name: str, options: Mapping[str, Any] | None = None) -> Metric:
    """Build the metric called ``name`` with ``options``.

    Raises:
        ConfigError: unknown metric, unknown option, or a required option missing.
    """
    entries = metric_entries()
    if name not in entries:
        raise ConfigError(f"unknown metric {name!r}; choose from {', '.join(sorted(entries))}")
    entry = entries[name]
    options = dict(options or {})
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        raise ConfigError(
            f"metric {name!r} has no option {', '.join(unknown)}; its options: {', '.join(entry.options) or 'none'}"
        )
    missing = [o for o in entry.required_options if o not in options]
    if missing:
        raise ConfigError(f"metric {name!r} needs {', '.join(missing)} (e.g. --set {name}.{missing[0]}=...)")
    try:
        return entry.factory(**options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"metric {name!r}: {exc}") from exc


def _faithfulness(strategy: str = "auto", decomposer: str = "llm") -> Metric:
    from assay.metrics._faithfulness import Faithfulness

    return Faithfulness(strategy=strategy, decomposer=decomposer)  # type: ignore[arg-type]


def _binary_grader(criteria: str, name: str = "binary_grader") -> Metric:
    from assay.metrics._graders import BinaryJudgeGrader

    return BinaryJudgeGrader(criteria, name=name)


def _range_grader(criteria: str, levels: str = "1,2,3,4,5", expected_value: bool = False) -> Metric:
    from assay.metrics._graders import RangeJudgeGrader

    scale = {int(level): f"level {level.strip()}" for level in str(levels).split(",")}
    return RangeJudgeGrader(criteria, scale, expected_value=str(expected_value).lower() in ("1", "true", "yes"))


def _templated_grader(template: str, output: str = "pass_fail") -> Metric:
    from assay.metrics._graders import TemplatedPromptJudgeGrader

    return TemplatedPromptJudgeGrader(template, output=output)  # type: ignore[arg-type]


register_metric("faithfulness", _faithfulness, "share of the answer's statements the contexts support")
register_metric("binary_grader", _binary_grader, "PASS/FAIL/NA against a criteria string (option: criteria)")
register_metric("range_grader", _range_grader, "a level on a declared scale, normalised (option: criteria)")
register_metric("templated_grader", _templated_grader, "your own prompt template (option: template)")
