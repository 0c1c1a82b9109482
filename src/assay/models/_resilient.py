"""The one layer that retries: transport faults, rate limits, timeouts.

:class:`ResilientJudge` wraps any backend. Backends make exactly one attempt (the SDKs'
own retries are off); this wrapper decides whether to try again:

- transient failures (429, 408, 5xx, timeouts, dropped connections: an error whose
  ``transient`` attribute is true) are retried with exponential backoff and full jitter,
  waiting at least what the server asked for in ``Retry-After``;
- every attempt takes a slot from a shared :class:`RateLimiter`: a concurrency limit that
  halves on a 429 and grows back by one after a window of successes (AIMD), and optional
  requests-per-minute and tokens-per-minute budgets;
- each attempt has its own timeout.

Output problems (bad JSON, refusals) are not transport faults and are never retried here;
the prompt layer may re-ask once with the validation error (see ``assay.prompts.ask``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from assay.errors import ConfigError, JudgeError
from assay.models._protocol import ChatMessage, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._wrapper import JudgeWrapper

__all__ = ["RateLimiter", "ResilientJudge", "RetryPolicy"]


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried.

    Attributes:
        max_attempts: Tries per call, the first included.
        base_delay_s: Backoff before the second try; doubles each time (full jitter).
        max_delay_s: Upper bound of one backoff.
        timeout_s: Per-attempt timeout (``None``: the backend's own).
    """

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    timeout_s: float | None = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ConfigError(f"timeout must be positive, got {self.timeout_s}")

    def backoff(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        delay = rng.uniform(0, ceiling)
        return max(delay, retry_after or 0.0)


class _Bucket:
    """A token bucket: ``rate`` per second, holding at most ``capacity``."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute / 60.0)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_time(self, amount: float) -> float:
        self._refill()
        need = min(amount, self.capacity)  # a request larger than the bucket waits for a full one
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        self._refill()
        self.level -= amount

    def give_back(self, amount: float) -> None:
        self._refill()
        self.level = min(self.capacity, self.level + amount)


@dataclass
class RateLimiter:
    """Shared by every call of a run: concurrency (adaptive), and RPM / TPM budgets.

    Attributes:
        max_concurrency: The ceiling; the live limit starts here.
        rpm: Requests per minute, or ``None`` for no budget.
        tpm: Tokens per minute (prompt estimate + max completion), or ``None``.
        adaptive: Halve the limit on a 429, then add one after ``limit`` successes.
    """

    max_concurrency: int
    rpm: float | None = None
    tpm: float | None = None
    adaptive: bool = True
    limit: int = field(init=False)
    in_flight: int = field(default=0, init=False)
    rate_limited: int = field(default=0, init=False)
    _paused_until: float = field(default=0.0, init=False)
    _successes: int = field(default=0, init=False)
    _cond: asyncio.Condition | None = field(default=None, init=False, repr=False)
    _rpm: _Bucket | None = field(default=None, init=False, repr=False)
    _tpm: _Bucket | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {self.max_concurrency}")
        for name, value in (("rpm", self.rpm), ("tpm", self.tpm)):
            if value is not None and value <= 0:
                raise ConfigError(f"{name} must be positive, got {value}")
        self.limit = self.max_concurrency
        self._rpm = _Bucket(self.rpm) if self.rpm else None
        self._tpm = _Bucket(self.tpm) if self.tpm else None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    @contextlib.asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[None]:
        """Hold one request slot (and its share of the budgets) for the duration."""
        cond = self._condition()
        async with cond:
            while True:
                now = time.monotonic()
                wait = max(0.0, self._paused_until - now)
                if self._rpm is not None:
                    wait = max(wait, self._rpm.wait_time(1))
                if self._tpm is not None and tokens:
                    wait = max(wait, self._tpm.wait_time(tokens))
                if wait == 0.0 and self.in_flight < self.limit:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(cond.wait(), timeout=wait if wait > 0 else None)
            self.in_flight += 1
            if self._rpm is not None:
                self._rpm.take(1)
            if self._tpm is not None and tokens:
                self._tpm.take(tokens)
        try:
            yield
        finally:
            async with cond:
                self.in_flight -= 1
                cond.notify_all()

    async def settle_tokens(self, estimated: int, actual: int) -> None:
        """Correct the token budget once the real usage of a call is known."""
        if self._tpm is not None and estimated > actual:
            async with self._condition():
                self._tpm.give_back(estimated - actual)
                self._condition().notify_all()

    async def succeeded(self) -> None:
        """Record a success: after ``limit`` of them in a row, allow one more in flight."""
        if not self.adaptive:
            return
        async with self._condition():
            self._successes += 1
            if self.limit < self.max_concurrency and self._successes >= self.limit:
                self.limit += 1
                self._successes = 0
                self._condition().notify_all()

    async def throttled(self, retry_after: float | None) -> None:
        """Record a 429: halve the limit, and pause everyone for ``retry_after`` seconds."""
        async with self._condition():
            self.rate_limited += 1
            self._successes = 0
            if self.adaptive:
                self.limit = max(1, self.limit // 2)
            if retry_after:
                self._paused_until = max(self._paused_until, time.monotonic() + retry_after)


def _estimate_tokens(messages: Sequence[ChatMessage], config: GenerateConfig) -> int:
    return sum(len(m["content"]) for m in messages) // 4 + config.max_tokens


class ResilientJudge(JudgeWrapper):
    """A judge that retries its inner judge's transient failures under a shared limiter."""

    def __init__(
        self,
        inner: JudgeModel,
        *,
        limiter: RateLimiter | None = None,
        policy: RetryPolicy | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(inner)
        self.limiter = limiter or RateLimiter(inner.max_concurrency)
        self.policy = policy or RetryPolicy()
        self.retries = 0
        self._rng = random.Random(seed)

    @property
    def max_concurrency(self) -> int:
        """The limiter's ceiling."""
        return self.limiter.max_concurrency

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Call the inner judge, retrying transient failures; raise the last error otherwise."""
        config = config or GenerateConfig()
        estimate = _estimate_tokens(messages, config)
        for attempt in range(1, self.policy.max_attempts + 1):
            error: JudgeError
            async with self.limiter.slot(estimate):
                try:
                    response = await asyncio.wait_for(
                        self.inner.generate(messages, schema=schema, config=config), self.policy.timeout_s
                    )
                except TimeoutError:
                    error = _timeout_error(self.policy.timeout_s)
                except JudgeError as exc:
                    error = exc
                else:
                    await self.limiter.succeeded()
                    await self.limiter.settle_tokens(estimate, response.usage.total_tokens)
                    return response.model_copy(update={"attempts": attempt}) if attempt > 1 else response
            status = getattr(error, "status_code", None)
            retry_after = getattr(error, "retry_after", None)
            if status == 429:
                await self.limiter.throttled(retry_after)
            if not getattr(error, "transient", False) or attempt == self.policy.max_attempts:
                error.attempts = attempt  # type: ignore[attr-defined]
                raise error
            self.retries += 1
            await asyncio.sleep(self.policy.backoff(attempt, retry_after, self._rng))
        raise AssertionError("unreachable")  # pragma: no cover


class _TimeoutJudgeError(JudgeError):
    transient = True
    status_code = None
    retry_after = None


def _timeout_error(seconds: float | None) -> JudgeError:
    return _TimeoutJudgeError(f"judge call timed out after {seconds:g}s")
