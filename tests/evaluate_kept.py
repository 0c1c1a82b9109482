"""``evaluate`` for tests of what a metric makes of a judge that fails: the result even when every call failed.

Since issue 56, ``evaluate`` raises :class:`~assay.errors.JudgeUnavailableError` when every
judge call of a run failed (as ``assay run`` exits 3); the error keeps the run's result,
whose unscored scores are what these tests look at.
"""

from __future__ import annotations

from typing import Any

from assay import EvalResult, evaluate
from assay.errors import JudgeUnavailableError


def evaluate_kept(*args: Any, **kwargs: Any) -> EvalResult:
    """``evaluate(*args, **kwargs)``, or the result a :class:`JudgeUnavailableError` kept."""
    try:
        return evaluate(*args, **kwargs)
    except JudgeUnavailableError as exc:
        assert isinstance(exc.result, EvalResult)
        return exc.result
