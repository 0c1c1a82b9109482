"""Evaluate metrics over samples: the function behind ``assay run``.

The runner streams its input through a bounded queue to a pool of workers (memory stays
bounded for inputs of any size), wraps the judge once in the layers that own
cross-cutting concerns, and reports each sample's result as it finishes::

    metric -> ask() [re-asks invalid output] -> _RepeatJudge [repeat index into config]
           -> CachedJudge [answers from disk] -> ResilientJudge [retries, timeouts, limits]
           -> backend
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import heapq
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from assay._samples import Sample
from assay._scores import Score, Summary, Usage
from assay.errors import ConfigError, SampleError
from assay.metrics._base import Metric, score_safely
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse, close_judge
from assay.models._registry import get_judge
from assay.models._resilient import RateLimiter, ResilientJudge, RetryPolicy
from assay.models._wrapper import JudgeWrapper
from assay.prompts import REASKS
from assay.run._cache import CachedJudge, JudgeCache
from assay.run._dataset import Row, sample_from_record

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvalResult", "Limits", "SampleResult", "aevaluate", "evaluate"]

_REPEAT: ContextVar[int] = ContextVar("assay_repeat", default=0)


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


@dataclass(frozen=True)
class Limits:
    """How hard the runner may push a judge.

    Attributes:
        concurrency: Samples (and calls) in flight at once; default what the judge supports.
        rpm: Requests-per-minute budget, or ``None``.
        tpm: Tokens-per-minute budget (prompt estimate + max completion), or ``None``.
        timeout_s: Per-call timeout.
        max_attempts: Tries per call for transient failures (429, 5xx, timeouts).
        backoff_s: The first retry's backoff ceiling; doubles per retry (full jitter).
        adaptive: Halve concurrency on a 429 and grow it back after successes.
    """

    concurrency: int | None = None
    rpm: float | None = None
    tpm: float | None = None
    timeout_s: float | None = 120.0
    max_attempts: int = 6
    backoff_s: float = 0.5
    adaptive: bool = True


class _Running:
    """Aggregates of one metric, kept incrementally (no list of scores needed)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.n = 0
        self.reasons: dict[str, int] = {}
        self.usage = Usage()

    def add(self, score: Score) -> None:
        self.usage = self.usage + score.usage
        if score.unscored_reason is None:
            self.total += score.value
            self.n += 1
        else:
            key = score.unscored_reason.value
            self.reasons[key] = self.reasons.get(key, 0) + 1

    def summary(self, metric: str) -> Summary:
        return Summary(
            metric=metric,
            mean=self.total / self.n if self.n else math.nan,
            n_scored=self.n,
            n_unscored=sum(self.reasons.values()),
            unscored_by_reason=dict(sorted(self.reasons.items())),
            usage=self.usage,
        )


