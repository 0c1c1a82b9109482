"""One sample's result: the type the runner produces and the store, the summary and Ray read.

It sits below all of them (``_evaluate``, ``_store``, ``_summary``, ``_ray``), so none of
them imports another for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay._samples import Sample
from assay._scores import Score

__all__ = ["SampleResult"]


@dataclass(frozen=True)
class SampleResult:
    """Every metric's score for one sample (and one repeat).

    Attributes:
        sample: The sample.
        scores: Metric name -> score.
        line: The sample's 1-based row number in its input.
        repeat: The repeat index (0 unless the run repeats each sample).
    """

    sample: Sample
    scores: Mapping[str, Score]
    line: int
    repeat: int = 0

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict: the sample, and each score with verdicts, reasons and calls."""
        return {
            "id": self.sample.id,
            "line": self.line,
            "repeat": self.repeat,
            "sample": self.sample.model_dump(mode="json", exclude_defaults=True),
            "scores": {name: score.model_dump(mode="json") for name, score in self.scores.items()},
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SampleResult:
        """Rebuild a result from :meth:`to_record`'s dict (a stored record)."""
        return cls(
            sample=Sample.model_validate(record["sample"]),
            scores={name: Score.model_validate(score) for name, score in record["scores"].items()},
            line=int(record["line"]),
            repeat=int(record.get("repeat", 0)),
        )
