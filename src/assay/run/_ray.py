"""The Ray engine: the same run as :func:`~assay.run.aevaluate`, spread over a Ray cluster.

Ray is an optional extra (``pip install 'assay[ray]'``) and is imported only when this
engine runs: ``import assay`` never imports it. The layout (``docs/design/ray.md``)::

    driver (this process)                      Ray cluster
    ---------------------                      -----------
    reads rows, skips finished ones  -- row -> _EvalWorker actor x N (judge + metrics built once)
    tracks each row in flight        <- result    metric -> build_judge_stack(): _RepeatJudge
    commits via on_result (run store)             -> CachedJudge -> ResilientJudge [per-worker slots]
    re-dispatches a dead actor's rows                 `-> GlobalLimiter actor [RPM, TPM, global cap]

Metrics and judges cross the wire as specs (each metric's ``MetricSpec``, rebuilt on the
worker by ``metric_from_spec``; a judge string or a picklable zero-argument factory), never
as live objects. A row is finished when the driver has handed its result to ``on_result``
(the run store commits it there); a worker that dies loses only rows that were not
finished, and those are sent to another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay._samples import Sample
from assay._scores import MetricSpec
from assay.errors import AssayError, ConfigError, MissingExtraError, SampleError
from assay.metrics import metric_from_spec
from assay.metrics._base import Metric
from assay.models._cache import JudgeCache
from assay.models._protocol import JudgeModel, close_judge
from assay.models._registry import get_judge
from assay.models._resilient import RateLimiter
from assay.models._stack import _REPEAT, Limits, build_judge_stack
from assay.prompts import REASKS
from assay.run._data import Row, read_rows, required_fields
from assay.run._memo import ScoreMemo, score_sample
from assay.run._outcome import EvalResult
from assay.run._results import SampleResult

if TYPE_CHECKING:
    from assay.run._plan import RunPlan

__all__ = ["GlobalLimiter", "RayEngineError", "RayRunStats", "aevaluate_ray", "execute_on_ray"]

JudgeRef = str | Callable[[], JudgeModel]
"""A judge as a spec: a judge string (``openai:MODEL``, ``local:/m.gguf``) or a picklable factory."""


class RayEngineError(AssayError):
    """The Ray engine cannot go on (no cluster, or every worker keeps dying)."""


@dataclass
class RayRunStats:
    """What the engine did, filled in by :func:`aevaluate_ray` when passed as ``stats``.

    Attributes:
        workers_started: Actors started, replacements included.
        worker_deaths: Actors that died mid-run.
        redispatched: Rows sent again because their actor died before finishing them.
        limiter_acquires: Grants the :class:`GlobalLimiter` gave out.
        limiter_acquire_s: Seconds workers spent awaiting grants (waits for budget included).
        limiter_max_in_flight: The most calls the limiter saw in flight at once, cluster-wide.
    """

    workers_started: int = 0
    worker_deaths: int = 0
    redispatched: int = 0
    limiter_acquires: int = 0
    limiter_acquire_s: float = 0.0
    limiter_max_in_flight: int = 0

    @property
    def acquire_ms_mean(self) -> float:
        """Mean milliseconds per grant, as seen by workers."""
        return 1000 * self.limiter_acquire_s / self.limiter_acquires if self.limiter_acquires else 0.0


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("ray", "ray", "the Ray engine (--engine ray)") from exc
    return ray


# -- the global limiter (one async actor per run) -------------------------------------------


class GlobalLimiter:
    """Grants request slots under a cluster-wide concurrency cap and RPM / TPM budgets.

    Runs as one async Ray actor; every worker's judge awaits :meth:`acquire` before each
    attempt and sends :meth:`release` (without waiting) after it. The budgets are a
    :class:`~assay.models.RateLimiter` inside the actor, so 10 workers share one RPM budget
    instead of taking 10 each. A grant is named ``(owner, grant)`` by the worker, so a
    release that overtakes its acquire (a cancelled call) and the grants of a dead worker
    (:meth:`forget`) are both returned.
    """

    def __init__(self, max_concurrency: int, rpm: float | None, tpm: float | None, adaptive: bool) -> None:
        self._limiter = RateLimiter(max_concurrency=max_concurrency, rpm=rpm, tpm=tpm, adaptive=adaptive)
        self._held: dict[tuple[str, str], contextlib.AbstractAsyncContextManager[None]] = {}
        self._cancelled: set[tuple[str, str]] = set()
        self._dead: set[str] = set()
        self.grants = 0
        self.max_in_flight = 0

    async def acquire(self, owner: str, grant: str, tokens: int = 0) -> bool:
        """Wait for a slot and its budget; ``False`` if the grant was cancelled meanwhile."""
        key = (owner, grant)
        slot = self._limiter.slot(tokens)
        await slot.__aenter__()
        if key in self._cancelled or owner in self._dead:
            self._cancelled.discard(key)
            await slot.__aexit__(None, None, None)
            return False
        self._held[key] = slot
        self.grants += 1
        self.max_in_flight = max(self.max_in_flight, self._limiter.in_flight)
        return True

    async def release(self, owner: str, grant: str, estimated: int = 0, actual: int | None = None) -> None:
        """Return a grant (or cancel one still waiting); with ``actual``, the call succeeded.

        One message per call: a success's adaptive growth and its real token usage travel
        with the release.
        """
        slot = self._held.pop((owner, grant), None)
        if slot is None:
            self._cancelled.add((owner, grant))
        else:
            await slot.__aexit__(None, None, None)
        if actual is not None:
            await self._limiter.succeeded()
            await self._limiter.settle_tokens(estimated, actual)

    async def forget(self, owner: str) -> int:
        """Return every grant of a dead worker; refuse its pending ones. Returns how many."""
        self._dead.add(owner)
        keys = [key for key in self._held if key[0] == owner]
        for key in keys:
            await self._held.pop(key).__aexit__(None, None, None)
        return len(keys)

    async def throttled(self, retry_after: float | None) -> None:
        """A 429 somewhere in the cluster: halve the global limit and pause everyone."""
        await self._limiter.throttled(retry_after)

    async def stats(self) -> dict[str, Any]:
        """Grants given, the most in flight at once, the live limit, 429s seen."""
        return {
            "grants": self.grants,
            "max_in_flight": self.max_in_flight,
            "in_flight": self._limiter.in_flight,
            "limit": self._limiter.limit,
            "rate_limited": self._limiter.rate_limited,
        }


_GRANT: ContextVar[str | None] = ContextVar("assay_ray_grant", default=None)


@dataclass
class _ClusterLimiter(RateLimiter):
    """A worker's limiter: its own concurrency slots, then a grant from the global limiter.

    ``ResilientJudge`` takes a slot per attempt outside its timeout, so waiting for budget
    never counts as a slow call. Successes and 429s are reported to the global limiter
    without waiting for an answer.
    """

    gate: Any = None
    owner: str = ""
    acquires: int = field(default=0, init=False)
    acquire_s: float = field(default=0.0, init=False)
    _ids: Iterator[int] = field(default_factory=itertools.count, init=False, repr=False)
    _usage: dict[str, tuple[int, int]] = field(default_factory=dict, init=False, repr=False)

    @contextlib.asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[None]:
        """Hold a local slot, then a global grant, for the duration."""
        async with super().slot(0):
            grant = str(next(self._ids))
            started = time.perf_counter()
            try:
                granted = await self.gate.acquire.remote(self.owner, grant, tokens)
            except BaseException:
                self.gate.release.remote(self.owner, grant)
                raise
            if not granted:  # pragma: no cover - only for a worker the driver declared dead
                raise RayEngineError("this worker was declared dead by the driver")
            self.acquires += 1
            self.acquire_s += time.perf_counter() - started
            token = _GRANT.set(grant)
            try:
                yield
            finally:
                _GRANT.reset(token)
                estimated, actual = self._usage.pop(grant, (0, -1))
                self.gate.release.remote(self.owner, grant, estimated, actual if actual >= 0 else None)

    async def succeeded(self) -> None:
        """Nothing to do locally: the global limiter adapts when the grant is released."""

    async def settle_tokens(self, estimated: int, actual: int) -> None:
        """Note a success's real token usage; it goes to the global limiter with the release."""
        grant = _GRANT.get()
        if grant is not None:
            self._usage[grant] = (estimated, actual)

    async def throttled(self, retry_after: float | None) -> None:
        """Report a 429 to the global limiter."""
        self.rate_limited += 1
        self.gate.throttled.remote(retry_after)


