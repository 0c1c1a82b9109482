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
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay._safety import printable, redact_url
from assay._version import __version__
from assay.errors import ConfigError, JudgeCallWarning, JudgeUnavailableError, SampleError, StorageError
from assay.metrics._base import Metric, score_safely
from assay.metrics._registry import metrics_from
from assay.models._cache import JudgeCache
from assay.models._protocol import JudgeModel, close_judge
from assay.models._registry import get_judge
from assay.models._stack import _REPEAT, CountedJudge, Limits, build_judge_stack
from assay.prompts import REASKS
from assay.run._cost import CostReport, PriceTable
from assay.run._data import (
    DEFAULT_MAX_FIELD_CHARS,
    DEFAULT_MAX_ROW_CHARS,
    DatasetSource,
    Row,
    SizeLimits,
    open_dataset,
    read_rows,
    required_fields,
)
from assay.run._judge_record import JudgeRecord
from assay.run._outcome import EvalResult
from assay.run._progress import ProgressMode, load_local_judge, make_reporter
from assay.run._results import SampleResult
from assay.run._session import RunOptions, check_resume
from assay.run._store import RunSpec, RunStatus, RunStore, StoreError, new_run_id
from assay.run._summary import RunSummary, RunTally
from assay.run._trust import trust_for

