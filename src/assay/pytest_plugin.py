"""The ``assay`` pytest plugin: judge outputs inside your tests.

Registered under the ``pytest11`` entry point ``assay``, so installing assay enables it.
It adds the ``--assay-judge`` option (default: ``$ASSAY_JUDGE``, else ``local``), the
``assay_judge`` fixture (that judge, built once per session), and two assertions::

    from assay.pytest_plugin import assert_faithful, assert_grade

    def test_answer_is_grounded(assay_judge):
        assert_faithful(sample, min=0.8, judge=assay_judge)

    def test_tone(assay_judge):
        assert_grade(sample, "The reply is polite.", judge=assay_judge)

A failing assertion lists every unsupported statement (or failing criterion) with the
judge's reason. An unscored result (parse failure, refusal, no statements...) fails with
its reason: it never passes silently.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import pytest

from assay._safety import printable
from assay._samples import Sample
from assay._scores import Score
from assay.metrics import BinaryJudgeGrader, Faithfulness, Metric
from assay.models import JudgeModel, get_judge
from assay.run import evaluate
from assay.run._dataset import sample_from_record

__all__ = ["assay_judge", "assert_faithful", "assert_grade", "pytest_addoption", "score_sample"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--assay-judge``."""
    group = parser.getgroup("assay", "judging LLM outputs with assay")
    group.addoption(
        "--assay-judge",
        action="store",
        default=None,
        metavar="JUDGE",
        help="Judge for the assay_judge fixture: local, local:/path.gguf, openai:MODEL, anthropic:MODEL "
        "(default: $ASSAY_JUDGE, else local).",
    )


@pytest.fixture(scope="session")
def assay_judge(request: pytest.FixtureRequest) -> JudgeModel:
    """The judge named by ``--assay-judge``, else ``$ASSAY_JUDGE``, else ``local`` (built once per session)."""
    spec = request.config.getoption("--assay-judge") or os.environ.get("ASSAY_JUDGE") or "local"
    return get_judge(str(spec))


def _as_sample(sample: Sample | Mapping[str, Any]) -> Sample:
    return sample if isinstance(sample, Sample) else sample_from_record(dict(sample), line=1)


def score_sample(sample: Sample | Mapping[str, Any], metric: Metric, judge: JudgeModel | str | None = None) -> Score:
    """Score one sample with one metric (judge: a model, a judge string, or ``None`` for the default)."""
    result = evaluate([_as_sample(sample)], [metric], judge)
    if result.errors:
        raise AssertionError(f"assay: invalid sample: {result.errors[0]}")
    return result.results[0].scores[metric.name]


def _describe(score: Score, sample: Sample, what: str) -> str:
    # The judge's words and the sample's text are untrusted: no raw control character
    # reaches the terminal that shows the failure (assay._safety.printable).
    def shown(text: object) -> str:
        return printable(text, markup=False)

    lines = [f"assay {shown(score.metric)} of sample {shown(repr(sample.id))}: {what}"]
    if score.unscored_reason is not None:
        lines.append(f"  unscored ({score.unscored_reason.value}): {shown(score.detail or 'no detail')}")
    for verdict in score.failing:
        lines.append(f"  ✗ {shown(verdict.subject)}\n      judge: {shown(verdict.reason or '(no reason given)')}")
    supported = [v for v in score.verdicts if v.value in (1, "PASS")]
    if supported:
        lines.append(f"  ({len(supported)} of {len(score.verdicts)} verdicts positive)")
    return "\n".join(lines)


def assert_faithful(
    sample: Sample | Mapping[str, Any],
    min: float = 0.8,
    judge: JudgeModel | str | None = None,
    strict: bool = False,
    *,
    min_statements: int = 0,
    metric: Faithfulness | None = None,
) -> Score:
    """Assert the answer's faithfulness to its contexts is at least ``min``; return the score.

    Args:
        sample: A :class:`~assay.Sample` or a dict with the same fields.
        min: The lowest passing score.
        judge: A judge model or string (``None``: ``$ASSAY_JUDGE``, else local).
        strict: Any unsupported statement fails, whatever the score.
        min_statements: Fewer statements than this fails (a padding defence).
        metric: A configured :class:`~assay.metrics.Faithfulness` (default ``Faithfulness()``).

    Raises:
        AssertionError: below ``min``, an unsupported statement in strict mode, too few
            statements, or unscored; the message lists each unsupported statement with
            the judge's reason.
    """
    chosen = _as_sample(sample)
    score = score_sample(chosen, metric or Faithfulness(), judge)
    if not score.is_scored:
        raise AssertionError(_describe(score, chosen, "unscored, which never passes"))
    n = len(score.verdicts)
    if min_statements and n < min_statements:
        raise AssertionError(_describe(score, chosen, f"{n} statements, fewer than the required {min_statements}"))
    if strict and score.failing:
        raise AssertionError(_describe(score, chosen, f"{len(score.failing)} unsupported statement(s) (strict)"))
    if math.isnan(score.value) or score.value < min - 1e-9:
        raise AssertionError(_describe(score, chosen, f"score {score.value:.3f} < {min:g}"))
    return score


def assert_grade(
    sample: Sample | Mapping[str, Any],
    grader: Metric | str,
    min: float = 1.0,
    judge: JudgeModel | str | None = None,
) -> Score:
    """Assert a grader scores the sample at least ``min`` (default 1.0: PASS); return the score.

    Args:
        sample: A :class:`~assay.Sample` or a dict with the same fields.
        grader: A grader metric, or a criteria string for a
            :class:`~assay.metrics.BinaryJudgeGrader`.
        min: The lowest passing score.
        judge: A judge model or string (``None``: ``$ASSAY_JUDGE``, else local).

    Raises:
        AssertionError: below ``min`` or unscored (NA included), with the judge's reasoning.
    """
    chosen = _as_sample(sample)
    metric = BinaryJudgeGrader(grader) if isinstance(grader, str) else grader
    score = score_sample(chosen, metric, judge)
    if not score.is_scored:
        raise AssertionError(_describe(score, chosen, "unscored, which never passes"))
    if score.value < min - 1e-9:
        raise AssertionError(_describe(score, chosen, f"score {score.value:.3f} < {min:g}"))
    return score
