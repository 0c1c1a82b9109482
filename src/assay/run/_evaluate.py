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
import contextlib
import dataclasses
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay._safety import printable, redact_url
from assay._version import __version__
from assay.errors import JudgeCallWarning, JudgeUnavailableError, SampleError, StorageError
from assay.metrics._base import Metric
from assay.models._cache import JudgeCache
from assay.models._protocol import JudgeModel, close_judge
from assay.models._stack import _REPEAT, CountedJudge, Limits, build_judge_stack
from assay.prompts import REASKS
from assay.run._cascade import PlannedCascade, cascade_option, prepare_cascade
from assay.run._cost import CostReport, PriceTable
from assay.run._data import DEFAULT_MAX_FIELD_CHARS, DEFAULT_MAX_ROW_CHARS, DatasetSource, Row, open_rows
from assay.run._judge_record import JudgeRecord
from assay.run._memo import ScoreMemo, score_sample
from assay.run._outcome import EvalResult
from assay.run._plan import RunPlan, plan_run
from assay.run._progress import ProgressMode, Reporter, load_local_judge, make_reporter
from assay.run._results import SampleResult
from assay.run._session import check_resume
from assay.run._store import RunSpec, RunStatus, RunStore, StoreError, new_run_id
from assay.run._summary import RunSummary, RunTally
from assay.run._trust import cascade_figure, trust_for

if TYPE_CHECKING:
    from assay.run._export import LiveExport

    pass

__all__ = ["DEFAULT_CACHE_PATH", "EvalResult", "SampleResult", "aevaluate", "evaluate"]

DEFAULT_CACHE_PATH = Path(".assay/cache.sqlite")
"""Where ``cache=True`` (and ``assay run``) keep judge answers."""


def _open_cache(cache: JudgeCache | str | Path | bool | None) -> tuple[JudgeCache | None, bool]:
    """The cache to use and whether this call opened it (and so closes it)."""
    if cache is None or cache is False:
        return None, False
    if cache is True:
        return JudgeCache(DEFAULT_CACHE_PATH), True
    if isinstance(cache, str | Path):
        return JudgeCache(cache), True
    return cache, False


def _cost_text(cost: CostReport, judge: str) -> str:
    """``$0.0123``, ``$0.0123 + unknown`` or ``unknown``, as the summary says it (and progress from the start)."""
    return cost.brief(judge)


async def aevaluate(
    data: Any,
    metrics: Metric | str | Sequence[Metric | str],
    judge: JudgeModel | str | None = None,
    *,
    store: RunStore | str | Path | None = None,
    resume: str | None = None,
    run_id: str | None = None,
    cache: JudgeCache | str | Path | bool | None = None,
    progress: ProgressMode | bool | None = "auto",
    mapping: Mapping[str, str] | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    limits: Limits | None = None,
    repeats: int = 1,
    reasks: int | None = None,
    temperature: float | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_workers: int = 2,
    prices: PriceTable | None = None,
    on_result: Callable[[SampleResult], None] | None = None,
    on_error: Callable[[SampleError], None] | None = None,
    keep_results: bool = True,
    export: str | None = None,
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS,
    escalate: Sequence[str | JudgeModel] = (),
    agreement: float | None = None,
    delta: float | None = None,
) -> EvalResult:
    """Score every sample with every metric; see :func:`evaluate`."""
    return await execute(plan_run(**locals()))