if TYPE_CHECKING:
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
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS,
) -> EvalResult:
    """Score every sample with every metric; see :func:`evaluate`."""
    metric_list = metrics_from(metrics)
    names = [m.name for m in metric_list]
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    if engine not in ("local", "ray"):
        raise ConfigError(f"engine is 'local' or 'ray', got {engine!r}")
    if resume is not None and store is None:
        raise ConfigError("resume= needs the store the run is in: evaluate(..., store=PATH, resume=RUN_ID)")
    limits = limits or Limits()
    size_limits = SizeLimits(max_field_chars, max_row_chars)  # checked before the judge is built
    judge_string = judge if isinstance(judge, str) else None
    judge_model = judge if not isinstance(judge, str | None) else get_judge(judge, base_url=base_url)
    run_options = RunOptions(
        mapping=dict(mapping or {}),
        repeats=repeats,
        reasks=reasks if reasks is not None else REASKS.get(),
        temperature=temperature,
        cache=cache is not None and cache is not False,
        timeout_s=limits.timeout_s,
        max_attempts=limits.max_attempts,
        max_field_chars=max_field_chars,
        max_row_chars=max_row_chars,
    )

    # The data: read once to check it (and fingerprint it) unless it is a one-shot stream
    # that nothing needs to verify; then read again to judge. Whatever the data is (a file,
    # a table, a list, a stream), every row is checked by one path (sample_from_record): a
    # row lacking a field a metric needs is an invalid row, and when no row has it the run
    # stops here, before any judge call (a stream cannot know that before it ends: each of
    # its rows is an invalid row).
    streaming = store is None and not isinstance(data, str | Path | Sequence) and not _is_table(data)
    required = required_fields(metric_list)
    source: DatasetSource | None = None
    rows: Iterable[Row | SampleError]
    if streaming:
        rows = read_rows(data, required=required, mapping=mapping, limits=size_limits)
    else:
        source = open_dataset(data, mapping=mapping, limits=size_limits)
        source.check_fields(metric_list)
        rows = source.rows(required)

    run_store = RunStore(store) if isinstance(store, str | Path) else store
    own_store = isinstance(store, str | Path)
    new_id = run_id
    run_id = None
    done: set[tuple[str, int]] = set()
    judge_cache, own_cache = _open_cache(cache)
    judge_record = JudgeRecord.of(judge_model, (m.spec() for m in metric_list))
    if run_store is not None:
        assert source is not None
        if resume is not None:
            spec = run_store.spec(resume)
            check_resume(
                spec,
                source=source,
                metrics=metric_list,
                judge_model=judge_model.model_id,
                base_url=base_url,
                options=run_options,
                judge=judge_record,
            )
            run_id = resume
            done = run_store.finished(run_id)
            run_store.set_status(run_id, "running")
        else:
            run_id = new_id or new_run_id()
            run_store.create(
                RunSpec(
                    run_id=run_id,
                    dataset=source.description,
                    dataset_fingerprint=source.fingerprint,
                    n_rows=source.n_rows,
                    judge=redact_url(judge_string) or judge_model.model_id,
                    judge_model=judge_model.model_id,
                    judge_record=judge_record,
                    base_url=redact_url(base_url),
                    metrics=tuple(m.spec() for m in metric_list),
                    # throughput is kept for a resume to reuse, outside the compared options
                    options=run_options.model_dump(mode="json") | {"throughput": _throughput(limits)},
                    engine=engine,
                    assay_version=__version__,
                )
            )

    result = EvalResult(
        metrics=tuple(names),
        judge=judge_model.model_id,
        run_id=run_id,
        store_path=run_store.path if run_store is not None else None,
        judge_record=judge_record,
        trust={
            m.name: trust_for(
                m.spec(),
                judge_record,
                run_store.calibrations(m.name, judge_record.identity) if run_store is not None else (),
            )
            for m in metric_list
        },
    )
    reporter = make_reporter(progress)
    if source is not None:
        result.notes = source.note_messages()
        for note in result.notes:  # what was taken on trust, said once for the run, before any judging
            reporter.note(f"note: {printable(note, markup=False)}")
    tally = RunTally(names, prices)
    if run_store is not None and run_id is not None and done:
        for earlier in run_store.results(run_id):  # a resumed run's progress counts what is stored
            if (str(earlier.line), earlier.repeat) in done:  # not an error it judges again
                tally.add(earlier)

    calls_made = 0
    stored_calls = 0  # calls of the samples recorded by this process: the rest belong to samples cut short

    def stats() -> str:
        s = tally.summary()
        unscored = sum(m.n_unscored for m in s.metrics.values())
        calls = f" · {calls_made:,} judge call{'s' if calls_made != 1 else ''}" if calls_made else ""
        return (
            f"scored {s.n_scored} unscored {unscored}{calls} · {s.cost.usage.total_tokens:,} tok · "
            f"{_cost_text(s.cost, judge_model.model_id)}"
        )

    def call_done() -> None:
        # A sample of a long agent trace or RAG answer takes minutes on a small CPU: the line
        # moves with every judge call, not only when a sample finishes.
        nonlocal calls_made
        calls_made += 1
        reporter.advance(0, stats())

    def record(done_result: SampleResult) -> None:
        if run_store is not None and run_id is not None:
            try:
                run_store.record(run_id, done_result, repeat=done_result.repeat)
            except StoreError as exc:
                # The row cannot be kept: it becomes a located row error, and the run goes on.
                where = source.description if source else None
                record_error(SampleError(str(exc), source=where, line=done_result.line))
                return
        nonlocal stored_calls
        stored_calls += sum(len(score.all_calls) for score in done_result.scores.values())
        result._add(done_result, keep_results)
        tally.add(done_result)
        if on_result is not None:
            on_result(done_result)
        reporter.advance(1, stats())

    def record_error(error: SampleError) -> None:
        result.errors.append(error)
        tally.add_row_error(str(error))
        if run_store is not None and run_id is not None:
            run_store.record_error(run_id, error)
        if on_error is not None:
            on_error(error)
        reporter.note(f"skipped {printable(str(error), markup=False)}")
        reporter.advance(0, stats())

    status: RunStatus = "failed"
    try:
        if engine == "local" and _is_local(judge_model):
            load_local_judge(judge_model, reporter)
        total = source.n_rows * repeats if source is not None else None
        reporter.start(f"judging ({run_id})" if run_id else "judging", total, len(done))
        if engine == "ray":
            from assay.run._ray import aevaluate_ray

            ray_result = await aevaluate_ray(
                rows,
                metric_list,
                judge_string or (lambda: judge_model),
                base_url=base_url,
                limits=limits,
                cache_path=judge_cache.path if judge_cache is not None else None,
                repeats=repeats,
                reasks=reasks,
                temperature=temperature,
                skip=done,
                on_result=record,
                on_error=record_error,
                keep_results=False,
                address=ray_address,
                workers=ray_workers,
                per_worker_concurrency=judge_model.max_concurrency,
            )
            result.skipped = ray_result.skipped
        else:
            await _run_local(
                rows,
                metric_list,
                judge_model,
                result,
                limits=limits,
                cache=judge_cache,
                concurrency=concurrency,
                repeats=repeats,
                reasks=reasks,
                temperature=temperature,
                skip=done,
                on_result=record,
                on_error=record_error,
                on_call=call_done,
            )
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
        if judge_cache is not None and judge_cache.write_error is not None:
            n = judge_cache.failed_writes
            reporter.note(
                f"warning: {judge_cache.write_error}; {n} answer{'s were' if n != 1 else ' was'} not cached "
                "(the results are unaffected; the next run asks again)"
            )
        reporter.close()
        if run_store is not None and run_id is not None:
            # If the store failed, the error being raised says so; the run stays resumable.
            with contextlib.suppress(StorageError):
                run_store.set_status(run_id, status)
                # Calls spent on samples the interrupt stopped: in no record, said beside the run's
                # cost. (str(): mypy narrows status to its last write in the try block.)
                if str(status) == "interrupted" and calls_made > stored_calls:
                    run_store.add_unstored_calls(run_id, calls_made - stored_calls)
            if own_store:
                run_store.close()
        if own_cache and judge_cache is not None:
            judge_cache.close()
    _say_failed_calls(tally.summary(), result)
    return result


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


