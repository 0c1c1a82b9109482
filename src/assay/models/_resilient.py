"""The one layer that retries: transport faults, rate limits, timeouts.

:class:`ResilientJudge` wraps any backend. Backends make exactly one attempt (the SDKs'
own retries are off); this wrapper decides whether to try again:

- transient failures (429, 408, 5xx, timeouts, dropped connections: an error whose
  ``transient`` attribute is true) are retried with exponential backoff and full jitter;
  the call that got a ``Retry-After`` waits at least that long, and only that call waits;
- every attempt takes a slot from a shared :class:`RateLimiter`: a concurrency limit that
  backs off like TCP (at most one halving per window of calls in flight, slow start back
  to the level before it, then one more per window of successes), and optional
  requests-per-minute and tokens-per-minute budgets;
- each attempt has its own timeout, so a hung call holds its slot at most that long.

Output problems (bad JSON, refusals) are not transport faults and are never retried here;
the prompt layer may re-ask once with the validation error (see ``assay.prompts.ask``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
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


_HELD: ContextVar[tuple[RateLimiter, int] | None] = ContextVar("assay_limiter_slot", default=None)
"""The limiter slot the current task holds, and that slot's number (the order it was granted in)."""


@dataclass
class RateLimiter:
    """Shared by every call of a run: concurrency (adaptive), and RPM / TPM budgets.

    The adaptive concurrency limit backs off the way TCP's congestion window does
    (``docs/design/backoff.md``):

    - a 429 halves the limit, at most once per window of calls in flight: a 429 from a
      call granted before the last decrease is ignored, since the window it belonged to
      has been halved already (a burst of N 429s is one decrease, not N);
    - after a decrease the limit grows by one per success (slow start: it doubles per
      window) back up to the level it was halved from, then by one per ``limit``
      successes (additive increase) up to ``max_concurrency``;
    - nobody pauses for another call's ``Retry-After``: the call that got it waits
      before its retry (:class:`ResilientJudge`), the others go on within the limit and
      the budgets.

    Attributes:
        max_concurrency: The ceiling; the live limit starts here.
        rpm: Requests per minute, or ``None`` for no budget.
        tpm: Tokens per minute (prompt estimate + max completion), or ``None``.
        adaptive: Adapt the limit to 429s as above; ``False`` keeps it at the ceiling.
        limit: The live concurrency limit.
        in_flight: Slots held now.
        rate_limited: 429s reported.
        decreases: Times the limit was halved.
    """

    max_concurrency: int
    rpm: float | None = None
    tpm: float | None = None
    adaptive: bool = True
    limit: int = field(init=False)
    in_flight: int = field(default=0, init=False)
    rate_limited: int = field(default=0, init=False)
    decreases: int = field(default=0, init=False)
    _granted: int = field(default=0, init=False)  # slots granted so far; a slot's number is its rank
    _recover: int = field(default=0, init=False)  # slots numbered below this were granted before the last decrease
    _old_in_flight: int = field(default=0, init=False)  # how many of those are still in flight
    _restore_to: int = field(default=0, init=False)  # slow start (one per success) up to this level
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
                wait = 0.0
                if self._rpm is not None:
                    wait = max(wait, self._rpm.wait_time(1))
                if self._tpm is not None and tokens:
                    wait = max(wait, self._tpm.wait_time(tokens))
                if wait == 0.0 and self.in_flight < self.limit:
                    break
                # Not asyncio.wait_for: it waits in a task of its own, and a second cancellation
                # (Ctrl-C cancels the run, then asyncio.run cancels what is left) returns before
                # that task has taken the lock back, so leaving ``async with cond`` raised
                # "RuntimeError: Lock is not acquired" and the sample was stored as a metric
                # error. Condition.wait in this task always takes the lock back, however often
                # it is cancelled.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait if wait > 0 else None):
                        await cond.wait()
            self.in_flight += 1
            number = self._granted
            self._granted += 1
            if self._rpm is not None:
                self._rpm.take(1)
            if self._tpm is not None and tokens:
                self._tpm.take(tokens)
        outer = _HELD.get()
        _HELD.set((self, number))  # so that throttled() knows which window a 429 belongs to
        try:
            yield
        finally:
            _HELD.set(outer)  # not reset(token): a slot may be released from another task
            async with cond:
                self.in_flight -= 1
                if number < self._recover:
                    self._old_in_flight -= 1
                cond.notify_all()

    async def settle_tokens(self, estimated: int, actual: int) -> None:
        """Correct the token budget once the real usage of a call is known."""
        if self._tpm is not None and estimated > actual:
            async with self._condition():
                self._tpm.give_back(estimated - actual)
                self._condition().notify_all()

    async def succeeded(self) -> None:
        """Record a success, and grow the limit.

        One more in flight per success up to the level before the last decrease (slow
        start), then one more per ``limit`` successes (additive increase).
        """
        if not self.adaptive:
            return
        async with self._condition():
            if self.limit >= self.max_concurrency:
                return
            if self.limit < self._restore_to:
                self.limit += 1
            else:
                self._successes += 1
                if self._successes < self.limit:
                    return
                self.limit += 1
                self._successes = 0
            self._condition().notify_all()

    async def throttled(self, retry_after: float | None) -> None:
        """Record a 429: halve the limit unless the window it came from was halved already.

        Called by the throttled call while it still holds its slot, so the limiter knows
        when that call was granted: a call granted before the last decrease cannot cause
        another one. A report from elsewhere (the Ray engine's cluster-wide limiter hears
        of 429s by message) is ignored while any call granted before the last decrease is
        still in flight. ``retry_after`` is the reporting call's own wait (see
        :class:`ResilientJudge`): nobody else pauses for it.
        """
        async with self._condition():
            self.rate_limited += 1
            if not self.adaptive:
                return
            held = _HELD.get()
            if held is not None and held[0] is self:
                if held[1] < self._recover:  # granted before the last decrease
                    return
            elif self._old_in_flight > 0:  # the reporter may be one of the old window's calls
                return
            self._restore_to = self.limit
            self.limit = max(1, self.limit // 2)
            self._successes = 0
            self._recover = self._granted
            self._old_in_flight = self.in_flight
            self.decreases += 1


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
                    async with asyncio.timeout(self.policy.timeout_s):  # in this task: see slot()
                        response = await self.inner.generate(messages, schema=schema, config=config)
                except TimeoutError:
                    error = _timeout_error(self.policy.timeout_s)
                except JudgeError as exc:
                    error = exc
                else:
                    await self.limiter.succeeded()
                    await self.limiter.settle_tokens(estimate, response.usage.total_tokens)
                    return response.model_copy(update={"attempts": attempt}) if attempt > 1 else response
                retry_after = getattr(error, "retry_after", None)
                if getattr(error, "status_code", None) == 429:
                    # Still holding the slot: the limiter tells a stale 429 from a new one by it.
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
