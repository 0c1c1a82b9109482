"""``assay run``: evaluate a dataset with one or more metrics, into the run store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

import assay
from assay.cli._console import (
    EXIT_BAD_ROWS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    err_console,
    fmt_score,
    out_console,
)
from assay.errors import AssayError, ConfigError, SampleError
from assay.metrics import Metric
from assay.metrics._registry import build_metric
from assay.models import JUDGE_FORMS, LocalJudge, get_judge
from assay.run import (
    ALIASES,
    EvalResult,
    JudgeCache,
    Limits,
    RunSpec,
    RunStore,
    SampleResult,
    aevaluate,
    count_rows,
    new_run_id,
)
from assay.run._cost import CostReport, PriceTable
from assay.run._dryrun import EstimatingJudge
from assay.run._readers import read_dataset

__all__ = ["build_metrics", "run"]


def _parse_sets(sets: list[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = defaultdict(dict)
    for item in sets:
        key, eq, value = item.partition("=")
        metric, dot, option = key.partition(".")
        if not eq or not dot or not metric or not option:
            raise ConfigError(f"--set takes METRIC.OPTION=VALUE, got {item!r}")
        options[metric][option] = value
    return dict(options)


def _parse_mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        source, eq, target = pair.partition("=")
        if not eq or not source or not target:
            raise ConfigError(f"--map takes COLUMN=FIELD (e.g. response=answer), got {pair!r}")
        mapping[source] = target
    return mapping


def build_metrics(names: list[str], options: dict[str, dict[str, str]]) -> list[Metric]:
    """The metrics named on the command line, with their ``--set`` options."""
    stray = sorted(set(options) - set(names))
    if stray:
        raise ConfigError(f"--set names metric {stray[0]!r}, which is not among the -m metrics ({', '.join(names)})")
    return [build_metric(name, options.get(name)) for name in names]


def check_fields(data: Path, metrics: list[Metric], mapping: dict[str, str]) -> None:
    """Fail before any judge call when the dataset lacks a field some metric needs.

    The first valid row stands for the dataset: a field missing there is one clear error
    naming the metric and the field, not one error per row. (Rows that lack it later are
    still reported one by one, with their line numbers.)

    Raises:
        ConfigError: a metric needs a field the first valid row does not have.
    """
    from assay.metrics import missing_fields
    from assay.run import Row

    first = next((item for item in read_dataset(data, mapping=mapping) if isinstance(item, Row)), None)
    if first is None:
        return
    for metric in metrics:
        missing = missing_fields(metric, first.sample)
        if missing:
            aliases = {v: [k for k, t in ALIASES.items() if t == v] for v in missing}
            names = "; ".join(
                f"'{m}'" + (f" (also read from {', '.join(aliases[m])})" if aliases[m] else "") for m in missing
            )
            raise ConfigError(
                f"metric '{metric.name}' needs {names}, which {data}:{first.line} does not have; add it to the data "
                f"or rename a column with --map COLUMN={missing[0]}"
            )


def _fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"size={stat.st_size} mtime_ns={stat.st_mtime_ns}"


def _print_summary(result: EvalResult, cost: CostReport, run_id: str, elapsed: float, store: Path) -> None:
    table = Table(title=f"run {run_id} · judge {result.judge} · {elapsed:.1f}s", title_justify="left")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("scored", justify="right")
    table.add_column("unscored (by reason)")
    for name, s in result.summary().items():
        reasons = ", ".join(f"{r}: {n}" for r, n in s.unscored_by_reason.items()) or "0"
        table.add_row(name, fmt_score(s.mean), str(s.n_scored), reasons)
    out_console.print(table)
    out_console.print(
        f"judge calls {cost.calls} (cached {cost.cached_calls}, failed {cost.failed_calls}) · tokens "
        f"{cost.usage.prompt_tokens:,} in / {cost.usage.completion_tokens:,} out · cost {cost.describe()}"
    )
    for name in result.metrics:
        lowest = [r for r in result.lowest(name, 5) if r.scores[name].value < 1.0]
        if not lowest:
            continue
        low = Table(title=f"lowest {name}", title_justify="left", show_lines=True)
        low.add_column("line", justify="right")
        low.add_column("id")
        low.add_column("score", justify="right")
        low.add_column("failing verdicts (judge's reason)")
        for r in lowest:
            score = r.scores[name]
            failing = "\n".join(
                f"[red]✗[/red] {escape(v.subject)} [dim]({escape(v.reason)})[/dim]" for v in score.failing
            )
            low.add_row(str(r.line), escape(r.sample.id), fmt_score(score.value), failing or "—")
        out_console.print(low)
    if result.errors:
        err_console.print(f"[red]{len(result.errors)} invalid input rows (not scored):[/red]")
        for e in result.errors[:20]:
            err_console.print(f"  {escape(str(e))}")
        if len(result.errors) > 20:
            err_console.print(f"  … and {len(result.errors) - 20} more")
    out_console.print(f"stored in {store} as run [bold]{run_id}[/bold] · 'assay runs show {run_id}'")


INTERRUPT_GRACE_S = 15.0
"""After Ctrl-C, how long in-flight calls may take to wind down before the process exits anyway."""


class _bounded_interrupt:
    """Ctrl-C raises KeyboardInterrupt as usual, and also arms a watchdog.

    Every finished sample is already committed, so nothing is lost by not waiting: if the
    run has not wound down within ``INTERRUPT_GRACE_S`` (a call that ignores
    cancellation, a stuck connection), ``give_up`` marks the run interrupted and the
    process exits 130. A Ctrl-C must never hang the terminal or a CI job.
    """

    def __init__(self, give_up: Callable[[], None]) -> None:
        self.give_up = give_up
        self.previous: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        timer = threading.Timer(INTERRUPT_GRACE_S, self.give_up)
        timer.daemon = True
        timer.start()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C interrupts the clean-up
        raise KeyboardInterrupt

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handler)

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _give_up(store_path: Path, run_id: str) -> None:
    """The watchdog's end: record the interruption from this thread, then exit at once."""
    try:
        RunStore(store_path).set_status(run_id, "interrupted")
    finally:
        err_console.print(
            f"[yellow]interrupted[/yellow] (in-flight calls did not stop within {INTERRUPT_GRACE_S:g} s): every "
            f"finished sample is stored. Continue with [bold]assay run --resume {run_id}[/bold]"
        )
        os._exit(EXIT_INTERRUPTED)