async def execute(plan: RunPlan) -> EvalResult:
    """Carry out ``plan`` with its engine: read, judge and record every row; the body of :func:`aevaluate`."""
    source, rows = open_rows(
        plan.data, plan.metrics, mapping=plan.mapping, limits=plan.size_limits, stream=plan.store is None
    )
    run_store = RunStore(plan.store) if isinstance(plan.store, str | Path) else plan.store
    planned: dict[str, PlannedCascade] = {}
    levels: list[tuple[str, JudgeModel]] = []
    if plan.escalate:  # the thresholds, or the refusal, before the run exists and before any call
        assert run_store is not None
        planned, levels = prepare_cascade(
            run_store, plan.metrics, plan.levels[0], plan.escalate, agreement=plan.agreement, delta=plan.delta
        )
        plan = dataclasses.replace(plan, cascade=cascade_option(planned))
    judge_cache, own_cache = _open_cache(plan.cache)
    judge_record = JudgeRecord.of(plan.judge, (m.spec() for m in plan.metrics))
    if plan.export is not None and plan.run_id is None and plan.resume is None:
        plan = dataclasses.replace(plan, run_id=new_run_id())  # the sent ids and the stored run's are one
    run_id, done = _begin(plan, run_store, source, judge_record)
    live = _live_export(plan, run_id)
    result = EvalResult(
        metrics=tuple(m.name for m in plan.metrics),
        judge=plan.judge.model_id,
        run_id=run_id,
        store_path=run_store.path if run_store is not None else None,
        judge_record=judge_record,
        trust={
            m.name: trust_for(
                m.spec(),
                judge_record,
                run_store.calibrations(m.name, judge_record.identity) if run_store is not None else (),
            )
            for m in plan.metrics
        }
        # a cascade metric's trust line is its guarantee, never its first judge's figure
        | {name: cascade_figure(name, p.record) for name, p in planned.items()},
        cascade={name: p.record for name, p in planned.items()},
    )
    book = _Book(plan, result, make_reporter(plan.progress), run_store, run_id, source, live)
    book.begin(done)
    for line in (line for p in planned.values() for line in p.lines()):
        book.reporter.note(printable(line, markup=False))
    status: RunStatus = "failed"
    try:
        await _judge(plan, rows, book, judge_cache, done, cascade=(planned, [j for _, j in levels[1:]]))
        status = "finished"
        # Workers finish in any order; results come back in input order, whatever the input.
        result.results.sort(key=lambda r: (r.line, r.repeat))
    except (KeyboardInterrupt, asyncio.CancelledError):
        status = "interrupted"
        raise
    except BaseException:
        if _cancelling():  # raised by the clean-up of a cancelled run (Ctrl-C): still interrupted
            status = "interrupted"
        raise
    finally:
        book.close(status, judge_cache)
        if live is not None:
            result.export = live.close()  # what is queued is sent, whatever stopped the run
        if isinstance(plan.store, str | Path) and run_store is not None:
            run_store.close()
        if own_cache and judge_cache is not None:
            judge_cache.close()
    _say_failed_calls(book.tally.summary(), result)
    return result


def _live_export(plan: RunPlan, run_id: str | None) -> LiveExport | None:
    """The sender of ``plan.export``, under the stored run's id (a run without a store: the plan's)."""
    if plan.export is None:
        return None
    from assay.run._export import LiveExport

    return LiveExport(run_id or plan.run_id or new_run_id(), plan.export)  # type: ignore[arg-type]  # checked by plan_run


def _begin(
    plan: RunPlan, run_store: RunStore | None, source: DatasetSource | None, judge_record: JudgeRecord
) -> tuple[str | None, set[tuple[str, int]]]:
    """The run's id and its finished (row, repeat) pairs: a resume checked against its stored run, or a new run."""
    if run_store is None:
        return None, set()
    assert source is not None
    if plan.resume is not None:
        check_resume(
            run_store.spec(plan.resume),
            source=source,
            metrics=plan.metrics,
            judge_model=plan.judge.model_id,
            base_url=plan.base_url,
            options=plan.options,
            judge=judge_record,
        )
        done = run_store.finished(plan.resume)
        run_store.set_status(plan.resume, "running")
        return plan.resume, done
    run_id = plan.run_id or new_run_id()
    run_store.create(
        RunSpec(
            run_id=run_id,
            dataset=source.description,
            dataset_fingerprint=source.fingerprint,
            n_rows=source.n_rows,
            judge=redact_url(plan.judge_string) or plan.judge.model_id,
            judge_model=plan.judge.model_id,
            judge_record=judge_record,
            base_url=redact_url(plan.base_url),
            metrics=tuple(m.spec() for m in plan.metrics),
            # throughput is kept for a resume to reuse, outside the compared options
            options=plan.options.model_dump(mode="json") | {"throughput": _throughput(plan.limits)},
            engine=plan.engine,
            assay_version=__version__,
        )
    )
    return run_id, set()


