"""The one place that wraps a judge in the layers owning cross-cutting concerns.

Every caller (the local engine, the Ray engine's workers, ``assay calibrate``, the
retrieval :class:`~assay.retrieval.LLMJudge`) builds its judge stack here, so a layer
added or fixed here holds everywhere (a second hand-built copy once dropped
``--temperature`` on the Ray engine)::

    caller -> _RepeatJudge [repeat index, run-wide temperature into the config]
           (-> ConfidentJudge [P(choice) by log-probabilities or samples, when asked])
           -> CachedJudge [answers from disk; stores only validated answers]
           -> ResilientJudge [the one retry layer: 429/5xx/timeouts, rate limits]
           -> backend

The cache sits above the retry layer, so a retried call is cached once, under the key of
the request (never an error); it sits below the repeat layer, so the repeat index and
the temperature are part of its key. A :class:`~assay.models.ConfidentJudge` given as the
judge is rebuilt over the stack of its inner judge, below the repeat layer: each call it
makes for a probability (one with log-probabilities, or ``K`` samples) is cached, retried
and rate-limited like any other, and a run-wide ``--temperature`` never changes its
samples' temperature (at 0 every sample would agree, and P would say a certainty it does
not have).
"""

from __future__ import annotations

import asyncio
import functools
import warnings
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from assay.models._cache import CachedJudge, JudgeCache
from assay.models._confidence import ConfidentJudge
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._resilient import RateLimiter, ResilientJudge, RetryPolicy
from assay.models._wrapper import JudgeWrapper

_T = TypeVar("_T")

__all__ = ["CountedJudge", "Limits", "build_judge_stack", "same_in_every_repeat"]


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


_REPEAT: ContextVar[int] = ContextVar("assay_repeat", default=0)
"""The repeat index of the sample being scored; set per task by the engines."""

_SAME_IN_EVERY_REPEAT: ContextVar[bool] = ContextVar("assay_same_in_every_repeat", default=False)


@contextmanager
def same_in_every_repeat() -> Iterator[None]:
    """Calls made inside are the same in every repeat: no repeat index, no run-wide temperature.

    Faithfulness decomposes an answer inside it, so ``--repeats`` at a temperature above 0
    re-judges the same statements (and, with a cache, decomposes once): what repeats
    measure is the verdicts' noise, which is what the gate's flake estimate models.
    """
    token = _SAME_IN_EVERY_REPEAT.set(True)
    try:
        yield
    finally:
        _SAME_IN_EVERY_REPEAT.reset(token)


