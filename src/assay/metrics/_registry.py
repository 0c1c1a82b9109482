"""Metrics by name: the built-ins, and plugins registered under the ``assay.metrics`` entry point.

A plugin package declares, in its ``pyproject.toml``::

    [project.entry-points."assay.metrics"]
    my_metric = "my_package:build_my_metric"

where ``build_my_metric(**options) -> Metric``. ``assay run -m my_metric --set
my_metric.key=value`` then builds it. A stored metric is rebuilt from its spec by
:func:`~assay.metrics.metric_from_spec`, which imports the metric's class; a plugin whose
spec names no class is rebuilt here, by its entry point with the spec's params as options.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from assay.errors import ConfigError, did_you_mean
from assay.metrics._base import Metric

__all__ = ["MetricEntry", "build_metric", "builtin_names", "metric_entries", "metrics_from", "register_metric"]


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


def builtin_names() -> frozenset[str]:
    """The names registered in this process (the built-ins), not entry-point plugins."""
    return frozenset(_BUILTIN)


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
    entry = _BUILTIN.get(name)
    if entry is None:  # reading every installed distribution's entry points costs ~30 ms: only for a plugin
        entries = metric_entries()
        if name not in entries:
            hint = did_you_mean(name, entries)
            raise ConfigError(f"unknown metric {name!r};{hint} choose from {', '.join(sorted(entries))}")
        entry = entries[name]
    options = dict(options or {})
    unknown = sorted(set(options) - set(entry.options))
    if unknown:
        raise ConfigError(
            f"metric {name!r} has no option {', '.join(repr(u) for u in unknown)};"
            f"{did_you_mean(unknown[0], entry.options)} its options: {', '.join(entry.options) or 'none'}"
        )
    missing = [o for o in entry.required_options if o not in options]
    if missing:
        raise ConfigError(f"metric {name!r} needs {', '.join(missing)} (e.g. --set {name}.{missing[0]}=...)")
    try:
        return entry.factory(**options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"metric {name!r}: {exc}") from exc


def metrics_from(metrics: Metric | str | Iterable[Metric | str]) -> list[Metric]:
    """The metrics given as objects, registry names (``"faithfulness"``), or a mix of both.

    What :func:`~assay.evaluate`, ``assert_scores`` and the Inspect scorer take: a name is
    built by :func:`build_metric` with its default options, so a misspelt one gets the
    same "did you mean" as ``assay run -m``.

    Raises:
        ConfigError: an unknown name (or a metric that needs options), something that is
            neither, no metric at all, or two metrics with one name.
    """
    given: Iterable[Metric | str] = [metrics] if isinstance(metrics, str | Metric) else metrics
    built = [build_metric(m) if isinstance(m, str) else m for m in given]
    for metric in built:
        if not isinstance(metric, Metric):
            raise ConfigError(f"expected a metric or a metric name (see 'assay metrics'), got {metric!r}")
    if not built:
        raise ConfigError("give at least one metric")
    names = [m.name for m in built]
    if len(set(names)) != len(names):
        raise ConfigError(f"metric names must be unique, got {names}")
    return built


def _faithfulness(
    strategy: str = "auto",
    decomposer: str = "anchored",
    threshold: str | None = None,
    chunk_chars: str | None = None,
    fixed_statements: str = "true",
    max_statements: str | None = None,
) -> Metric:
    from assay.metrics._faithfulness import DEFAULT_MAX_STATEMENTS, Faithfulness

    fixed = _flag("faithfulness.fixed_statements", fixed_statements)
    most = int(max_statements) if max_statements is not None else DEFAULT_MAX_STATEMENTS
    metric = Faithfulness(strategy=strategy, decomposer=decomposer, fixed_statements=fixed, max_statements=most)  # type: ignore[arg-type]
    return _with_verifier(metric, threshold, chunk_chars)


def _flag(option: str, value: str) -> bool:
    """A true/false option given as text (``--set faithfulness.fixed_statements=false``)."""
    text = value.strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ConfigError(f"{option} must be true or false, not {value!r}")


def _with_verifier(metric: Any, threshold: str | None, chunk_chars: str | None) -> Metric:
    """``metric`` with ``--set M.threshold=0.7`` / ``--set M.chunk_chars=3000`` applied to its verifier."""
    overrides: dict[str, Any] = {}
    if threshold is not None:
        overrides["threshold"] = float(threshold)
    if chunk_chars is not None:
        overrides["chunk_chars"] = int(chunk_chars)
    if overrides:
        metric = dataclasses.replace(metric, verifier=dataclasses.replace(metric.verifier, **overrides))
    built: Metric = metric
    return built


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


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def _tools(value: str | None) -> tuple[str, ...]:
    """A comma-separated list of tool names or patterns (``book_*,cancel_*``)."""
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def _state(state_changing: str | None, read_only: str | None) -> Any:
    from assay.metrics._endstate import StateChanges

    return StateChanges(tools=_tools(state_changing), read_only=_tools(read_only))


def _goal(reference: bool | None) -> Callable[..., Metric]:
    def build(state_changing: str | None = None, read_only: str | None = None, include_policy: str = "true") -> Metric:
        from assay.metrics._agent import AgentGoalAccuracy

        return AgentGoalAccuracy(
            reference=reference, state=_state(state_changing, read_only), include_policy=_bool(include_policy)
        )

    return build


def _state_match(
    state_changing: str | None = None,
    read_only: str | None = None,
    arguments: str = "exact",
    ignore: str | None = None,
    strict_order: str = "false",
) -> Metric:
    from assay.metrics._matching import ArgumentMatch
    from assay.metrics._state import AgentStateMatch

    return AgentStateMatch(
        state=_state(state_changing, read_only),
        arguments=ArgumentMatch(mode=arguments, ignore=_tools(ignore)),  # type: ignore[arg-type]
        strict_order=_bool(strict_order),
    )


def _answer_relevancy() -> Metric:
    from assay.metrics._rag import AnswerRelevancy

    return AnswerRelevancy()


def _context_precision(reference: bool | None) -> Callable[..., Metric]:
    def build() -> Metric:
        from assay.metrics._rag import ContextPrecision

        return ContextPrecision(reference=reference)

    return build


def _context_recall(decomposer: str = "llm", threshold: str | None = None, chunk_chars: str | None = None) -> Metric:
    from assay.metrics._rag import ContextRecall

    return _with_verifier(ContextRecall(decomposer=decomposer), threshold, chunk_chars)  # type: ignore[arg-type]


def _factual_correctness(
    mode: str = "f1", decomposer: str = "llm", threshold: str | None = None, chunk_chars: str | None = None
) -> Metric:
    from assay.metrics._rag import FactualCorrectness

    metric = FactualCorrectness(mode=mode, decomposer=decomposer)  # type: ignore[arg-type]
    return _with_verifier(metric, threshold, chunk_chars)


def _tool_call_accuracy(
    strict_order: str = "true",
    ignore_extra_arguments: str = "false",
    calls: str = "all",
    trajectory: str = "score",
    arguments: str | None = None,
    state_changing: str | None = None,
) -> Metric:
    from assay.metrics._matching import ArgumentMatch
    from assay.metrics._tools import ToolCallAccuracy

    return ToolCallAccuracy(
        strict_order=_bool(strict_order),
        ignore_extra_arguments=_bool(ignore_extra_arguments),
        calls=calls,  # type: ignore[arg-type]
        trajectory=trajectory,  # type: ignore[arg-type]
        arguments=ArgumentMatch(mode=arguments, normalize=False) if arguments else ArgumentMatch(normalize=False),  # type: ignore[arg-type]
        state=_state(state_changing, None),
    )


register_metric(
    "agent_goal_accuracy", _goal(None), "every requirement of the goal met by the tool calls (reference if present)"
)
register_metric(
    "agent_goal_accuracy_with_reference", _goal(True), "the reference goal's requirements vs the calls (needs it)"
)
register_metric(
    "agent_goal_accuracy_without_reference", _goal(False), "the requirements in the user's turns vs the calls"
)
register_metric(
    "agent_state_match", _state_match, "the state-changing calls performed equal the expected ones (no LLM)"
)
register_metric("answer_relevancy", _answer_relevancy, "does the answer address the question (binary + noncommittal)")
register_metric("context_precision", _context_precision(None), "average precision of useful context chunks")
register_metric(
    "context_precision_with_reference", _context_precision(True), "chunk usefulness judged against the reference"
)
register_metric(
    "context_precision_without_reference", _context_precision(False), "chunk usefulness judged against the answer"
)
register_metric("context_recall", _context_recall, "share of reference statements the contexts support")
register_metric("factual_correctness", _factual_correctness, "claim-level precision/recall/F1 against the reference")
register_metric("tool_call_accuracy", _tool_call_accuracy, "expected vs actual tool calls (no LLM)")