class _Book:
    """A run's bookkeeping: records each result and invalid row, counts calls, moves the progress line."""

    def __init__(
        self,
        plan: RunPlan,
        result: EvalResult,
        reporter: Reporter,
        run_store: RunStore | None,
        run_id: str | None,
        source: DatasetSource | None,
        live: LiveExport | None = None,
    ) -> None:
        self.plan, self.result, self.reporter = plan, result, reporter
        self.run_store, self.run_id, self.source = run_store, run_id, source
        self.live = live  # evaluate(export=...): each result also sent as it is recorded
        self.tally = RunTally(list(result.metrics), plan.prices)
        self.calls_made = 0  # answered, from the judge or the cache
        self.calls_cached = 0
        self.stored_calls = 0  # calls of the samples recorded by this process: the rest belong to samples cut short

    def begin(self, done: set[tuple[str, int]]) -> None:
        """Say what was taken on trust, count a resumed run's stored results, start the progress line."""
        if self.source is not None:
            self.result.notes = self.source.note_messages()
            for note in self.result.notes:  # said once for the run, before any judging
                self.reporter.note(f"note: {printable(note, markup=False)}")
        if self.run_store is not None and self.run_id is not None and done:
            for earlier in self.run_store.results(self.run_id):  # a resumed run's progress counts what is stored
                if (str(earlier.line), earlier.repeat) in done:  # not an error it judges again
                    self.tally.add(earlier)
                    # its calls too: the line's counts, tokens and cost are all the whole run's, as the summary's are
                    calls = [c for score in earlier.scores.values() for c in score.all_calls]
                    self.calls_made += len(calls)
                    self.calls_cached += sum(c.cached for c in calls)
                    self.stored_calls += len(calls)  # stored already: none of them is a call cut short

    def start(self, done: set[tuple[str, int]]) -> None:
        """Start the progress line (after the judge is loaded)."""
        total = self.source.n_rows * self.plan.repeats if self.source is not None else None
        self.reporter.start(f"judging ({self.run_id})" if self.run_id else "judging", total, len(done))

    def stats(self) -> str:
        """The progress line's figures."""
        s = self.tally.summary()
        unscored = sum(m.n_unscored for m in s.metrics.values())
        n, cached = self.calls_made - self.calls_cached, self.calls_cached
        calls = f" · {n:,} judge call{'s' if n != 1 else ''}" if n or cached else ""
        calls += f" ({cached:,} cached)" if cached else ""
        return (
            f"scored {s.n_scored} unscored {unscored}{calls} · {s.cost.usage.total_tokens:,} tok · "
            f"{_cost_text(s.cost, self.plan.judge.model_id)}"
        )

    def call_done(self, cached: bool = False) -> None:
        """A judge call ended: a sample of a long agent trace takes minutes, so the line moves with each call.

        ``cached``: answered from the judge-call cache; the line counts those apart, as the
        run's summary does ("judge calls 0 (cached 32)"), so a re-run never says it asked the
        judge.
        """
        self.calls_made += 1
        self.calls_cached += cached
        self.reporter.advance(0, self.stats())

    def record(self, done_result: SampleResult) -> None:
        """Commit one sample's result (a row the store cannot keep becomes a located row error)."""
        if self.run_store is not None and self.run_id is not None:
            try:
                self.run_store.record(self.run_id, done_result, repeat=done_result.repeat)
            except StoreError as exc:
                where = self.source.description if self.source else None
                self.record_error(SampleError(str(exc), source=where, line=done_result.line))
                return
        self.stored_calls += sum(len(score.all_calls) for score in done_result.scores.values())
        self.result._add(done_result, self.plan.keep_results)
        self.tally.add(done_result)
        if self.plan.on_result is not None:
            self.plan.on_result(done_result)
        if self.live is not None:
            self.live(done_result)
        self.reporter.advance(1, self.stats())

    def record_error(self, error: SampleError) -> None:
        """Keep one invalid row (in the result and the store) and say it."""
        self.result.errors.append(error)
        self.tally.add_row_error(str(error))
        if self.run_store is not None and self.run_id is not None:
            self.run_store.record_error(self.run_id, error)
        if self.plan.on_error is not None:
            self.plan.on_error(error)
        self.reporter.note(f"skipped {printable(str(error), markup=False)}")
        self.reporter.advance(0, self.stats())

    def close(self, status: RunStatus, judge_cache: JudgeCache | None) -> None:
        """Say a cache that could not be written, end the progress line, record how the run ended."""
        if judge_cache is not None and judge_cache.write_error is not None:
            n = judge_cache.failed_writes
            self.reporter.note(
                f"warning: {judge_cache.write_error}; {n} answer{'s were' if n != 1 else ' was'} not cached "
                "(the results are unaffected; the next run asks again)"
            )
        self.reporter.close()
        if self.run_store is None or self.run_id is None:
            return
        # If the store failed, the error being raised says so; the run stays resumable.
        with contextlib.suppress(StorageError):
            self.run_store.set_status(self.run_id, status)
            # Calls spent on samples the interrupt stopped: in no record, said beside the run's cost.
            if status == "interrupted" and self.calls_made > self.stored_calls:
                self.run_store.add_unstored_calls(self.run_id, self.calls_made - self.stored_calls)