class CountedJudge(JudgeWrapper):
    """Calls ``on_call(cached)`` after every answer of the judge (generated, or choices and strings scored).

    The runner's progress moves with each judge call this way, not only when a sample is
    done. The optional capabilities (``choice_probabilities``, ``complete_string``) are
    counted too, and stay present exactly when the inner judge has them; a probability an
    API judge read from K samples counts K calls (its ``exchanges``). ``cached``: the answer
    came from the judge-call cache (no model was asked); a failed call is not cached.
    """

    def __init__(self, inner: JudgeModel, on_call: Callable[[bool], None]) -> None:
        super().__init__(inner)
        self.on_call = on_call

    def _capability(self, name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(method)
        async def counted(*args: Any, **kwargs: Any) -> Any:
            return await self._counting(method(*args, **kwargs))

        return counted

    async def _counting(self, call: Awaitable[_T]) -> _T:
        """Await a judge call and count it once it answered or failed; a cancelled call (Ctrl-C) is not counted.

        Under ``--rpm`` most cancelled calls were still waiting for their slot and never
        reached the judge: counting them made an interrupted run report calls never sent.
        """
        try:
            result = await call
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self._count(exc)
            raise
        self._count(result)
        return result

    def _count(self, answer: object) -> None:
        """One call, or each model call an API judge made for a probability (K samples are K calls)."""
        for each in getattr(answer, "exchanges", ()) or (answer,):
            self.on_call(getattr(each, "cached", False) is True)

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        return await self._counting(self.inner.generate(messages, schema=schema, config=config))


class _RepeatJudge(JudgeWrapper):
    """Puts the current repeat index (and a run-wide temperature) into every call's config.

    A choice's probabilities and a string's continuation get the repeat index too (not the
    temperature: a probability is read at none, and a reason is written as its caller asks),
    so the cache keeps each repeat's apart, as it keeps each repeat's answers.
    """

    def _capability(self, name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(method)
        async def repeated(*args: Any, config: GenerateConfig | None = None, **kwargs: Any) -> Any:
            if not _SAME_IN_EVERY_REPEAT.get():
                config = (config or GenerateConfig()).model_copy(update={"repeat": _REPEAT.get()})
            return await method(*args, config=config, **kwargs)

        return repeated

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
        if _SAME_IN_EVERY_REPEAT.get():
            return await self.inner.generate(messages, schema=schema, config=config)
        update: dict[str, Any] = {"repeat": _REPEAT.get()}
        if self.temperature is not None:
            update["temperature"] = self.temperature
        config = (config or GenerateConfig()).model_copy(update=update)
        return await self.inner.generate(messages, schema=schema, config=config)


def build_judge_stack(
    judge: JudgeModel,
    *,
    limits: Limits,
    cache: JudgeCache | None = None,
    temperature: float | None = None,
    limiter: RateLimiter | None = None,
    workers: int | None = None,
) -> JudgeModel:
    """Wrap ``judge`` in the repeat, cache and retry layers, in that order.

    Args:
        judge: The backend (a bare judge: the stack adds the one retry layer).
        limits: Timeouts, retries and rate budgets (:class:`~assay.run.Limits`).
        cache: Answers from disk when given; only validated answers are stored.
        temperature: A run-wide sampling temperature for every call (default: each
            caller's own config).
        limiter: The request slots and budgets shared by every call (the Ray engine
            passes one that also asks the cluster-wide limiter). Default: a new
            :class:`~assay.models.RateLimiter` from ``limits``.
        workers: The concurrency ceiling of the default limiter (default:
            ``limits.concurrency``, else what the judge supports).

    Returns:
        The judge to hand to metrics; close it with :func:`~assay.models.close_judge`.
    """
    if isinstance(judge, ConfidentJudge):
        inner = _stacked(judge.inner, limits=limits, cache=cache, limiter=limiter, workers=workers)
        return _RepeatJudge(judge.over(inner, repeat=_repeat_index), temperature)
    return _RepeatJudge(_stacked(judge, limits=limits, cache=cache, limiter=limiter, workers=workers), temperature)


def _repeat_index() -> int:
    """The repeat index a call made now belongs to (0 inside :func:`same_in_every_repeat`)."""
    return 0 if _SAME_IN_EVERY_REPEAT.get() else _REPEAT.get()


def _stacked(
    judge: JudgeModel,
    *,
    limits: Limits,
    cache: JudgeCache | None,
    limiter: RateLimiter | None,
    workers: int | None,
) -> JudgeModel:
    """``judge`` under the cache and retry layers (everything but the repeat layer)."""
    samples = max(1, workers or limits.concurrency or judge.max_concurrency)
    if samples > judge.max_concurrency and judge.batched_calls > 1:
        warnings.warn(
            f"{samples} samples in flight on {judge.model_id}, which decodes the calls in flight together: "
            "which calls share a batch then depends on timing, and a verdict near its threshold can differ "
            f"between two runs of the same data (at {judge.max_concurrency}, the judge's own, they do not)",
            RuntimeWarning,
            stacklevel=3,
        )
    if limiter is None:
        # a judge that decodes calls together gets them together: a worker's calls share its slots
        ceiling = samples * max(1, judge.batched_calls)
        limiter = RateLimiter(max_concurrency=ceiling, rpm=limits.rpm, tpm=limits.tpm, adaptive=limits.adaptive)
    # An in-process model cannot be interrupted mid-call: a timeout would only orphan its thread.
    timeout = limits.timeout_s if judge.interruptible else None
    policy = RetryPolicy(max_attempts=limits.max_attempts, base_delay_s=limits.backoff_s, timeout_s=timeout)
    stacked: JudgeModel = ResilientJudge(judge, limiter=limiter, policy=policy)
    if cache is not None:
        stacked = CachedJudge(stacked, cache)
    return stacked
