"""The capability review needs of a metric: its value computed again from verdicts a person gave."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from assay._samples import Sample
from assay._scores import Score, Verdict

__all__ = ["Reviewable"]


@runtime_checkable
class Reviewable(Protocol):
    """A metric whose value is an aggregate of two-valued verdicts a person can give (``assay review``).

    A cascade leaves the verdicts no judge was sure of pending (``needs_review``); a person's
    answers fill them in, and the metric itself turns the verdicts into its value again, so
    review never re-implements a metric's arithmetic. :class:`~assay.metrics.Faithfulness`
    and :class:`~assay.metrics.BinaryJudgeGrader` implement it.
    """

    def review_value(self, supported: bool) -> int | str:
        """The verdict value a person's "supported" (``True``) or "not supported" answer is recorded as."""
        ...

    def rescored(self, score: Score) -> Score:
        """``score`` with its value computed from its verdicts, as the metric's ``score`` computes it.

        Called once no question of the score is pending; the calls, spec and whatever else
        the score carries are kept.
        """
        ...

    def label_item(self, sample: Sample, verdict: Verdict) -> dict[str, Any] | None:
        """``verdict`` as a labelled item in ``assay calibrate``'s format (``None``: the sample gives none)."""
        ...