# -- the worker actor -----------------------------------------------------------------------


@dataclass(frozen=True)
class _WorkerConfig:
    judge: JudgeRef
    base_url: str | None
    metrics: tuple[MetricSpec, ...]
    limits: Limits
    concurrency: int
    cache_path: str | None
    reasks: int | None
    temperature: float | None = None


def _build_judge(judge: JudgeRef, base_url: str | None) -> JudgeModel:
    return get_judge(judge, base_url=base_url) if isinstance(judge, str) else judge()


class _EvalWorker:
    """One worker process: builds (and loads) the judge and the metrics once, scores rows."""

    def __init__(self, config: _WorkerConfig, gate: Any, owner: str) -> None:
        self._config = config
        judge = _build_judge(config.judge, config.base_url)
        load = getattr(judge, "load", None)
        if callable(load):  # a local GGUF model: load it once per actor, not per row
            load()
        self._judge = judge
        self._metrics: list[Metric] = [metric_from_spec(spec) for spec in config.metrics]
        self._cache = JudgeCache(config.cache_path) if config.cache_path else None
        self._limiter = (
            _ClusterLimiter(max_concurrency=config.concurrency, adaptive=False, gate=gate, owner=owner)
            if gate is not None
            else RateLimiter(max_concurrency=config.concurrency, adaptive=config.limits.adaptive)
        )
        self._stacked = build_judge_stack(
            judge, limits=config.limits, cache=self._cache, temperature=config.temperature, limiter=self._limiter
        )
        self._memo = ScoreMemo(self._cache, judge, temperature=config.temperature) if self._cache is not None else None

    async def ready(self) -> str:
        """The judge's model id, once the actor is built."""
        return self._judge.model_id

    async def pid(self) -> int:
        """The worker process's id (tests kill it)."""
        return os.getpid()

    async def score(self, row: Row, repeat: int) -> SampleResult:
        """Every metric's score for one row and repeat."""
        _REPEAT.set(repeat)  # each actor call runs in its own task: context variables stay per row
        if self._config.reasks is not None:
            REASKS.set(self._config.reasks)
        scores = await score_sample(self._metrics, row.sample, self._stacked, memo=self._memo, repeat=repeat)
        return SampleResult(sample=row.sample, scores=scores, line=row.line, repeat=repeat)

    async def stats(self) -> tuple[int, float]:
        """(grants awaited, seconds spent awaiting them)."""
        if isinstance(self._limiter, _ClusterLimiter):
            return self._limiter.acquires, self._limiter.acquire_s
        return 0, 0.0

    async def close(self) -> None:
        """Close the judge's clients and the cache."""
        await close_judge(self._stacked)
        if self._cache is not None:
            self._cache.close()