async def _judge(
    plan: RunPlan,
    rows: Iterable[Row | SampleError],
    book: _Book,
    judge_cache: JudgeCache | None,
    done: set[tuple[str, int]],
    cascade: tuple[Mapping[str, PlannedCascade], Sequence[JudgeModel]] = ({}, ()),
) -> None:
    """Hand the rows to the plan's engine (the local one, or Ray); ``cascade``: the plans and the later judges."""
    if plan.engine == "local" and _is_local(plan.judge):
        load_local_judge(plan.judge, book.reporter)
    for later in cascade[1]:
        if _is_local(later):
            load_local_judge(later, book.reporter)
    book.start(done)
    if plan.engine == "ray":
        from assay.run._ray import execute_on_ray

        ray_result = await execute_on_ray(
            plan,
            rows,
            cache_path=judge_cache.path if judge_cache is not None else None,
            skip=done,
            on_result=book.record,
            on_error=book.record_error,
        )
        book.result.skipped = ray_result.skipped
        return
    await _run_local(
        rows,
        plan.metrics,
        plan.judge,
        book.result,
        limits=plan.limits,
        cache=judge_cache,
        concurrency=plan.concurrency,
        repeats=plan.repeats,
        reasks=plan.reasks,
        temperature=plan.temperature,
        skip=done,
        on_result=book.record,
        on_error=book.record_error,
        on_call=book.call_done,
        cascade=cascade,
    )


def _say_failed_calls(summary: RunSummary, result: EvalResult) -> None:
    """Every door says when judge calls failed, in the same words (:meth:`CostReport.failure`).

    When every call failed and nothing was scored, nothing was judged: raise
    :class:`~assay.errors.JudgeUnavailableError` (``assay run`` prints the same text and
    exits 3). When some failed: one warning, and the same text in ``result.notes``.
    """
    failure = summary.cost.failure()
    if failure is None:
        return
    if summary.cost.every_call_failed and summary.n_scored == 0:
        raise JudgeUnavailableError(failure, result)
    result.notes.append(failure)
    warnings.warn(failure, JudgeCallWarning, stacklevel=2)


def _throughput(limits: Limits | None) -> dict[str, float | int | None]:
    """The run's concurrency and rate budgets, as ``assay run --resume`` reuses them."""
    return {
        "concurrency": limits.concurrency if limits else None,
        "rpm": limits.rpm if limits else None,
        "tpm": limits.tpm if limits else None,
    }


def _is_local(judge: JudgeModel) -> bool:
    from assay.models._local import LocalJudge

    return isinstance(judge, LocalJudge)


