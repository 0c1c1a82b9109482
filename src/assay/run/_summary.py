"""A run's summary: a pure function of its sample results.

The terminal summary, ``assay runs show``, the report and the exit code all read the same
:class:`RunSummary`, computed from *every* result of the run (for a stored run, every
stored record, so a resumed run's summary covers what was judged before the resume too).
Nothing is kept incrementally that could disagree with the records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assay._scores import ERROR_REASONS, Summary, SummaryBuilder, UnscoredReason, Usage
from assay.run._cost import CostReport, PriceTable, error_text

if TYPE_CHECKING:
    from assay.run._results import SampleResult

__all__ = ["NOT_COUNTED_AS_UNSCORED", "RunSummary", "RunTally", "summarize_results"]

NOT_COUNTED_AS_UNSCORED: frozenset[str] = frozenset({UnscoredReason.NOT_APPLICABLE.value})
"""Unscored reasons that are a verdict, not a failure to judge (a grader's NA): they do
not count towards ``--max-unscored``."""

LOWEST_KEPT = 10


@dataclass(frozen=True)
class RunSummary:
    """Per-metric summaries, cost and the lowest-scoring samples of a run.

    Attributes:
        metrics: Metric name -> :class:`~assay.Summary` (mean over scored results, unscored
            counts by reason, tokens).
        n_results: (sample, repeat) results counted.
        n_row_errors: Invalid input rows (never judged; each metric's ``n_invalid`` too).
        cost: Calls, tokens and cost over every judge call of every result.
        lowest: Metric name -> up to 10 scored samples, lowest value first: each sample
            once, as its lowest scored repeat.
        first_unscored: Metric name -> unscored reason -> the detail of its first result
            with a detail, in the order the results were counted (input order for a
            stored run): what a reader needs to act on ``judge_error: 3``.
        row_errors: What made each invalid input row invalid, located
            (``data.jsonl:3: missing or empty field 'answer'``), in the order reported.
    """

    metrics: Mapping[str, Summary]
    n_results: int
    n_row_errors: int
    cost: CostReport
    lowest: Mapping[str, Sequence[SampleResult]] = field(default_factory=dict)
    first_unscored: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    row_errors: Sequence[str] = ()

    @property
    def n_scored(self) -> int:
        """Scored (sample, metric) results over every metric."""
        return sum(s.n_scored for s in self.metrics.values())

    @property
    def n_unscored(self) -> int:
        """Unscored (sample, metric) results that count as not judged (a grader's NA does not)."""
        return sum(
            n
            for s in self.metrics.values()
            for reason, n in s.unscored_by_reason.items()
            if reason not in NOT_COUNTED_AS_UNSCORED
        )

    @property
    def n_errors(self) -> int:
        """Unscored (sample, metric) results that are errors (:data:`~assay._scores.ERROR_REASONS`), never tolerated."""
        return sum(
            n for s in self.metrics.values() for reason, n in s.unscored_by_reason.items() if reason in ERROR_REASONS
        )

    def first_error(self) -> str | None:
        """``"faithfulness: judge_error — <detail>"`` for the first error result counted, or ``None``."""
        for name, reasons in self.first_unscored.items():
            for reason, detail in reasons.items():
                if reason in ERROR_REASONS:
                    return f"{name}: {reason} — {error_text(detail)}"
        for name, s in self.metrics.items():
            for reason in s.unscored_by_reason:
                if reason in ERROR_REASONS:
                    return f"{name}: {reason}"
        return None

    @property
    def unscored_share(self) -> float:
        """Share of (sample, metric) results left unjudged, in [0, 1]; NaN when there are none."""
        total = self.n_scored + self.n_unscored
        return self.n_unscored / total if total else math.nan

    @property
    def usage(self) -> Usage:
        """Tokens over every metric (the judge calls' own counts)."""
        return self.cost.usage

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: per metric as :class:`Summary` dumps, plus ``_cost`` and ``_counts``."""
        out: dict[str, object] = {name: s.model_dump(mode="json") for name, s in self.metrics.items()}
        out["_cost"] = {
            "calls": self.cost.calls,
            "cached_calls": self.cost.cached_calls,
            "failed_calls": self.cost.failed_calls,
            "usd": self.cost.usd,
            "unpriced_models": sorted(self.cost.unpriced_models),
            "uncounted_models": sorted(self.cost.uncounted_models),
            "priced_calls": self.cost.priced_calls,
            "prompt_tokens": self.cost.usage.prompt_tokens,
            "completion_tokens": self.cost.usage.completion_tokens,
            "models": dict(self.cost.models),
        }
        out["_counts"] = {"results": self.n_results, "row_errors": self.n_row_errors}
        return out


class RunTally:
    """Builds a :class:`RunSummary` one result at a time, in bounded memory."""

    def __init__(self, metrics: Sequence[str], prices: PriceTable | None = None) -> None:
        self._builders = {name: SummaryBuilder(name) for name in metrics}
        # Per metric, at most LOWEST_KEPT samples (by line): each one's lowest scored repeat.
        self._lowest: dict[str, dict[int, tuple[float, int, int, SampleResult]]] = {}
        self._cost = CostReport(prices=prices or PriceTable())
        self._first_unscored: dict[str, dict[str, str]] = {}
        self.n_results = 0
        self.n_row_errors = 0
        self.row_errors: list[str] = []

    def add_row_error(self, message: str) -> None:
        """Count one invalid input row (``message``: where and why, as reported)."""
        self.n_row_errors += 1
        self.row_errors.append(message)

    def add(self, result: SampleResult) -> None:
        """Count one (sample, repeat) result."""
        self.n_results += 1
        for name, score in result.scores.items():
            self._builders.setdefault(name, SummaryBuilder(name)).add(score)
            self._cost.add(score.all_calls)
            if score.is_scored:
                self._keep_lowest(name, score.value, result)
            elif score.unscored_reason is not None and score.detail:
                self._first_unscored.setdefault(name, {}).setdefault(score.unscored_reason.value, score.detail)

    def _keep_lowest(self, name: str, value: float, result: SampleResult) -> None:
        """Keep the ``LOWEST_KEPT`` samples whose lowest repeat is lowest (ties: the earlier line).

        A sample is one entry however many repeats it has (its worst repeat), so the lowest
        table never lists a sample once per repeat. A sample pushed out and seen again with
        a lower repeat comes back in: what is kept is always the k lowest seen so far.
        """
        kept = self._lowest.setdefault(name, {})
        item = (value, result.line, result.repeat, result)
        held = kept.get(result.line)
        if held is not None:
            if item[:3] < held[:3]:
                kept[result.line] = item
            return
        kept[result.line] = item
        if len(kept) > LOWEST_KEPT:
            del kept[max(kept.values(), key=lambda entry: entry[:3])[1]]

    @property
    def cost(self) -> CostReport:
        """Calls, tokens and cost so far."""
        return self._cost

    def summary(self) -> RunSummary:
        """The summary of everything added so far."""
        return RunSummary(
            metrics={name: b.summary(self.n_row_errors) for name, b in self._builders.items()},
            n_results=self.n_results,
            n_row_errors=self.n_row_errors,
            cost=self._cost,
            lowest={
                name: [entry[-1] for entry in sorted(kept.values(), key=lambda entry: entry[:3])]
                for name, kept in self._lowest.items()
            },
            first_unscored={name: dict(reasons) for name, reasons in self._first_unscored.items()},
            row_errors=tuple(self.row_errors),
        )


def summarize_results(
    results: Iterable[SampleResult],
    metrics: Sequence[str],
    *,
    n_row_errors: int | None = None,
    row_errors: Sequence[str] = (),
    prices: PriceTable | None = None,
) -> RunSummary:
    """The :class:`RunSummary` of ``results`` (one pass, memory bounded by the lowest-k heaps).

    Args:
        results: Every result of the run, in any order.
        metrics: The run's metric names, in the order to report them (a metric with no
            result still gets an empty summary).
        n_row_errors: How many input rows were invalid (default: ``len(row_errors)``).
        row_errors: Their messages.
        prices: The price table for the cost (default: the built-in one).
    """
    tally = RunTally(metrics, prices)
    for result in results:
        tally.add(result)
    tally.row_errors = list(row_errors)
    tally.n_row_errors = len(row_errors) if n_row_errors is None else n_row_errors
    return tally.summary()
