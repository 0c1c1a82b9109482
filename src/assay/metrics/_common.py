"""What the built-in metrics share: prompt versions for specs, naming modes, and the scores they end with."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from assay._scores import JudgeCall, MetricSpec, Score, UnscoredReason, Verdict
from assay.errors import ConfigError
from assay.grounding._decompose import (
    AnchoredDecomposer,
    Decomposer,
    Decomposition,
    HybridDecomposer,
    LLMDecomposer,
    SentenceDecomposer,
)
from assay.parsing import Unparsed
from assay.prompts import JudgePrompt


def prompt_versions(*prompts: JudgePrompt[Any, Any]) -> dict[str, str]:
    """``{name: version}`` of each prompt, for a spec's ``prompts`` entry."""
    return {p.name: p.version for p in prompts}


def check_reference_mode(what: str, reference: object) -> None:
    """Reject a ``reference`` option other than ``True``, ``False`` or ``None``."""
    if reference not in (None, True, False):
        raise ConfigError(f"{what}: reference must be True, False or None, not {reference!r}")


def reference_mode_name(base: str, reference: bool | None) -> str:
    """``base``, plus ``_with_reference`` / ``_without_reference`` when the mode is fixed."""
    if reference is None:
        return base
    return f"{base}_with_reference" if reference else f"{base}_without_reference"


DECOMPOSERS: dict[str, type[Decomposer]] = {
    "anchored": AnchoredDecomposer,
    "llm": LLMDecomposer,
    "sentences": SentenceDecomposer,
    "hybrid": HybridDecomposer,
}
"""Decomposers by name: ``anchored`` (sentences; the judge splits or completes those that
need it, and every statement is anchored to the answer), ``llm`` (the judge writes every
statement), ``sentences`` (pysbd, no judge call), ``hybrid`` (sentences; the judge rewrites
only those that cannot stand alone)."""


def make_decomposer(name: str) -> Decomposer:
    """The decomposer called ``name``: ``anchored``, ``llm``, ``sentences`` or ``hybrid``."""
    if name not in DECOMPOSERS:
        raise ConfigError(f"decomposer must be one of {', '.join(DECOMPOSERS)}, not {name!r}")
    return DECOMPOSERS[name]()


def missing_field(name: str, detail: str, spec: MetricSpec) -> Score:
    """Unscored ``missing_field``: the sample lacks what the metric needs (no judge call made)."""
    return Score.unscored(name, UnscoredReason.MISSING_FIELD, detail, spec=spec)


def lacking(name: str, fields: Sequence[str], spec: MetricSpec) -> Score:
    """Unscored ``missing_field`` naming the absent ``fields``: "sample lacks a, b"."""
    return missing_field(name, f"sample lacks {', '.join(fields)}", spec)


def failed(
    name: str,
    failure: Unparsed | None,
    spec: MetricSpec,
    *,
    during: str = "",
    verdicts: Iterable[Verdict] = (),
    calls: Iterable[JudgeCall] = (),
) -> Score:
    """Unscored with the reason of a judge step that gave no output; ``during`` prefixes the detail.

    ``failure`` is ``None`` only when the step did produce output, which callers rule out.
    """
    assert failure is not None
    detail = f"{during}: {failure.detail}" if during else failure.detail
    return Score.unscored(name, failure.reason, detail, verdicts=verdicts, calls=calls, spec=spec)


def metric_error(
    name: str, exc: Exception, spec: MetricSpec, *, during: str = "", calls: Iterable[JudgeCall] = ()
) -> Score:
    """Unscored ``metric_error`` for an exception (a bug), with its type and message; ``during`` prefixes it."""
    error = f"{type(exc).__name__}: {exc}"
    return Score.unscored(
        name, UnscoredReason.METRIC_ERROR, f"{during}: {error}" if during else error, calls=calls, spec=spec
    )


def unusable_split(
    name: str,
    split: Decomposition,
    spec: MetricSpec,
    *,
    text: str,
    during: str = "statement extraction",
    verdicts: Iterable[Verdict] = (),
    calls: Iterable[JudgeCall] = (),
) -> Score | None:
    """The unscored result when ``text`` could not be split or states nothing; ``None`` when usable."""
    if split.failure is not None:
        return failed(name, split.failure, spec, during=during, verdicts=verdicts, calls=calls)
    if not split.statements:
        return Score.unscored(
            name,
            UnscoredReason.NO_STATEMENTS,
            f"the {text} states nothing to check",
            verdicts=verdicts,
            calls=calls,
            spec=spec,
        )
    return None


def supported_share(
    name: str,
    verdicts: Sequence[Verdict],
    calls: Iterable[JudgeCall],
    spec: MetricSpec,
    *,
    counted: str,
    rejected: str,
) -> Score:
    """Share of ``verdicts`` that are 1, explained as "N of M {counted}; {rejected}: subjects of the 0s"."""
    supported = sum(1 for v in verdicts if v.value == 1)
    rejects = [v.subject for v in verdicts if v.value == 0]
    explanation = f"{supported} of {len(verdicts)} {counted}"
    if rejects:
        explanation += f"; {rejected}: " + " | ".join(rejects)
    return Score.scored(
        name, supported / len(verdicts), verdicts=verdicts, explanation=explanation, calls=calls, spec=spec
    )
