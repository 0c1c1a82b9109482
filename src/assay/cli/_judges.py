"""``assay judges``: ``bench`` compares judges on labelled data; ``fake`` serves a fake judge on loopback.

``bench`` parses options, calls :func:`assay.run.bench_judges` and prints the judges side by
side. ``fake`` serves :class:`assay.testing.FakeOpenAIServer` (its word-rule answers,
:func:`assay.testing.word_overlap_answer`) until Ctrl-C, so a shell user can follow every
page of the docs without a key and without the local model.
"""

from __future__ import annotations

import errno
import math
import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from assay._safety import printable
from assay.cli._console import (
    EXIT_OK,
    EXIT_USAGE,
    ctrl_c_interrupts,
    err_console,
    exits_for_judging,
    fmt_score,
    out_console,
)
from assay.cli._envvars import base_url_for
from assay.models import JUDGE_FORMS
from assay.run._bench import BENCH_SETS, BenchCell, BenchResult, BenchSet, bench_judges, dev_note
from assay.run._cost import PriceTable

__all__ = ["bench", "fake", "judges_app"]

judges_app = typer.Typer(
    help="Compare judges on labelled data that ships with assay, or serve a fake one on loopback.",
    no_args_is_help=True,
)


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
    ctx: typer.Context,
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
        base_url = base_url_for(ctx, judge, base_url)
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


DEFAULT_FAKE_PORT = 8765
"""The port ``assay judges fake`` listens on unless told otherwise (the docs' commands use it)."""


def fake(
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0 picks a free one).")
    ] = DEFAULT_FAKE_PORT,
) -> None:
    """Serve a fake OpenAI-compatible judge on 127.0.0.1 until Ctrl-C: no key, no model, instant answers.

    It answers every prompt assay sends by a documented word rule (a statement is
    supported when each of its content words is a word of the context; a grader passes
    when the response says the criterion's words; ...; docs/guides/judges.md), so runs,
    reports and gates can be tried in seconds. Its verdicts measure nothing: it serves only
    the model 'fake-word-overlap' (any other model name gets a 404), so its runs say
    'openai:fake-word-overlap' everywhere and their trust line says 'not measured'.
    Exit codes: 0 stopped by Ctrl-C (or SIGTERM); 1 the port could not be bound.
    """
    from assay.testing import FAKE_JUDGE_MODEL, FakeOpenAIServer

    server = FakeOpenAIServer(only_model=FAKE_JUDGE_MODEL, port=port)
    try:
        server.start()
    except OSError as exc:
        taken = exc.errno == errno.EADDRINUSE
        why = "is in use" if taken else f"cannot be bound ({printable(str(exc), breaks=False)})"
        err_console.print(f"[red]error[/red]: port {port} on 127.0.0.1 {why}: pass --port N (0 picks a free port)")
        raise typer.Exit(EXIT_USAGE) from None
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    flags = f"--judge openai:{FAKE_JUDGE_MODEL} --base-url {server.base_url}"
    try:
        # Ctrl-C stops it from the first line it prints, even as a shell script's background job (SIGINT ignored)
        with ctrl_c_interrupts():
            out_console.print(f"fake judge (a word rule, not a model) serving on {server.base_url}", soft_wrap=True)
            out_console.print(f"use it with: {flags}", soft_wrap=True)
            out_console.print(f"  e.g. assay run examples/rag.jsonl -m faithfulness {flags}", soft_wrap=True)
            out_console.print(
                "a statement is supported when each of its content words is a word of the context; its scores "
                "test plumbing and measure nothing (docs/guides/judges.md). Ctrl-C stops it.",
                soft_wrap=True,
            )
            out_console.file.flush()
            while not stop.wait(0.2):
                pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
    err_console.print(f"fake judge stopped after {server.calls} request(s)")
    raise typer.Exit(EXIT_OK)


judges_app.command("fake")(fake)
