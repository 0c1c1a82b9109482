"""What :func:`~assay.run.evaluate` returns: the results, the bad rows, and the run's summary.

Below both runners (``_evaluate`` and ``_ray``), so neither imports the other for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay._scores import Score, Summary, Usage, summarize
from assay.errors import ConfigError, SampleError, counted
from assay.run._cost import PriceTable
from assay.run._results import SampleResult
from assay.run._store import RunStore
from assay.run._summary import RunSummary, RunTally, summarize_results

if TYPE_CHECKING:
    import pandas as pd

    from assay.analysis import GateResult
    from assay.run._export import ExportReport
    from assay.run._judge_record import JudgeRecord
    from assay.run._trust import TrustFigure

__all__ = ["EvalResult"]


@dataclass
class EvalResult:
    """The outcome of :func:`evaluate`: per-sample results, bad input rows, and the run's summary.

    A run evaluated with ``store=`` knows its :attr:`run_id`, and its summary covers every
    result stored for that run (including those judged before a resume), computed from
    the stored records. Without a store, the summary covers this call's results. With
    ``keep_results=False`` (streaming huge inputs), ``results`` stays empty while
    :meth:`summary` and :meth:`lowest` still cover every sample.
    """

    metrics: tuple[str, ...]
    judge: str
    results: list[SampleResult] = field(default_factory=list)
    errors: list[SampleError] = field(default_factory=list)
    """The invalid input rows, each saying where and why (``data.jsonl:3: missing or empty field 'answer'``);
    never judged, and counted in every metric's summary as ``n_invalid``."""
    skipped: int = 0
    n_samples: int = 0
    run_id: str | None = None
    store_path: Path | None = None
    notes: list[str] = field(default_factory=list)
    """What was taken on trust in the data, each said once (``contexts was one string ... in 12 rows``)."""
    judge_record: JudgeRecord | None = None
    """The judge exactly: identity, weights and layout, llama.cpp build, prompt versions."""
    trust: dict[str, TrustFigure] = field(default_factory=dict)
    """Per metric, how far its judge agrees with people: the user's newest calibration for this metric and
    judge, the shipped figure for the default local judge, the definition of a model-free metric, or
    "not measured" (:func:`~assay.run.trust_for`)."""
    export: ExportReport | None = None
    """What ``evaluate(export=...)`` (``assay run --export``) sent as results finished; ``None`` without it."""
    cascade: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per metric of a cascade run (``escalate=``), its stored plan: thresholds, alpha, delta, the
    calibration runs and labels they rest on (:meth:`cascade_lines` reads it)."""
    _tally: RunTally | None = field(default=None, repr=False)

    def _add(self, result: SampleResult, keep: bool) -> None:
        self.n_samples += 1
        if keep:
            self.results.append(result)
        if self._tally is None:
            self._tally = RunTally(self.metrics)
        self._tally.add(result)

    def run_summary(self, prices: PriceTable | None = None) -> RunSummary:
        """The whole run's :class:`~assay.run.RunSummary` (from the store when the run has one)."""
        if self.run_id is not None and self.store_path is not None:
            with RunStore(self.store_path) as store:
                return store.summary(self.run_id, prices)
        errors = [str(error) for error in self.errors]
        if prices is not None:
            return summarize_results(self.results, self.metrics, row_errors=errors, prices=prices)
        tally = self._tally or RunTally(self.metrics)
        tally.row_errors, tally.n_row_errors = errors, len(errors)
        return tally.summary()

    def scores(self, metric: str) -> list[Score]:
        """All kept scores of one metric, in input order."""
        return [r.scores[metric] for r in self.results if metric in r.scores]

    def summary(self) -> dict[str, Summary]:
        """Per metric: mean over scored samples, unscored counts by reason, invalid input rows, tokens.

        ``n_invalid`` is the run's invalid input rows (never judged, so in neither
        ``n_scored`` nor ``n_unscored``); :attr:`errors` says what was wrong with each.
        """
        summaries = self.run_summary().metrics
        return {m: summaries.get(m) or summarize(m, ()) for m in self.metrics}

    def usage(self) -> Usage:
        """Tokens over every metric and sample."""
        total = Usage()
        for s in self.summary().values():
            total = total + s.usage
        return total

    def lowest(self, metric: str, n: int = 5) -> list[SampleResult]:
        """The ``n`` (at most 10) scored samples with the lowest value of ``metric``."""
        return list(self.run_summary().lowest.get(metric, ()))[:n]

    def _all_results(self) -> Iterable[SampleResult]:
        if self.run_id is not None and self.store_path is not None:
            with RunStore(self.store_path) as store:
                yield from store.results(self.run_id)
        else:
            yield from self.results

    def to_records(self) -> list[dict[str, Any]]:
        """One flat row per (sample, repeat, metric): id, question, answer, value, reasons, failing statements.

        For a stored run, every stored result (a resumed run's earlier part too).
        """
        rows = []
        for result in self._all_results():
            for name, score in result.scores.items():
                rows.append(
                    {
                        "id": result.sample.id,
                        "line": result.line,
                        "repeat": result.repeat,
                        "question": result.sample.question,
                        "answer": result.sample.answer,
                        "metric": name,
                        "value": score.value,
                        "unscored_reason": score.unscored_reason.value if score.unscored_reason else None,
                        "n_verdicts": len(score.verdicts),
                        "n_failing": len(score.failing),
                        "failing": [v.subject for v in score.failing],
                        "explanation": score.explanation or score.detail,
                        "prompt_tokens": score.usage.prompt_tokens,
                        "completion_tokens": score.usage.completion_tokens,
                        "judge_calls": len(score.all_calls),
                    }
                )
        return rows

    def to_wide_records(self) -> list[dict[str, Any]]:
        """One row per (sample, repeat), in input order, with a column per metric (the wide frame).

        Columns: id, line, repeat, question, answer, reference, and per metric its value
        (``None`` when unscored), ``<metric>_reason`` and ``<metric>_unscored``: the shape of
        Ragas' ``to_pandas()``. For a stored run, every stored result.
        """
        from assay.run._frames import wide_rows

        return list(wide_rows((r.to_record() for r in self._all_results()), self.metrics))

    def to_pandas(self, *, wide: bool = False) -> pd.DataFrame:
        """The results as a DataFrame (needs pandas), in input order.

        One row per (sample, metric) (:meth:`to_records`), or with ``wide=True`` one row per
        sample and a column per metric (:meth:`to_wide_records`).
        """
        try:
            import pandas as pd
        except ImportError as exc:
            from assay.errors import MissingExtraError

            raise MissingExtraError("pandas", "pandas", "EvalResult.to_pandas()") from exc
        return pd.DataFrame(self.to_wide_records() if wide else self.to_records())

    def _stored(self, what: str) -> tuple[str, Path]:
        if self.run_id is None or self.store_path is None:
            raise ConfigError(f"{what} needs a stored run: evaluate(..., store='.assay/runs.sqlite')")
        return self.run_id, self.store_path

    def cascade_lines(self, metric: str) -> list[str]:
        """A cascade metric's plan, then the share decided per level, the guarantee, review and calls saved.

        Raises:
            ConfigError: ``metric`` was not judged by a cascade in this run.
        """
        from assay.run._cascade import cascade_lines, plan_lines

        plan = self.cascade.get(metric)
        if plan is None:
            raise ConfigError(f"{metric!r} was not judged by a cascade in this run (evaluate(..., escalate=[...]))")
        scores = [r.scores[metric] for r in self._all_results() if metric in r.scores]
        return [*plan_lines(plan), *cascade_lines(plan, scores)]

    def gate(self, metric: str | None = None, **policy: Any) -> GateResult:
        """Gate the stored run as ``assay gate`` does: ``result.gate("faithfulness", threshold=0.8)``.

        ``policy`` takes :class:`~assay.analysis.GatePolicy`'s fields. As ``assay gate``, it
        never passes a partial run: a run that was interrupted, failed or is still running,
        or that had invalid input rows (more than ``max_invalid_rows``, default 0), is
        ``incomplete`` (its ``partial`` says how many rows were never judged and why) unless
        ``allow_partial=True``. A metric whose judge's measured agreement has a CI reaching
        chance (:attr:`trust`) is ``untrusted`` unless ``allow_untrusted_judge=True``.
        """
        from assay.analysis import GatePolicy, analyze_repeats, evaluate_gate, metrics_in, no_such_metric

        run_id, store_path = self._stored("gate()")
        name = metric or self.metrics[0]
        gate_policy = GatePolicy(**policy)  # a threshold out of [0, 1] is refused before the store is read
        with RunStore(store_path) as store:
            records = list(store.records(run_id))
            coverage = store.coverage(run_id)
        known = list(dict.fromkeys([*self.metrics, *metrics_in(records)]))
        if name not in known:  # as assay gate says it, not a bare KeyError
            raise no_such_metric(run_id, name, known)
        if name not in metrics_in(records):
            raise ConfigError(
                f"run {run_id} has no result for {name!r}: nothing was judged "
                f"({coverage.n_invalid} invalid input rows; see result.errors)"
            )
        figure = self.trust.get(name)
        untrusted = figure.untrusted_reason() if figure is not None and figure.untrusted else None
        return evaluate_gate(analyze_repeats(records, name), gate_policy, coverage, untrusted=untrusted)

    def __repr__(self) -> str:
        parts = []
        for name, s in self.summary().items():
            mean = "nan" if math.isnan(s.mean) else f"{s.mean:.3f}"
            parts.append(f"{name}={mean} (scored {s.n_scored}, unscored {s.n_unscored})")
        run = f"run {self.run_id}, " if self.run_id else ""
        counts = f"{counted(self.n_samples, 'sample')}, {counted(len(self.errors), 'invalid row')}"
        return f"EvalResult({run}{counts}; {', '.join(parts)})"
