"""``assay browse``: every run in the store on one page, each run's report beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay._safety import printable
from assay.cli._console import EXIT_OK, EXIT_USAGE, err_console, out_console
from assay.errors import AssayError, counted
from assay.report import DEFAULT_THRESHOLD, write_browser
from assay.run._cost import PriceTable

__all__ = ["browse"]


def browse(
    out: Annotated[Path, typer.Option("--out", "-o", help="The folder to write (index.html, runs/).")] = Path(
        "assay-runs"
    ),
    store: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    threshold: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help=f"The pass mark (default: assay gate's, {DEFAULT_THRESHOLD:g})."),
    ] = None,
    prices: Annotated[
        Path | None, typer.Option(envvar="ASSAY_PRICES", help="JSON price table overriding the built-in one.")
    ] = None,
) -> None:
    """Write a browser of every run: one page over all of them, and each run's report.

    The page lists every run (date, data, judge, samples, mean and CI per metric), links
    to each run's report and each sample, and compares any two runs side by side with both
    answers and their verdicts. The folder works offline and as a CI artifact: open
    OUT/index.html.
    """
    if not store.exists():
        out_console.print(f"no runs yet: {printable(str(store))} does not exist ('assay run DATA' creates it)")
        raise typer.Exit(EXIT_OK)
    try:
        data = write_browser(store, out, threshold=threshold, prices=PriceTable.load(prices))
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as exc:
        err_console.print(f"[red]error:[/red] cannot write {printable(str(out))}: {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    index = out / "index.html"
    out_console.print(
        f"wrote {printable(str(index))}: {counted(len(data.runs), 'run')}, "
        f"each report in {printable(str(out / 'runs'))}/"
    )