# -- the driver -------------------------------------------------------------------------------


def _metric_specs(metrics: Sequence[Metric]) -> tuple[MetricSpec, ...]:
    """The specs the workers rebuild the metrics from, each rebuilt here first (fail fast)."""
    for metric in metrics:
        if not isinstance(metric, Metric):
            hint = f"; build it with build_metric({metric!r})" if isinstance(metric, str) else ""
            raise ConfigError(f"aevaluate_ray takes metric objects, got {metric!r}{hint}")
    specs = tuple(m.spec() for m in metrics)
    for spec in specs:  # a metric a worker could not rebuild fails here, before any cluster work
        metric_from_spec(spec)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ConfigError(f"metric names must be unique, got {names}")
    return specs


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve a dead worker's failed call, so asyncio does not log it as never retrieved."""
    if future.done() and not future.cancelled():
        future.exception()


@dataclass
class _Worker:
    index: int
    owner: str
    handle: Any
    in_flight: dict[asyncio.Future[SampleResult], tuple[Row, int]] = field(default_factory=dict)


async def aevaluate_ray(
    samples: Iterable[Sample | Row | Mapping[str, Any] | SampleError],
    metrics: Sequence[Metric],
    judge: JudgeRef,
    *,
    base_url: str | None = None,
    limits: Limits | None = None,
    cache_path: str | Path | None = None,
    repeats: int = 1,
    reasks: int | None = None,
    temperature: float | None = None,
    skip: Collection[tuple[str, int]] = (),
    on_result: Callable[[SampleResult], None] | None = None,
    on_error: Callable[[SampleError], None] | None = None,
    keep_results: bool = True,
    address: str | None = None,
    workers: int = 2,
    per_worker_concurrency: int = 8,
    worker_cpus: float = 1.0,
    max_worker_restarts: int | None = None,
    runtime_env: Mapping[str, Any] | None = None,
    global_limiter: bool | None = None,
    stats: RayRunStats | None = None,
) -> EvalResult:
    """Score every sample with every metric on a Ray cluster; results as :func:`aevaluate`'s.

    Args:
        samples: As for :func:`~assay.run.aevaluate`; read by the driver, streamed out.
        metrics: The metrics. Each crosses the wire as its spec and is rebuilt on every
            worker with :func:`~assay.metrics.metric_from_spec` (so each must be rebuildable:
            a metric holding a lambda is refused here, before any cluster work).
        judge: A judge string (each worker calls ``get_judge``), or a picklable
            zero-argument factory returning a judge (a module-level function, a
            ``functools.partial``).
        base_url: For ``openai:`` judges.
        limits: As for :func:`aevaluate`; ``rpm``, ``tpm`` and ``concurrency`` are global
            (held by one :class:`GlobalLimiter` actor), retries and timeouts per worker.
        cache_path: A :class:`~assay.run.JudgeCache` file, opened by each worker on its own
            node (shared by the workers of one machine).
        repeats: Score each sample this many times.
        reasks: Re-asks per invalid judge answer (default 1).
        temperature: Sampling temperature for every judge call (default: each metric's
            own), as for :func:`~assay.run.aevaluate`.
        skip: (row key, repeat) pairs already finished (``RunStore.finished``).
        on_result: Called in the driver with each result: commit it here.
        on_error: Called in the driver with each invalid input row.
        keep_results: Keep every result in the returned :class:`EvalResult`.
        address: The cluster: ``None`` (an initialised Ray, ``$RAY_ADDRESS``, or a new
            local one), ``auto``, ``HOST:PORT`` or ``ray://HOST:10001``.
        workers: Worker actors (each builds the judge once).
        per_worker_concurrency: Judge calls in flight per worker.
        worker_cpus: CPUs each worker reserves (1 spreads workers over the cluster's cores).
        max_worker_restarts: Replacement workers allowed in total (default ``2 * workers``).
        runtime_env: Passed to ``ray.init`` when this call connects (e.g. ``pip`` packages).
        global_limiter: Route every call through the :class:`GlobalLimiter` actor. Default:
            only when there is a global budget to keep (``rpm``, ``tpm``, or a ``concurrency``
            below ``workers x per_worker_concurrency``); otherwise each worker's own slots
            (adaptive on 429s) bound the run, and calls skip the actor round trip.
        stats: Filled in with what the engine did.

    Returns:
        An :class:`~assay.run.EvalResult`, as from the local engine.

    Raises:
        RayEngineError: workers kept dying past ``max_worker_restarts``.
        MissingExtraError: Ray is not installed.
    """
    ray = _import_ray()
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    if workers < 1 or per_worker_concurrency < 1:
        raise ConfigError(
            f"workers and per-worker concurrency must be at least 1, got {workers}, {per_worker_concurrency}"
        )
    specs = _metric_specs(metrics)
    limits = limits or Limits()
    config = _WorkerConfig(
        judge=judge,
        base_url=base_url,
        metrics=specs,
        limits=limits,
        concurrency=per_worker_concurrency,
        cache_path=str(cache_path) if cache_path is not None else None,
        reasks=reasks,
        temperature=temperature,
    )
    connected_here = not ray.is_initialized()
    if connected_here:
        ray.init(address=address, runtime_env=dict(runtime_env) if runtime_env else None, log_to_driver=False)
    result = EvalResult(metrics=tuple(spec.name for spec in specs), judge="")
    # Checked as evaluate() checks them (rows it passes on were checked already).
    rows = read_rows(samples, required=required_fields(metrics))
    driver = _Driver(
        ray,
        config,
        workers=workers,
        worker_cpus=worker_cpus,
        global_limiter=global_limiter,
        restarts_left=2 * workers if max_worker_restarts is None else max_worker_restarts,
        stats=stats if stats is not None else RayRunStats(),
        queue=_RowQueue(rows, repeats, skip, result, on_error),
    )
    try:
        await driver.run(result, on_result, keep_results)
    finally:
        await driver.close()
        if connected_here:
            ray.shutdown()
    return result


