"""Evaluate metrics over samples: the function behind ``assay run``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay._samples import Sample
from assay._scores import Score, Summary, summarize
from assay.errors import SampleError
from assay.metrics._base import Metric, score_safely
from assay.models._protocol import JudgeModel, close_judge
from assay.models._registry import get_judge
from assay.run._dataset import Row, sample_from_record

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvalResult", "SampleResult", "aevaluate", "evaluate"]


@dataclass(frozen=True)
class SampleResult:
    """Every metric's score for one sample."""

    sample: Sample
    scores: Mapping[str, Score]
    line: int

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict: the sample, and each score with verdicts, reasons and calls."""
        return {
            "id": self.sample.id,
            "line": self.line,
            "sample": self.sample.model_dump(mode="json", exclude_defaults=True),
            "scores": {name: score.model_dump(mode="json") for name, score in self.scores.items()},
        }


@dataclass
class EvalResult:
    """The outcome of :func:`evaluate`: per-sample results, bad input rows, and summaries."""

    metrics: tuple[str, ...]
    judge: str
    results: list[SampleResult] = field(default_factory=list)
    errors: list[SampleError] = field(default_factory=list)

    def scores(self, metric: str) -> list[Score]:
        """All scores of one metric, in completion order."""
        return [r.scores[metric] for r in self.results if metric in r.scores]

    def summary(self) -> dict[str, Summary]:
        """Per metric: mean over scored samples, unscored counts by reason, tokens."""
        return {m: summarize(m, self.scores(m)) for m in self.metrics}

    def lowest(self, metric: str, n: int = 5) -> list[SampleResult]:
        """The ``n`` scored samples with the lowest value of ``metric``."""
        scored = [r for r in self.results if metric in r.scores and r.scores[metric].is_scored]
        return sorted(scored, key=lambda r: r.scores[metric].value)[:n]

    def to_records(self) -> list[dict[str, Any]]:
        """One flat row per (sample, metric), for DataFrames and CSV."""
        rows = []
        for result in self.results:
            for name, score in result.scores.items():
                rows.append(
                    {
                        "id": result.sample.id,
                        "metric": name,
                        "value": score.value,
                        "unscored_reason": score.unscored_reason.value if score.unscored_reason else None,
                        "n_verdicts": len(score.verdicts),
                        "n_failing": len(score.failing),
                        "failing": [v.subject for v in score.failing],
                        "explanation": score.explanation or score.detail,
                        "prompt_tokens": score.usage.prompt_tokens,
                        "completion_tokens": score.usage.completion_tokens,
                        "judge_calls": len(score.calls),
                    }
                )
        return rows

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame of :meth:`to_records` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            from assay.errors import MissingExtraError

            raise MissingExtraError("pandas", "pandas", "EvalResult.to_pandas()") from exc
        return pd.DataFrame(self.to_records())

    def __repr__(self) -> str:
        parts = []
        for name, s in self.summary().items():
            mean = "nan" if math.isnan(s.mean) else f"{s.mean:.3f}"
            parts.append(f"{name}={mean} (scored {s.n_scored}, unscored {s.n_unscored})")
        return f"EvalResult({len(self.results)} samples, {len(self.errors)} bad rows; {', '.join(parts)})"


async def _score_one(sample: Sample, metrics: Sequence[Metric], judge: JudgeModel) -> dict[str, Score]:
    return {metric.name: await score_safely(metric, sample, judge) for metric in metrics}


async def aevaluate(
    samples: Iterable[Sample | Row | Mapping[str, Any] | SampleError],
    metrics: Metric | Sequence[Metric],
    judge: JudgeModel | str | None = None,
    *,
    concurrency: int | None = None,
    on_result: Callable[[SampleResult], None] | None = None,
    on_error: Callable[[SampleError], None] | None = None,
    keep_results: bool = True,
) -> EvalResult:
    """Score every sample with every metric; see :func:`evaluate`."""
    metric_list: list[Metric] = [metrics] if isinstance(metrics, Metric) else list(metrics)
    names = [m.name for m in metric_list]
    if len(set(names)) != len(names):
        from assay.errors import ConfigError

        raise ConfigError(f"metric names must be unique, got {names}")
    judge_model = judge if not isinstance(judge, str | None) else get_judge(judge)
    result = EvalResult(metrics=tuple(names), judge=judge_model.model_id)
    workers = max(1, concurrency or judge_model.max_concurrency)
    queue: asyncio.Queue[Row | None] = asyncio.Queue(maxsize=2 * workers)

    async def work() -> None:
        while (row := await queue.get()) is not None:
            scores = await _score_one(row.sample, metric_list, judge_model)
            done = SampleResult(sample=row.sample, scores=scores, line=row.line)
            if keep_results:
                result.results.append(done)
            if on_result is not None:
                on_result(done)

    def bad_row(error: SampleError) -> None:
        result.errors.append(error)
        if on_error is not None:
            on_error(error)

    tasks = [asyncio.create_task(work()) for _ in range(workers)]
    try:
        for index, item in enumerate(samples, start=1):
            if isinstance(item, SampleError):
                bad_row(item)
            elif isinstance(item, Row):
                await queue.put(item)
            elif isinstance(item, Sample):
                await queue.put(Row(item, index))
            else:
                try:
                    await queue.put(Row(sample_from_record(dict(item), line=index), index))
                except SampleError as exc:
                    bad_row(exc)
        for _ in tasks:
            await queue.put(None)
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await close_judge(judge_model)
    return result


def evaluate(
    samples: Iterable[Sample | Row | Mapping[str, Any] | SampleError],
    metrics: Metric | Sequence[Metric],
    judge: JudgeModel | str | None = None,
    *,
    concurrency: int | None = None,
    on_result: Callable[[SampleResult], None] | None = None,
    on_error: Callable[[SampleError], None] | None = None,
) -> EvalResult:
    """Score every sample with every metric.

    Args:
        samples: :class:`~assay.Sample` objects or dicts with the same fields (``input``,
            ``output``, ``retrieved_contexts`` and other common names are accepted).
        metrics: One metric or several, e.g. ``[Faithfulness()]``.
        judge: A :class:`~assay.models.JudgeModel`, a judge string (``"local"``,
            ``"openai:gpt-4o-mini"``), or ``None`` for ``$ASSAY_JUDGE`` / the local default.
        concurrency: Samples in flight at once (default: what the judge supports).
        on_result: Called with each sample's result as it finishes.
        on_error: Called with each invalid input row.

    Returns:
        An :class:`EvalResult`; ``.summary()``, ``.to_pandas()``, ``.lowest(metric)``.

    Judge failures never raise: they become unscored scores with a reason. Works inside a
    running event loop (Jupyter) by running in a worker thread.
    """
    coro = aevaluate(samples, metrics, judge, concurrency=concurrency, on_result=on_result, on_error=on_error)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
