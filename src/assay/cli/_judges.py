"""``assay judges bench``: parses options, calls :func:`assay.run.bench_judges` and prints the judges side by side."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from assay._safety import printable
from assay.cli._console import EXIT_OK, EXIT_USAGE, err_console, exits_for_judging, fmt_score, out_console
from assay.models import JUDGE_FORMS
from assay.run._bench import BENCH_SETS, BenchCell, BenchResult, BenchSet, bench_judges, dev_note
from assay.run._cost import PriceTable

__all__ = ["bench", "judges_app"]

judges_app = typer.Typer(help="Compare judges on labelled data that ships with assay.", no_args_is_help=True)


def _ci(value: float, ci: tuple[float, float]) -> str:
    lo, hi = ci
    if math.isnan(value):
        return "—"
    return f"{fmt_score(value)} [{fmt_score(lo)}-{fmt_score(hi)}]"


def _rows(cell: BenchCell) -> list[str]:
    """The figures of one column, in the order of :data:`_ROWS` (an error fills the first row)."""
    a = cell.agreement
    if a is None:
        return [f"error: {printable(cell.error or '', breaks=False)}", *([""] * (len(_ROWS) - 1))]
    tpr, tnr = a.per_class[1].recall, a.per_class[0].recall
    usage = cell.cost.usage
    return [
        _ci(a.balanced_accuracy, a.balanced_accuracy_ci),
        f"{a.n} of {a.n + cell.unscored}",
        fmt_score(tpr),
        fmt_score(tnr),
        str(cell.cost.calls) + (f" ({cell.cost.failed_calls} failed)" if cell.cost.failed_calls else ""),
        f"{usage.prompt_tokens:,} in / {usage.completion_tokens:,} out",
        printable(cell.cost.brief(cell.judge)),
        f"{cell.seconds:.1f}",
        cell.run_id or "",
    ]


_ROWS = (
    "balanced accuracy [95% CI]",
    "n (scored of judged)",
    "TPR (label 1 judged 1)",
    "TNR (label 0 judged 0)",
    "calls",
    "tokens",
    "cost",
    "seconds",
    "stored as run",
)


def _licences(bench_set: BenchSet) -> str:
    return "; ".join(f"{printable(source)}: {printable(licence)}" for source, licence in bench_set.licences.items())


def print_bench(result: BenchResult) -> None:
    """One table per set, a column per judge, with the set's task, labels and licences above it."""
    limit = f", first {result.limit} items of each set" if result.limit is not None else ""
    out_console.print(f"[bold]judges bench[/bold]: {len(result.judges)} judge(s) on the same items{limit}")
    out_console.print(f"note: {printable(dev_note())}")
    for bench_set in result.sets:
        out_console.print()
        out_console.print(
            f"[bold]{bench_set.name}[/bold] ({bench_set.items} items, balanced): {printable(bench_set.task)}"
        )
        judged = bench_set.items if result.limit is None else min(result.limit, bench_set.items)
        cut = (
            f" (--limit {result.limit}: a partial calibration, stored and shown as partial)"
            if judged < bench_set.items
            else ""
        )
        out_console.print(f"  judged {judged} of {bench_set.items} items{cut}")
        out_console.print(f"  labels: {printable(bench_set.labels)}")
        out_console.print(f"  licence: {_licences(bench_set)}")
        table = Table(title_justify="left")
        table.add_column("", no_wrap=True)
        for judge in result.judges:
            table.add_column(printable(judge, breaks=False), justify="right")
        columns = [_rows(result.cell(judge, bench_set.name)) for judge in result.judges]
        for i, label in enumerate(_ROWS):
            table.add_row(label, *(column[i] for column in columns))
        out_console.print(table)
        for judge in result.judges:
            cost = result.cell(judge, bench_set.name).cost
            if cost.calls and cost.describe() != cost.brief(judge):
                out_console.print(f"  cost of {printable(judge)}: {printable(cost.describe())}")
    out_console.print(
        "seconds: wall time of the judging, after the local model is loaded and the items' model-free steps "
        "are done once for all judges; a judge's own start-up (an SDK's first import) is in its first set's"
    )


def bench(
    judge: Annotated[
        list[str],
        typer.Option("--judge", "-j", help=f"A judge to compare (repeat for several): {JUDGE_FORMS}."),
    ],
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="Server URL for openai: judges.")
    ] = None,
    set_names: Annotated[
        list[str] | None,
        typer.Option("--set", help=f"A set to run (repeat for several; default all: {', '.join(BENCH_SETS)})."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Judge only the first N items of each set (still balanced).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap confidence intervals.")] = 0,
    store_path: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    prices: Annotated[
        Path | None, typer.Option(envvar="ASSAY_PRICES", help="JSON of token prices (see 'assay run --help').")
    ] = None,
) -> None:
    """Run judges on the same labelled public items and print their agreement side by side.

    Each judge on each set is stored as a calibration run. Exit codes: 0 every judge gave
    figures on every set; 1 could not run, or a judge failed (its error is printed).
    """

    def starting(name: str, bench_set: BenchSet) -> None:
        err_console.print(f"[bold]{printable(name)}[/bold] on {bench_set.name}")

    with exits_for_judging():
        result = bench_judges(
            judge,
            sets=set_names,
            base_url=base_url,
            limit=limit,
            seed=seed,
            store=store_path,
            prices=PriceTable.load(prices),
            progress="auto",
            on_start=starting,
        )
    print_bench(result)
    for name, error in result.failed.items():
        err_console.print(
            f"[red]judge {printable(name)} failed[/red]: {printable(error, breaks=False)}", soft_wrap=True
        )
    raise typer.Exit(EXIT_USAGE if result.failed else EXIT_OK)


judges_app.command("bench")(bench)