def _is_table(data: Any) -> bool:
    """A pandas DataFrame, a Hugging Face dataset or an Arrow table.

    ``pandas.DataFrame.__module__`` is ``"pandas"`` in pandas 3.
    """
    module = type(data).__module__
    return module.split(".")[0] in ("pandas", "datasets", "pyarrow")


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
    on_call: Callable[[], None] | None = None,
) -> None:
    """The in-process engine: a bounded queue feeding a pool of workers (``on_call``: after each judge call).

    ``rows`` were checked when read (:func:`~assay.run._data.read_rows`).
    """
    workers = max(1, concurrency or limits.concurrency or judge_model.max_concurrency)
    stacked = build_judge_stack(judge_model, limits=limits, cache=cache, temperature=temperature, workers=workers)
    if on_call is not None:
        stacked = CountedJudge(stacked, on_call)
    queue: asyncio.Queue[tuple[Row, int] | None] = asyncio.Queue(maxsize=2 * workers)
    reasks_token = REASKS.set(reasks) if reasks is not None else None

    async def work() -> None:
        while (item := await queue.get()) is not None:
            row, repeat = item
            _REPEAT.set(repeat)
            scores = {m.name: await score_safely(m, row.sample, stacked) for m in metric_list}
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
            await close_judge(stacked)
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
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS,
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
        max_field_chars: Longest text one field of a row may hold, in characters (default
            200,000); a row with a longer one is an invalid row (in ``errors``, naming the
            field, its size and the limit) and the others are judged.
        max_row_chars: Most text one row may hold in all (default 1,000,000).

    Returns:
        An :class:`EvalResult`: ``.summary()``, ``.to_pandas()``, ``.lowest(metric)``,
        and for a stored run ``.run_id`` and ``.gate(metric, threshold=...)``; its HTML report is
        :func:`assay.report.report_result`.

    Raises:
        DatasetError: the data cannot be read or holds no rows.
        ConfigError: a bad option (a size limit below 1 too), an unknown metric name, or a
            metric needs a field no row has (the message names the field, the columns kept
            as metadata and the ``mapping=`` that would read one as the field).
        ResumeError: ``resume`` names a run whose data, metrics, judge or options differ.
        JudgeUnavailableError: every judge call failed and nothing was scored (a server
            that is not running, a wrong base URL or key): the text is the one ``assay run``
            prints, with the first call's error and its hint; ``.result`` holds the
            unscored results (stored too, when the run has a store).

    A judge call that fails in a run where others succeed never raises: its sample is
    unscored with a reason, one :class:`~assay.errors.JudgeCallWarning` says the first
    error of each kind, and ``result.notes`` holds the same text. Works inside a
    running event loop (Jupyter) by running in a worker thread.
    """
    coro = aevaluate(
        data,
        metrics,
        judge,
        store=store,
        resume=resume,
        run_id=run_id,
        cache=cache,
        progress=progress,
        mapping=mapping,
        base_url=base_url,
        concurrency=concurrency,
        limits=limits,
        repeats=repeats,
        reasks=reasks,
        temperature=temperature,
        engine=engine,
        ray_address=ray_address,
        ray_workers=ray_workers,
        prices=prices,
        on_result=on_result,
        on_error=on_error,
        keep_results=keep_results,
        max_field_chars=max_field_chars,
        max_row_chars=max_row_chars,
    )
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