def _cancelling() -> bool:
    """Whether the run is being torn down by Ctrl-C rather than failing.

    Either its task is being cancelled (asyncio.run's answer to Ctrl-C), or no event loop
    runs at all: the interrupt landed in the loop's own code, the loop ended without
    cancelling the run's task, and the coroutine is being closed afterwards (by garbage
    collection). Such a run was abandoned, not failed: what it judged is stored.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop
        return True
    return task is not None and task.cancelling() > 0


async def _run_local(
    rows: Iterable[Row | SampleError],
    metric_list: Sequence[Metric],
    judge_model: JudgeModel,
    result: EvalResult,
    *,
    limits: Limits,
    cache: JudgeCache | None,
    concurrency: int | None,
    repeats: int,
    reasks: int | None,
    temperature: float | None,
    skip: Collection[tuple[str, int]],
    on_result: Callable[[SampleResult], None],
    on_error: Callable[[SampleError], None],
    on_call: Callable[[bool], None] | None = None,
    cascade: tuple[Mapping[str, PlannedCascade], Sequence[JudgeModel]] = ({}, ()),
) -> None:
    """The in-process engine: a bounded queue feeding a pool of workers (``on_call``: after each judge call).

    ``rows`` were checked when read (:func:`~assay.run._data.read_rows`). ``cascade``: each
    escalating metric's plan and the judges after the first, each given its own stack.
    """
    workers = max(1, concurrency or limits.concurrency or judge_model.max_concurrency)

    def stack(judge: JudgeModel) -> JudgeModel:
        built = build_judge_stack(judge, limits=limits, cache=cache, temperature=temperature, workers=workers)
        return CountedJudge(built, on_call) if on_call is not None else built

    stacked = stack(judge_model)
    later = [stack(judge) for judge in cascade[1]]
    escalations = {name: p.escalation([stacked, *later]) for name, p in cascade[0].items()}
    memo = ScoreMemo(cache, judge_model, temperature=temperature) if cache is not None else None
    queue: asyncio.Queue[tuple[Row, int] | None] = asyncio.Queue(maxsize=2 * workers)
    reasks_token = REASKS.set(reasks) if reasks is not None else None

    async def work() -> None:
        while (item := await queue.get()) is not None:
            row, repeat = item
            _REPEAT.set(repeat)
            scores = await score_sample(
                metric_list, row.sample, stacked, memo=memo, repeat=repeat, escalations=escalations, on_call=on_call
            )
            on_result(SampleResult(sample=row.sample, scores=scores, line=row.line, repeat=repeat))

    async def put(row: Row) -> None:
        for repeat in range(repeats):
            if (str(row.line), repeat) in skip:
                result.skipped += 1
                continue
            await queue.put((row, repeat))

    async def produce() -> None:
        for item in rows:
            if isinstance(item, SampleError):
                on_error(item)
            else:
                await put(item)
        for _ in tasks:
            await queue.put(None)

    tasks = [asyncio.create_task(work()) for _ in range(workers)]
    producer = asyncio.create_task(produce())
    try:
        # A worker that fails (the store cannot be written, an on_result callback raises)
        # ends the run with its error: waiting on the producer alone would block forever on
        # a full queue that no worker drains.
        done, _ = await asyncio.wait([producer, *tasks], return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error
        await asyncio.gather(producer, *tasks)
    finally:
        for task in (producer, *tasks):
            task.cancel()
        await asyncio.gather(producer, *tasks, return_exceptions=True)
        try:
            for judge in (stacked, *later):
                await close_judge(judge)
        except Exception:
            if not _cancelling():
                raise
            # Closing a client mid-request may fail; the caller must see the cancellation.
        if reasks_token is not None:
            REASKS.reset(reasks_token)


def evaluate(
    data: Any,
    metrics: Metric | str | Sequence[Metric | str],
    judge: JudgeModel | str | None = None,
    *,
    store: RunStore | str | Path | None = None,
    resume: str | None = None,
    run_id: str | None = None,
    cache: JudgeCache | str | Path | bool | None = None,
    progress: ProgressMode | bool | None = "auto",
    mapping: Mapping[str, str] | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    limits: Limits | None = None,
    repeats: int = 1,
    reasks: int | None = None,
    temperature: float | None = None,
    engine: Literal["local", "ray"] = "local",
    ray_address: str | None = None,
    ray_workers: int = 2,
    prices: PriceTable | None = None,
    on_result: Callable[[SampleResult], None] | None = None,
    on_error: Callable[[SampleError], None] | None = None,
    keep_results: bool = True,
    export: str | None = None,
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS,
    escalate: Sequence[str | JudgeModel] = (),
    agreement: float | None = None,
    delta: float | None = None,
) -> EvalResult:
    """Score every sample with every metric, optionally as a stored, resumable run.

    Args:
        data: A file path (JSONL, CSV, Parquet, or a ``.json`` array), a pandas DataFrame, an Arrow table,
            a Hugging Face ``Dataset``, or :class:`~assay.Sample` objects / dicts with the
            same fields (``input``, ``output``, ``retrieved_contexts`` and other common
            names are accepted). Every kind is checked alike, as ``assay run`` checks a
            file: a row lacking a field a metric needs (``contexts`` for faithfulness) is
            an invalid row (in ``errors``, naming its line) and is not judged; when no row
            has it, nothing is judged (``ConfigError``).
        metrics: One metric or several: objects (``[Faithfulness()]``), registry names
            (``"faithfulness"``, ``["faithfulness", "answer_relevancy"]``; see ``assay
            metrics``), or a mix.
        judge: A :class:`~assay.models.JudgeModel`, a judge string (``"local"``,
            ``"openai:gpt-4o-mini"``), or ``None`` for ``$ASSAY_JUDGE`` / the local default.
        store: A run store (a path such as ``".assay/runs.sqlite"``, or a
            :class:`~assay.run.RunStore`): every result is committed as it finishes, and
            the result knows its ``run_id`` (for ``assay report``, ``assay gate``, resume).
        resume: Continue this stored run: finished samples are not judged again. The data,
            metrics, judge and options must be the run's own (else :class:`ResumeError`).
        run_id: The id to give a new stored run (default: a new sortable id).
        cache: ``True`` (``.assay/cache.sqlite``), a path, or a
            :class:`~assay.run.JudgeCache`: identical, validated calls are answered from disk.
        progress: ``"auto"`` (a bar in terminals and notebooks, plain lines in logs),
            ``"bar"``, ``"plain"``, or ``"none"``/``False``.
        mapping: Column renames (``{"my_answer": "answer"}``), as ``assay run --map
            my_answer=answer``; every column named must exist.
        base_url: For ``openai:`` judge strings.
        concurrency: Samples in flight at once (default: what the judge supports).
        limits: Rate budgets, timeouts and retries (:class:`Limits`).
        repeats: Score each sample this many times (real repeats: the repeat index is part
            of every call's cache key and local seed).
        reasks: Re-asks per invalid judge answer (default 1).
        temperature: Sampling temperature for every judge call (default: each metric's own,
            0). Use with ``repeats`` to measure how much the judge wobbles.
        engine: ``"local"`` (this process) or ``"ray"`` (``ray_address``, ``ray_workers``).
        ray_address: The Ray cluster for ``engine="ray"``.
        ray_workers: Ray worker actors.
        prices: The price table for costs (default: the built-in one).
        on_result: Called with each sample's result as it finishes.
        on_error: Called with each invalid input row.
        keep_results: Keep every result in memory (``False`` for huge streamed inputs).
        export: Also send each result as it finishes to ``otlp``, ``phoenix`` or ``langfuse``
            (``assay run --export``; the ids ``assay export`` derives; the report is ``.export``).
        max_field_chars: Longest text one field of a row may hold, in characters (default
            200,000); a row with a longer one is an invalid row (in ``errors``, naming the
            field, its size and the limit) and the others are judged.
        max_row_chars: Most text one row may hold in all (default 1,000,000).
        escalate: A cascade (``docs/guides/escalation.md``): the judges after ``judge``, cheapest
            first (judge strings or judges), ``"review"`` last to leave what no judge kept to
            people (``needs_review``). Each escalating metric's questions are decided by the
            first judge sure enough; ``store`` must hold each judge's calibration.
        agreement: The cascade's target agreement with people (``0.9``); needed with ``escalate``.
        delta: The chance the guarantee fails (default 0.1).

    Returns:
        An :class:`EvalResult`: ``.summary()``, ``.to_pandas()``, ``.lowest(metric)``,
        and for a stored run ``.run_id`` and ``.gate(metric, threshold=...)``; its HTML report is
        :func:`assay.report.report_result`.

    Raises:
        DatasetError: the data cannot be read or holds no rows.
        ConfigError: a bad option (a size limit below 1 too), an unknown metric name, or a
            metric needs a field no row has (the message names the field, the columns kept
            as metadata and the ``mapping=`` that would read one as the field).
        ResumeError: ``resume`` names a run whose data, metrics, judge or options differ (a
            cascade's levels, targets or thresholds too).
        JudgeUnavailableError: every judge call failed and nothing was scored (a server
            that is not running, a wrong base URL or key): the text is the one ``assay run``
            prints, with the first call's error and its hint; ``.result`` holds the
            unscored results (stored too, when the run has a store).

    A judge call that fails in a run where others succeed never raises: its sample is
    unscored with a reason, one :class:`~assay.errors.JudgeCallWarning` says the first
    error of each kind, and ``result.notes`` holds the same text. Works inside a
    running event loop (Jupyter) by running in a worker thread.
    """
    return run_plan(plan_run(**locals()))  # checked here, in the caller's thread


def run_plan(plan: RunPlan) -> EvalResult:
    """Carry out ``plan`` from synchronous code (in a worker thread inside a running event loop)."""
    coro = execute(plan)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_loop = False  # run outside the except block, so an error of the run is not chained to this one
    else:
        in_loop = True
    if not in_loop:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