async def execute_on_ray(
    plan: RunPlan,
    rows: Iterable[Row | SampleError],
    *,
    cache_path: str | Path | None,
    skip: Collection[tuple[str, int]],
    on_result: Callable[[SampleResult], None],
    on_error: Callable[[SampleError], None],
) -> EvalResult:
    """Carry out ``plan`` on Ray (the rows read and checked by the caller; ``skip``: finished pairs)."""
    judge = plan.judge
    return await aevaluate_ray(
        rows,
        plan.metrics,
        plan.judge_string or (lambda: judge),
        base_url=plan.base_url,
        limits=plan.limits,
        cache_path=cache_path,
        repeats=plan.repeats,
        reasks=plan.reasks,
        temperature=plan.temperature,
        skip=skip,
        on_result=on_result,
        on_error=on_error,
        keep_results=False,
        address=plan.ray_address,
        workers=plan.ray_workers,
        per_worker_concurrency=judge.max_concurrency,
    )


class _RowQueue:
    """The rows still to send, as (row, repeat): a dead worker's rows first, then the input's next."""

    def __init__(
        self,
        rows: Iterator[Row | SampleError],
        repeats: int,
        skip: Collection[tuple[str, int]],
        result: EvalResult,
        on_error: Callable[[SampleError], None] | None,
    ) -> None:
        self.rows, self.repeats, self.skip, self.result, self.on_error = rows, repeats, skip, result, on_error
        self.retry: deque[tuple[Row, int]] = deque()
        self.exhausted = False

    def next(self) -> tuple[Row, int] | None:
        """The next (row, repeat) to send, or ``None`` when every one was sent."""
        if self.retry:
            return self.retry.popleft()
        while not self.exhausted:
            pending = next(self.rows, None)
            if pending is None:
                self.exhausted = True
                break
            if isinstance(pending, SampleError):
                self.result.errors.append(pending)
                if self.on_error is not None:
                    self.on_error(pending)
                continue
            todo = [(pending, r) for r in range(self.repeats) if (str(pending.line), r) not in self.skip]
            self.result.skipped += self.repeats - len(todo)
            if todo:
                self.retry.extend(todo[1:])
                return todo[0]
        return None


