"""The retry layer backs off like TCP: one decrease per window, no global pause, prompt regrowth.

Regressions for issue 14 part 10: at 30 % faults a run took 17x its fault-free time,
because every 429 halved the concurrency limit (a burst of N 429s halved it N times),
paused every call for its ``Retry-After``, and the limit grew back by one per ``limit``
successes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import pytest

from assay.models import FunctionJudge, RateLimiter, ResilientJudge, RetryPolicy
from assay.models._http import JudgeHTTPError
from assay.models._protocol import ChatMessage
from assay.models._testing import JudgeRequest


def _rate_limited(retry_after: float | None = 0.05) -> JudgeHTTPError:
    return JudgeHTTPError("429 Too Many Requests", status_code=429, retry_after=retry_after, transient=True)


async def _until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition never held")
        await asyncio.sleep(0.001)


def _prompt(text: str) -> list[ChatMessage]:
    return [{"role": "user", "content": text}]


# -- the limiter on its own -----------------------------------------------------------------


async def test_a_burst_of_429s_from_calls_in_flight_together_halves_the_limit_once() -> None:
    limiter = RateLimiter(max_concurrency=16)
    go = asyncio.Event()

    async def call() -> None:
        async with limiter.slot():
            await go.wait()
            await limiter.throttled(0.05)

    tasks = [asyncio.create_task(call()) for _ in range(16)]
    await _until(lambda: limiter.in_flight == 16)
    go.set()
    await asyncio.gather(*tasks)
    assert limiter.rate_limited == 16
    assert limiter.limit == 8, "16 calls of one window got 429: one halving, not sixteen"
    assert limiter.decreases == 1


async def test_a_429_from_a_call_granted_after_the_decrease_halves_again() -> None:
    limiter = RateLimiter(max_concurrency=16)
    async with limiter.slot():
        await limiter.throttled(None)
    assert limiter.limit == 8
    async with limiter.slot():  # granted after the decrease: a new window
        await limiter.throttled(None)
    assert (limiter.limit, limiter.decreases) == (4, 2)


async def test_after_a_decrease_the_limit_slow_starts_back_then_grows_additively() -> None:
    limiter = RateLimiter(max_concurrency=32)
    async with limiter.slot():
        await limiter.throttled(None)
    assert limiter.limit == 16
    for _ in range(16):  # slow start: one more per success, back to the level halved from
        await limiter.succeeded()
    assert limiter.limit == 32

    async with limiter.slot():
        await limiter.throttled(None)
    async with limiter.slot():
        await limiter.throttled(None)
    assert limiter.limit == 8  # two windows, two halvings: slow start now only back to 16
    for _ in range(8):
        await limiter.succeeded()
    assert limiter.limit == 16
    for _ in range(15):  # additive increase: one more per `limit` successes
        await limiter.succeeded()
    assert limiter.limit == 16
    await limiter.succeeded()
    assert limiter.limit == 17
    for _ in range(1000):
        await limiter.succeeded()
    assert limiter.limit == 32, "never above the ceiling"


async def test_a_429_reported_from_outside_a_slot_is_ignored_while_the_old_window_is_in_flight() -> None:
    # The Ray engine's cluster-wide limiter hears of 429s by message, not from a slot it granted.
    limiter = RateLimiter(max_concurrency=8)
    done = asyncio.Event()

    async def old_call() -> None:
        async with limiter.slot():
            await done.wait()

    task = asyncio.create_task(old_call())
    await _until(lambda: limiter.in_flight == 1)
    await limiter.throttled(None)
    assert limiter.limit == 4
    await limiter.throttled(None)  # the old call may be the one reporting: ignored
    assert limiter.limit == 4
    done.set()
    await task
    await limiter.throttled(None)  # every call of the old window has finished: a new 429
    assert (limiter.limit, limiter.decreases, limiter.rate_limited) == (2, 2, 3)


async def test_a_limiter_that_is_not_adaptive_counts_429s_and_keeps_its_limit() -> None:
    limiter = RateLimiter(max_concurrency=8, adaptive=False)
    async with limiter.slot():
        await limiter.throttled(30.0)
    assert (limiter.limit, limiter.rate_limited, limiter.decreases) == (8, 1, 0)
    started = time.monotonic()
    async with limiter.slot():  # nobody pauses for another call's Retry-After
        pass
    assert time.monotonic() - started < 1.0


# -- through ResilientJudge -----------------------------------------------------------------


async def test_calls_throttled_together_are_retried_after_one_decrease() -> None:
    seen: dict[str, int] = {}
    arrived = asyncio.Event()
    in_flight = peak = 0

    async def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        nonlocal in_flight, peak
        key = messages[0]["content"]
        seen[key] = seen.get(key, 0) + 1
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            if seen[key] == 1:
                if len(seen) == 8:
                    arrived.set()
                await arrived.wait()  # all 8 in flight together, then all get 429
                raise _rate_limited(0.01)
            return "ok"
        finally:
            in_flight -= 1

    limiter = RateLimiter(max_concurrency=8)
    judge = ResilientJudge(FunctionJudge(answer), limiter=limiter, policy=RetryPolicy(base_delay_s=0.01))
    responses = await asyncio.gather(*(judge.generate(_prompt(f"q{i}")) for i in range(8)))
    assert [r.text for r in responses] == ["ok"] * 8
    assert [r.attempts for r in responses] == [2] * 8
    assert limiter.rate_limited == 8 and limiter.decreases == 1
    assert limiter.limit >= 4 and peak <= 8
    assert limiter.in_flight == 0


async def test_a_retry_after_on_one_call_does_not_stall_unrelated_calls() -> None:
    throttled_once = False

    async def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        nonlocal throttled_once
        if messages[0]["content"] == "throttled" and not throttled_once:
            throttled_once = True
            raise _rate_limited(1.5)
        await asyncio.sleep(0.02)
        return "ok"

    limiter = RateLimiter(max_concurrency=4)
    judge = ResilientJudge(FunctionJudge(answer), limiter=limiter)
    started = time.monotonic()
    slow = asyncio.create_task(judge.generate(_prompt("throttled")))
    await _until(lambda: limiter.rate_limited == 1)
    others = await asyncio.gather(*(judge.generate(_prompt(f"other {i}")) for i in range(12)))
    others_s = time.monotonic() - started
    response = await slow
    slow_s = time.monotonic() - started
    assert [r.text for r in others] == ["ok"] * 12
    assert others_s < 0.75, f"unrelated calls waited {others_s:.2f}s for another call's Retry-After"
    assert response.attempts == 2 and slow_s >= 1.5, "the throttled call waits what the server asked"


async def test_a_hang_is_bounded_by_the_per_attempt_timeout() -> None:
    attempts = 0

    async def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await asyncio.sleep(60)
        return "ok"

    judge = ResilientJudge(FunctionJudge(answer), policy=RetryPolicy(timeout_s=0.05, base_delay_s=0.01))
    started = time.monotonic()
    response = await judge.generate(_prompt("q"))
    assert response.text == "ok" and response.attempts == 2
    assert time.monotonic() - started < 5
    assert judge.limiter.in_flight == 0


async def test_retries_are_bounded_and_the_last_error_carries_the_attempts() -> None:
    calls = 0

    def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        nonlocal calls
        calls += 1
        raise _rate_limited(0.0)

    limiter = RateLimiter(max_concurrency=4)
    judge = ResilientJudge(FunctionJudge(answer), limiter=limiter, policy=RetryPolicy(max_attempts=3, base_delay_s=0))
    with pytest.raises(JudgeHTTPError) as raised:
        await judge.generate(_prompt("q"))
    assert calls == 3 and getattr(raised.value, "attempts", None) == 3
    assert judge.retries == 2 and limiter.in_flight == 0


async def test_a_permanent_error_is_not_retried() -> None:
    calls = 0

    def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        nonlocal calls
        calls += 1
        raise JudgeHTTPError("400 Bad Request", status_code=400)

    judge = ResilientJudge(FunctionJudge(answer), policy=RetryPolicy(max_attempts=5, base_delay_s=0))
    with pytest.raises(JudgeHTTPError):
        await judge.generate(_prompt("q"))
    assert calls == 1


# -- the Ray engine's cluster-wide limiter, in the order its workers send messages ---------


async def test_the_cluster_limiter_halves_once_for_a_burst_of_429s_reported_by_message() -> None:
    from assay.run._ray import GlobalLimiter

    gate = GlobalLimiter(max_concurrency=16, rpm=None, tpm=None, adaptive=True)
    for grant in range(16):
        assert await gate.acquire("w", str(grant))
    # A worker's _ClusterLimiter reports a 429 while it holds the grant, then releases it.
    for grant in range(16):
        await gate.throttled(0.05)
        await gate.release("w", str(grant))
    stats = await gate.stats()
    assert (stats["rate_limited"], stats["limit"], stats["in_flight"]) == (16, 8, 0)
    assert await gate.acquire("w", "new")
    await gate.throttled(0.05)  # a call granted after the old window drained: a new decrease
    assert (await gate.stats())["limit"] == 4


def test_a_call_that_exhausts_its_retries_is_unscored_with_its_reason_never_a_made_up_value() -> None:
    from assay import EvalResult, Faithfulness, Sample, UnscoredReason, evaluate
    from assay.errors import JudgeUnavailableError
    from assay.run import Limits

    def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
        raise _rate_limited(0.0)

    # not a copy of the context (a copy is supported without a call) and standing alone (no rewrite call)
    sample = Sample(id="s", question="Colour?", answer="The sky looks blue today.", contexts=("The sky is blue.",))
    judge = FunctionJudge(answer)
    # every call failed, so nothing was judged: evaluate says so (issue 56), keeping the result
    with pytest.raises(JudgeUnavailableError, match=r"every judge call failed \(1 of 1\): 429") as raised:
        evaluate([sample], [Faithfulness()], judge, limits=Limits(max_attempts=3, backoff_s=0))
    result = raised.value.result
    assert isinstance(result, EvalResult)
    (score,) = result.scores("faithfulness")
    assert not score.is_scored and score.unscored_reason is UnscoredReason.JUDGE_ERROR
    assert score.detail and "429" in score.detail
    assert [c.attempts for c in score.calls] == [3] and len(judge.requests) == 3
