"""``assay run``: evaluate a JSONL dataset with one or more metrics."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, cast

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

from assay.cli._console import EXIT_BAD_ROWS, EXIT_OK, EXIT_USAGE, err_console, fmt_score, out_console
from assay.errors import AssayError, SampleError
from assay.metrics import Faithfulness, Metric
from assay.metrics._faithfulness import DecomposerName, FaithfulnessStrategy
from assay.models import JUDGE_FORMS, LocalJudge, get_judge
from assay.run import EvalResult, SampleResult, aevaluate, count_rows, read_jsonl

__all__ = ["METRICS", "run"]

METRICS: dict[str, Callable[[str, str], Metric]] = {
    "faithfulness": lambda strategy, decomposer: Faithfulness(
        strategy=cast(FaithfulnessStrategy, strategy), decomposer=cast(DecomposerName, decomposer)
    ),
}


def _default_out(data: Path) -> Path:
    return Path(".assay") / "results" / f"{data.stem}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def _print_summary(result: EvalResult, out: Path, elapsed: float) -> None:
    table = Table(title=f"assay run · judge {result.judge} · {elapsed:.1f}s", title_justify="left")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("scored", justify="right")
    table.add_column("unscored (by reason)")
    table.add_column("tokens in/out", justify="right")
    for name, s in result.summary().items():
        reasons = ", ".join(f"{r}: {n}" for r, n in s.unscored_by_reason.items()) or "0"
        table.add_row(
            name,
            fmt_score(s.mean),
            str(s.n_scored),
            reasons,
            f"{s.usage.prompt_tokens:,}/{s.usage.completion_tokens:,}",
        )
    out_console.print(table)
    for name in result.metrics:
        lowest = [r for r in result.lowest(name, 5) if r.scores[name].value < 1.0]
        if not lowest:
            continue
        low = Table(title=f"lowest {name}", title_justify="left", show_lines=True)
        low.add_column("id")
        low.add_column("score", justify="right")
        low.add_column("failing statements (judge's reason)")
        for r in lowest:
            score = r.scores[name]
            failing = "\n".join(
                f"[red]✗[/red] {escape(v.subject)} [dim]({escape(v.reason)})[/dim]" for v in score.failing
            )
            low.add_row(escape(r.sample.id), fmt_score(score.value), failing or "—")
        out_console.print(low)
    unscored = [(r, n) for r in result.results for n, s in r.scores.items() if not s.is_scored]
    if unscored:
        out_console.print(f"[yellow]{len(unscored)} unscored:[/yellow]")
        for r, n in unscored[:10]:
            bad = r.scores[n]
            reason = bad.unscored_reason.value if bad.unscored_reason else "?"
            out_console.print(f"  line {r.line} id={escape(r.sample.id)} {n}: {reason} — {escape(bad.detail or '')}")
    if result.errors:
        err_console.print(f"[red]{len(result.errors)} invalid input rows (not scored):[/red]")
        for e in result.errors[:20]:
            err_console.print(f"  {escape(str(e))}")
        if len(result.errors) > 20:
            err_console.print(f"  … and {len(result.errors) - 20} more")
    out_console.print(f"results: {out}")


def run(
    data: Annotated[Path, typer.Argument(help="JSONL file: id, question, answer, contexts, reference.")],
    metric: Annotated[
        list[str] | None, typer.Option("--metric", "-m", help=f"Metric to compute ({', '.join(METRICS)}); repeatable.")
    ] = None,
    judge: Annotated[str, typer.Option("--judge", "-j", envvar="ASSAY_JUDGE", help=f"Judge: {JUDGE_FORMS}.")] = "local",
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="Server URL for openai: judges.")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Where to write one JSON line per sample.")] = None,
    strategy: Annotated[str, typer.Option(help="Faithfulness verdicts: auto, per_statement or batch.")] = "auto",
    decomposer: Annotated[
        str, typer.Option(help="Statement extraction: llm (atomic, pronouns resolved) or sentences.")
    ] = "llm",
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Samples in flight (default: what the judge supports).")
    ] = None,
) -> None:
    """Evaluate DATA with the chosen metrics and judge; write per-sample results and print a summary.

    Exit codes: 0 every row evaluated; 1 could not run (unreadable input, bad option);
    2 evaluated, but some input rows were invalid (listed with their line numbers).
    """
    names = metric or ["faithfulness"]
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        err_console.print(f"[red]error:[/red] unknown metric {', '.join(unknown)}; choose from {', '.join(METRICS)}")
        raise typer.Exit(EXIT_USAGE)
    try:
        metrics = [METRICS[n](strategy, decomposer) for n in names]
        judge_model = get_judge(judge, base_url=base_url)
        total = count_rows(data)
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    required = sorted({f for m in metrics for f in m.required_fields})
    out_path = out or _default_out(data)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with (
        Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err_console,
            transient=False,
        ) as progress,
        out_path.open("w", encoding="utf-8") as sink,
    ):
        if isinstance(judge_model, LocalJudge):
            _load_local(judge_model, progress)
        task = progress.add_task("judging", total=total, stats="")
        scored = unscored = 0

        def on_result(result: SampleResult) -> None:
            nonlocal scored, unscored
            sink.write(json.dumps(result.to_record(), ensure_ascii=False) + "\n")
            sink.flush()
            for s in result.scores.values():
                scored += s.is_scored
                unscored += not s.is_scored
            progress.update(task, advance=1, stats=f"scored {scored} unscored {unscored}")

        def on_error(error: SampleError) -> None:
            progress.update(task, advance=1)
            progress.console.print(f"[red]skipped[/red] {escape(str(error))}")

        try:
            result = asyncio.run(
                aevaluate(
                    read_jsonl(data, required=required),
                    metrics,
                    judge_model,
                    concurrency=concurrency,
                    on_result=on_result,
                    on_error=on_error,
                )
            )
        except AssayError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
    _print_summary(result, out_path, time.perf_counter() - started)
    raise typer.Exit(EXIT_BAD_ROWS if result.errors else EXIT_OK)


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