@dataclass
class EvalResult:
    """The outcome of :func:`evaluate`: per-sample results, bad input rows, and summaries.

    With ``keep_results=False`` (streaming huge inputs), ``results`` stays empty while
    :meth:`summary` and :meth:`lowest` still cover every sample.
    """

    metrics: tuple[str, ...]
    judge: str
    results: list[SampleResult] = field(default_factory=list)
    errors: list[SampleError] = field(default_factory=list)
    skipped: int = 0
    n_samples: int = 0
    _running: dict[str, _Running] = field(default_factory=dict, repr=False)
    _lowest: dict[str, list[tuple[float, int, SampleResult]]] = field(default_factory=dict, repr=False)

    def _add(self, result: SampleResult, keep: bool, lowest_k: int = 10) -> None:
        self.n_samples += 1
        if keep:
            self.results.append(result)
        for name, score in result.scores.items():
            self._running.setdefault(name, _Running()).add(score)
            if score.is_scored:
                heap = self._lowest.setdefault(name, [])
                item = (-score.value, self.n_samples, result)  # max-heap of the k lowest
                if len(heap) < lowest_k:
                    heapq.heappush(heap, item)
                elif item > heap[0]:
                    heapq.heapreplace(heap, item)

    def scores(self, metric: str) -> list[Score]:
        """All kept scores of one metric, in completion order."""
        return [r.scores[metric] for r in self.results if metric in r.scores]

    def summary(self) -> dict[str, Summary]:
        """Per metric: mean over scored samples, unscored counts by reason, tokens."""
        return {m: self._running.get(m, _Running()).summary(m) for m in self.metrics}

    def usage(self) -> Usage:
        """Tokens over every metric and sample."""
        total = Usage()
        for running in self._running.values():
            total = total + running.usage
        return total

    def lowest(self, metric: str, n: int = 5) -> list[SampleResult]:
        """The ``n`` (at most 10) scored samples with the lowest value of ``metric``."""
        heap = self._lowest.get(metric, [])
        return [r for _, _, r in sorted(heap, key=lambda item: (-item[0], item[1]))][:n]

    def to_records(self) -> list[dict[str, Any]]:
        """One flat row per kept (sample, metric), for DataFrames and CSV."""
        rows = []
        for result in self.results:
            for name, score in result.scores.items():
                rows.append(
                    {
                        "id": result.sample.id,
                        "repeat": result.repeat,
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
        return f"EvalResult({self.n_samples} samples, {len(self.errors)} bad rows; {', '.join(parts)})"


class _RepeatJudge(JudgeWrapper):
    """Puts the current repeat index (and a run-wide temperature) into every call's config."""

    def __init__(self, inner: JudgeModel, temperature: float | None = None) -> None:
        super().__init__(inner)
        self.temperature = temperature

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        update: dict[str, Any] = {"repeat": _REPEAT.get()}
        if self.temperature is not None:
            update["temperature"] = self.temperature
        config = (config or GenerateConfig()).model_copy(update=update)
        return await self.inner.generate(messages, schema=schema, config=config)


def _stack(
    judge: JudgeModel, limits: Limits, cache: JudgeCache | None, workers: int, temperature: float | None = None
) -> JudgeModel:
    limiter = RateLimiter(max_concurrency=workers, rpm=limits.rpm, tpm=limits.tpm, adaptive=limits.adaptive)
    # An in-process model cannot be interrupted mid-call: a timeout would only orphan its thread.
    timeout = limits.timeout_s if getattr(judge, "interruptible", True) else None
    policy = RetryPolicy(max_attempts=limits.max_attempts, base_delay_s=limits.backoff_s, timeout_s=timeout)
    stacked: JudgeModel = ResilientJudge(judge, limiter=limiter, policy=policy)
    if cache is not None:
        stacked = CachedJudge(stacked, cache)
    return _RepeatJudge(stacked, temperature)


async def aevaluate(
    samples: Iterable[Sample | Row | Mapping[str, Any] | SampleError],
    metrics: Metric | Sequence[Metric],
    judge: JudgeModel | str | None = None,
    *,
    concurrency: int | None = None,
    limits: Limits | None = None,
    cache: JudgeCache | None = None,
    repeats: int = 1,
    reasks: int | None = None,
    temperature: float | None = None,
    skip: Collection[tuple[str, int]] = (),
    on_result: Callable[[SampleResult], None] | None = None,
    on_error: Callable[[SampleError], None] | None = None,
    keep_results: bool = True,
) -> EvalResult:
    """Score every sample with every metric; see :func:`evaluate`."""
    metric_list: list[Metric] = [metrics] if isinstance(metrics, Metric) else list(metrics)
    names = [m.name for m in metric_list]
    if len(set(names)) != len(names):
        raise ConfigError(f"metric names must be unique, got {names}")
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    limits = limits or Limits()
    judge_model = judge if not isinstance(judge, str | None) else get_judge(judge)
    workers = max(1, concurrency or limits.concurrency or judge_model.max_concurrency)
    stacked = _stack(judge_model, limits, cache, workers, temperature)
    result = EvalResult(metrics=tuple(names), judge=judge_model.model_id)
    queue: asyncio.Queue[tuple[Row, int] | None] = asyncio.Queue(maxsize=2 * workers)
    reasks_token = REASKS.set(reasks) if reasks is not None else None

    async def work() -> None:
        while (item := await queue.get()) is not None:
            row, repeat = item
            _REPEAT.set(repeat)
            scores = {m.name: await score_safely(m, row.sample, stacked) for m in metric_list}
            done = SampleResult(sample=row.sample, scores=scores, line=row.line, repeat=repeat)
            result._add(done, keep_results)
            if on_result is not None:
                on_result(done)

    def bad_row(error: SampleError) -> None:
        result.errors.append(error)
        if on_error is not None:
            on_error(error)

    async def put(row: Row) -> None:
        for repeat in range(repeats):
            if (str(row.line), repeat) in skip:
                result.skipped += 1
                continue
            await queue.put((row, repeat))

    tasks = [asyncio.create_task(work()) for _ in range(workers)]
    try:
        for index, item in enumerate(samples, start=1):
            if isinstance(item, SampleError):
                bad_row(item)
            elif isinstance(item, Row):
                await put(item)
            elif isinstance(item, Sample):
                await put(Row(item, index))
            else:
                try:
                    await put(Row(sample_from_record(dict(item), line=index), index))
                except SampleError as exc:
                    bad_row(exc)
        for _ in tasks:
            await queue.put(None)
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await close_judge(stacked)
        if reasks_token is not None:
            REASKS.reset(reasks_token)
    return result


def evaluate(
    samples: Iterable[Sample | Row | Mapping[str, Any] | SampleError],
    metrics: Metric | Sequence[Metric],
    judge: JudgeModel | str | None = None,
    *,
    concurrency: int | None = None,
    limits: Limits | None = None,
    cache: JudgeCache | None = None,
    repeats: int = 1,
    reasks: int | None = None,
    temperature: float | None = None,
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
        limits: Rate budgets, timeouts and retries (:class:`Limits`).
        cache: A :class:`~assay.run.JudgeCache`: identical calls are answered from disk.
        repeats: Score each sample this many times (real repeats: the repeat index is part
            of every call's cache key and local seed).
        reasks: Re-asks per invalid judge answer (default 1).
        temperature: Sampling temperature for every judge call (default: each metric's own,
            0). Use with ``repeats`` to measure how much the judge wobbles.
        on_result: Called with each sample's result as it finishes.
        on_error: Called with each invalid input row.

    Returns:
        An :class:`EvalResult`; ``.summary()``, ``.to_pandas()``, ``.lowest(metric)``.

    Judge failures never raise: they become unscored scores with a reason. Works inside a
    running event loop (Jupyter) by running in a worker thread.
    """
    coro = aevaluate(
        samples,
        metrics,
        judge,
        concurrency=concurrency,
        limits=limits,
        cache=cache,
        repeats=repeats,
        reasks=reasks,
        temperature=temperature,
        on_result=on_result,
        on_error=on_error,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
