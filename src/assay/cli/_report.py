"""``assay report``: one self-contained HTML file for a stored run (optionally compared with another)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay._safety import printable
from assay.cli._console import EXIT_USAGE, err_console
from assay.errors import AssayError
from assay.report import write_report
from assay.run import RunStore
from assay.run._cost import PriceTable

__all__ = ["report"]


def report(
    run_id: Annotated[str | None, typer.Argument(help="The run to report (see 'assay runs list').")] = None,
    compare: Annotated[
        str | None, typer.Option("--compare", "-c", help="Another run to compare with (deltas: RUN minus it).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    threshold: Annotated[
        float, typer.Option(help="A sample passes a metric when its value is at least this; so does the gate's mean.")
    ] = 0.8,
    store: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    prices: Annotated[
        Path | None, typer.Option(envvar="ASSAY_PRICES", help="JSON price table overriding the built-in one.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap confidence intervals.")] = 0,
    latest: Annotated[
        bool, typer.Option("--latest", help="Report the newest run in the store (instead of RUN_ID).")
    ] = False,
) -> None:
    """Write RUN's report as one self-contained HTML file: summary with CIs, charts, samples, verdicts."""
    if run_id is not None and latest:
        err_console.print("[red]error:[/red] give a RUN_ID or --latest, not both")
        raise typer.Exit(EXIT_USAGE)
    if run_id is None and not latest:
        err_console.print("[red]error:[/red] give the RUN_ID to report, or --latest (see 'assay runs list')")
        raise typer.Exit(EXIT_USAGE)
    if not store.exists():
        err_console.print(f"[red]error:[/red] no run store at {printable(str(store))}; 'assay run' creates one")
        raise typer.Exit(EXIT_USAGE)
    try:
        with RunStore(store) as runs:
            if run_id is None:
                run_id = runs.latest()
                err_console.print(f"reporting the latest run in {printable(str(store))}: {printable(run_id)}")
            data = write_report(runs, run_id, out, compare, threshold, prices=PriceTable.load(prices), seed=seed)
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as exc:
        err_console.print(f"[red]error:[/red] cannot write {printable(str(out))}: {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    compared = f", compared with {compare}" if compare else ""
    err_console.print(
        f"wrote {printable(str(out))}: {len(data.samples)} samples, {len(data.metrics)} metrics{printable(compared)}"
    )