def _load_local(judge: LocalJudge, progress: Progress) -> None:
    """Assemble the weights (first run only) and load the model, with visible progress."""
    task: TaskID | None = None

    def on_bytes(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            task = progress.add_task("assembling model weights (once)", total=total, stats="")
        progress.update(task, completed=done)

    spinner = progress.add_task(f"loading {judge.model_id}", total=None, stats="")
    judge.load(progress=on_bytes)
    progress.update(spinner, total=1, completed=1)


def _dry_run(
    data: Path,
    metrics: list[Metric],
    judge_id: str,
    per_statement: bool,
    mapping: dict[str, str],
    repeats: int,
    prices: PriceTable,
) -> None:
    required = sorted({f for m in metrics for f in m.required_fields})
    estimator = EstimatingJudge(judge_id, per_statement=per_statement)
    result = assay.evaluate(
        read_dataset(data, required=required, mapping=mapping), metrics, estimator, repeats=repeats, reasks=0
    )
    usd = prices.cost(judge_id, estimator.usage)
    table = Table(title=f"dry run · {data} · judge {judge_id} · nothing was called", title_justify="left")
    for column in ("samples", "invalid rows", "judge calls", "prompt tokens", "completion tokens", "cost"):
        table.add_column(column, justify="right")
    table.add_row(
        str(result.n_samples),
        str(len(result.errors)),
        f"{estimator.calls:,}",
        f"~{estimator.usage.prompt_tokens:,}",
        f"~{estimator.usage.completion_tokens:,}",
        "unknown (no price)" if usd is None else f"~${usd:.4f}",
    )
    out_console.print(table)
    out_console.print(
        "[dim]Estimates: statements counted as sentences, reasons of typical length, 4 characters a "
        "token; the cache would make repeated calls free.[/dim]"
    )


def run(
    data: Annotated[
        Path | None, typer.Argument(help="JSONL, CSV or Parquet: id, question, answer, contexts, reference.")
    ] = None,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", "-m", help="Metric to compute (repeatable); see 'assay metrics'.")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="A metric option: METRIC.OPTION=VALUE (repeatable).")
    ] = None,
    judge: Annotated[str, typer.Option("--judge", "-j", envvar="ASSAY_JUDGE", help=f"Judge: {JUDGE_FORMS}.")] = "local",
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="Server URL for openai: judges.")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Also write one JSON line per sample here.")] = None,
    store_path: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    resume: Annotated[
        str | None, typer.Option("--resume", help="Continue run RUN_ID; finished samples are not judged again.")
    ] = None,
    strategy: Annotated[str | None, typer.Option(help="Faithfulness verdicts: auto, per_statement, batch.")] = None,
    decomposer: Annotated[str | None, typer.Option(help="Faithfulness statements: llm or sentences.")] = None,
    map_: Annotated[
        list[str] | None, typer.Option("--map", help="Rename an input column: COLUMN=FIELD (repeatable).")
    ] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Samples and calls in flight at once.")] = None,
    rpm: Annotated[float | None, typer.Option(min=0.001, help="Requests-per-minute budget.")] = None,
    tpm: Annotated[float | None, typer.Option(min=1, help="Tokens-per-minute budget.")] = None,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds per judge call before it is retried.")] = 120.0,
    retries: Annotated[int, typer.Option(min=0, help="Retries of a call after 429/5xx/timeouts.")] = 5,
    reasks: Annotated[int, typer.Option(min=0, help="Re-asks of a judge whose answer is invalid.")] = 1,
    repeats: Annotated[int, typer.Option(min=1, help="Judge each sample this many times.")] = 1,
    temperature: Annotated[
        float | None,
        typer.Option(min=0.0, help="Sampling temperature of every judge call (default: 0); use with --repeats."),
    ] = None,
    cache: Annotated[bool, typer.Option(help="Answer identical judge calls from .assay/cache.sqlite.")] = True,
    cache_path: Annotated[Path, typer.Option(help="The judge-call cache.")] = Path(".assay/cache.sqlite"),
    prices: Annotated[
        Path | None, typer.Option(envvar="ASSAY_PRICES", help="JSON price table overriding the built-in one.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Estimate calls, tokens and cost; call nothing.")] = False,
    engine: Annotated[str, typer.Option(help="Where judge calls run: local or ray.")] = "local",
    address: Annotated[
        str | None, typer.Option(envvar="RAY_ADDRESS", help="Ray cluster: auto, HOST:PORT or ray://HOST:10001.")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="Ray engine: worker processes (each builds the judge once).")] = 2,
) -> None:
    """Evaluate DATA with the chosen metrics and judge; every sample is committed to the run store.

    Exit codes: 0 every row evaluated; 1 could not run (unreadable input, bad option);
    2 evaluated, but some input rows were invalid; 130 interrupted (resume with --resume).
    """
    try:
        store = RunStore(store_path)
        if engine not in ("local", "ray"):
            raise ConfigError(f"--engine is local or ray, got {engine!r}")
        if resume:
            spec = store.spec(resume)
            engine = spec.engine
            options = spec.options
            data = Path(spec.dataset) if spec.dataset else None
            judge, base_url = spec.judge, spec.base_url
        else:
            names = metric or ["faithfulness"]
            sets = _parse_sets(set_ or [])
            if strategy is not None:
                sets.setdefault("faithfulness", {})["strategy"] = strategy
            if decomposer is not None:
                sets.setdefault("faithfulness", {})["decomposer"] = decomposer
            options = {
                "metrics": names,
                "metric_options": sets,
                "mapping": _parse_mapping(map_ or []),
                "repeats": repeats,
                "reasks": reasks,
                "temperature": temperature,
            }
        if data is None:
            raise ConfigError("give a DATA file to evaluate (or --resume RUN_ID)")
        metrics = build_metrics(list(options["metrics"]), dict(options["metric_options"]))
        mapping = dict(options["mapping"])
        price_table = PriceTable.load(prices)
        judge_model = get_judge(judge, base_url=base_url)
        if dry_run:
            _dry_run(
                data,
                metrics,
                judge_model.model_id,
                judge_model.prefers_per_statement,
                mapping,
                int(options["repeats"]),
                price_table,
            )
            raise typer.Exit(EXIT_OK)
        check_fields(data, metrics, mapping)
        total = count_rows(data) * int(options["repeats"])
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None

    if resume:
        run_id = resume
        done = store.finished(run_id)
        store.set_status(run_id, "running")
    else:
        run_id = new_run_id()
        done = set()
        spec = RunSpec(
            run_id=run_id,
            dataset=str(data),
            dataset_fingerprint=_fingerprint(data),
            judge=judge,
            judge_model=judge_model.model_id,
            base_url=base_url,
            metrics=tuple(m.spec() for m in metrics),
            options=options,
            engine=engine,
            assay_version=assay.__version__,
        )
        store.create(spec)
    required = sorted({f for m in metrics for f in m.required_fields})
    limits = Limits(concurrency=concurrency, rpm=rpm, tpm=tpm, timeout_s=timeout, max_attempts=retries + 1)
    judge_cache = JudgeCache(cache_path) if cache and engine == "local" else None
    cost = CostReport(prices=price_table)
    sink: IO[str] | None = out.open("a" if resume else "w", encoding="utf-8") if out else None
    started = time.perf_counter()
    result: EvalResult | None = None
    interrupted = False
    try:
        with Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
        ) as progress:
            if engine == "local" and isinstance(judge_model, LocalJudge):
                _load_local(judge_model, progress)
            task = progress.add_task(f"judging ({run_id})", total=total, completed=len(done), stats="")
            counts = {"scored": 0, "unscored": 0}

            def on_result(sample_result: SampleResult) -> None:
                store.record(run_id, sample_result, repeat=sample_result.repeat)
                if sink is not None:
                    sink.write(json.dumps(sample_result.to_record(), ensure_ascii=False) + "\n")
                    sink.flush()
                for s in sample_result.scores.values():
                    counts["scored" if s.is_scored else "unscored"] += 1
                    cost.add(s.all_calls)
                stats = (
                    f"scored {counts['scored']} unscored {counts['unscored']} · "
                    f"{cost.usage.total_tokens:,} tok · ${cost.usd:.4f}"
                )
                progress.update(task, advance=1, stats=stats)

            def on_error(error: SampleError) -> None:
                store.record_error(run_id, error)
                progress.update(task, advance=int(options["repeats"]))
                progress.console.print(f"[red]skipped[/red] {escape(str(error))}")

            rows = read_dataset(data, required=required, mapping=mapping)
            if engine == "ray":
                from assay.run._ray import aevaluate_ray

                coro = aevaluate_ray(
                    rows,
                    [(n, dict(options["metric_options"]).get(n, {})) for n in options["metrics"]],
                    judge,
                    base_url=base_url,
                    limits=limits,  # --concurrency / --rpm / --tpm hold across the cluster
                    cache_path=cache_path if cache else None,  # each worker opens it on its node
                    repeats=int(options["repeats"]),
                    reasks=int(options["reasks"]),
                    skip=done,
                    on_result=on_result,
                    on_error=on_error,
                    keep_results=False,
                    address=address,
                    workers=workers,
                    per_worker_concurrency=judge_model.max_concurrency,
                )
            else:
                coro = aevaluate(
                    rows,
                    metrics,
                    judge_model,
                    limits=limits,
                    cache=judge_cache,
                    repeats=int(options["repeats"]),
                    reasks=int(options["reasks"]),
                    temperature=options.get("temperature"),
                    skip=done,
                    on_result=on_result,
                    on_error=on_error,
                    keep_results=False,
                )
            with _bounded_interrupt(lambda: _give_up(store_path, run_id)):
                result = asyncio.run(coro)
    except KeyboardInterrupt:
        interrupted = True
    except AssayError as exc:
        store.set_status(run_id, "failed")
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    finally:
        if sink is not None:
            sink.close()
        if judge_cache is not None:
            judge_cache.close()
    if interrupted or result is None:
        store.set_status(run_id, "interrupted")
        err_console.print(
            f"[yellow]interrupted[/yellow]: every finished sample is stored. Continue with "
            f"[bold]assay run --resume {run_id}[/bold]"
        )
        raise typer.Exit(EXIT_INTERRUPTED)
    summary: dict[str, Any] = {name: s.model_dump(mode="json") for name, s in result.summary().items()}
    summary["_cost"] = {
        "calls": cost.calls,
        "cached_calls": cost.cached_calls,
        "usd": cost.usd,
        "prompt_tokens": cost.usage.prompt_tokens,
        "completion_tokens": cost.usage.completion_tokens,
    }
    store.set_status(run_id, "finished", summary)
    _print_summary(result, cost, run_id, time.perf_counter() - started, store_path)
    raise typer.Exit(EXIT_BAD_ROWS if result.errors else EXIT_OK)