class _Driver:
    """The driver's side of a Ray run: starts the actors, keeps each fed, replaces the ones that die."""

    def __init__(
        self,
        ray: Any,
        config: _WorkerConfig,
        *,
        workers: int,
        worker_cpus: float,
        global_limiter: bool | None,
        restarts_left: int,
        stats: RayRunStats,
        queue: _RowQueue,
    ) -> None:
        self.ray, self.config, self.workers, self.stats, self.queue = ray, config, workers, stats, queue
        self.restarts_left = restarts_left
        self.run_token = secrets.token_hex(3)
        per_worker = config.concurrency
        self.depth = per_worker + max(1, per_worker // 4)  # rows queued per worker
        limits = config.limits
        global_cap = limits.concurrency or workers * per_worker
        gate_cls = ray.remote(num_cpus=0, max_concurrency=max(1000, 4 * workers * self.depth))(GlobalLimiter)
        self.worker_cls = ray.remote(
            num_cpus=worker_cpus, max_concurrency=self.depth + 8, max_restarts=0, max_task_retries=0
        )(_EvalWorker)
        if global_limiter is None:
            global_limiter = bool(limits.rpm or limits.tpm or global_cap < workers * per_worker)
        self.gate = gate_cls.remote(global_cap, limits.rpm, limits.tpm, limits.adaptive) if global_limiter else None
        self.live: dict[str, _Worker] = {}
        self.generation = itertools.count()

    def spawn(self, index: int) -> _Worker:
        """Start worker ``index`` (again, after a death)."""
        owner = f"w{index}.{next(self.generation)}"
        handle = self.worker_cls.options(name=f"assay-{self.run_token}-{owner}").remote(self.config, self.gate, owner)
        self.stats.workers_started += 1
        worker = _Worker(index=index, owner=owner, handle=handle)
        self.live[owner] = worker
        return worker

    async def run(
        self, result: EvalResult, on_result: Callable[[SampleResult], None] | None, keep_results: bool
    ) -> None:
        """Send every row, hand each result to ``on_result`` in the driver, then collect the engine's stats."""
        started = [self.spawn(i) for i in range(self.workers)]
        model_ids = await asyncio.gather(*(asyncio.wrap_future(w.handle.ready.remote().future()) for w in started))
        result.judge = model_ids[0]
        while True:
            for worker in list(self.live.values()):
                while len(worker.in_flight) < self.depth and (item := self.queue.next()) is not None:
                    future = asyncio.wrap_future(worker.handle.score.remote(*item).future())
                    worker.in_flight[future] = item
            futures = {f: w for w in self.live.values() for f in w.in_flight}
            if not futures:
                break
            done, _ = await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                worker = futures[future]
                if worker.owner not in self.live:
                    _consume(future)  # its worker died earlier in this batch: its rows are re-queued
                    continue
                item = worker.in_flight.pop(future)
                try:
                    sample_result = future.result()
                except self.ray.exceptions.RayActorError as exc:
                    worker.in_flight[future] = item
                    self.bury(worker, exc)
                    continue
                result._add(sample_result, keep_results)
                if on_result is not None:
                    on_result(sample_result)
        await self.collect_stats()

    def bury(self, worker: _Worker, exc: BaseException) -> None:
        """A worker died: re-queue its rows first, return its grants, start another unless out of restarts."""
        for orphan in worker.in_flight:
            orphan.add_done_callback(_consume)
        self.stats.worker_deaths += 1
        del self.live[worker.owner]
        lost = list(worker.in_flight.values())
        self.stats.redispatched += len(lost)
        self.queue.retry.extendleft(reversed(lost))
        worker.in_flight.clear()
        with contextlib.suppress(Exception):
            self.ray.kill(worker.handle)
        if self.gate is not None:
            self.gate.forget.remote(worker.owner)
        if self.restarts_left <= 0:
            if not self.live:
                raise RayEngineError(
                    f"every Ray worker died ({self.stats.worker_deaths} deaths); the last: {exc}"
                ) from exc
            return
        self.restarts_left -= 1
        self.spawn(worker.index)

    async def collect_stats(self) -> None:
        """The limiter's grants and the workers' waits, into ``stats``."""
        if self.gate is not None:
            gate_stats = await asyncio.wrap_future(self.gate.stats.remote().future())
            self.stats.limiter_acquires = int(gate_stats["grants"])
            self.stats.limiter_max_in_flight = int(gate_stats["max_in_flight"])
        worker_stats = await asyncio.gather(
            *(asyncio.wrap_future(w.handle.stats.remote().future()) for w in self.live.values()),
            return_exceptions=True,
        )
        self.stats.limiter_acquire_s = sum(s[1] for s in worker_stats if isinstance(s, tuple))

    async def close(self) -> None:
        """Cancel what is in flight, close every worker, kill the actors."""
        for worker in self.live.values():
            for future in worker.in_flight:
                future.add_done_callback(_consume)
                future.cancel()
        closing = [asyncio.wrap_future(w.handle.close.remote().future()) for w in self.live.values()]
        await asyncio.gather(*closing, return_exceptions=True)
        for handle in [*(w.handle for w in self.live.values()), *([self.gate] if self.gate is not None else [])]:
            with contextlib.suppress(Exception):
                self.ray.kill(handle)
