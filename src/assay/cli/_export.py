"""``assay export``: a stored run's scores into the user's traces (OTLP, Langfuse); nothing judged again."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay._safety import printable
from assay.cli._console import EXIT_OK, EXIT_USAGE, err_console, out_console
from assay.errors import AssayError, ConfigError, ExportError

__all__ = ["export"]


def _thresholds(items: list[str], default_min: float | None) -> dict[str, float]:
    from assay.cli._gate import parse_gated_metrics

    bare = [item for item in items if not any(sep in item for sep in (">=", "=", ":"))]
    if bare and default_min is None:
        raise ConfigError(f"--metric {bare[0]} gives no threshold; write {bare[0]}=MIN, or give --min")
    return dict(parse_gated_metrics(items, default_min if default_min is not None else 0.0))


def export(
    run_id: Annotated[str | None, typer.Argument(help="The run to export (see 'assay runs list').")] = None,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="otlp: EVALUATOR spans and gen_ai.evaluation.result events to the endpoint the OTEL_EXPORTER_OTLP_* "
            "variables name; phoenix: those spans, then Phoenix span annotations; langfuse: scores through the "
            "Langfuse SDK (LANGFUSE_* variables).",
        ),
    ] = "otlp",
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="A pass mark for the pass/fail label, NAME=MIN (repeatable); a metric without one is sent unlabelled.",
        ),
    ] = None,
    min_mark: Annotated[
        float | None, typer.Option("--min", help="The pass mark of every metric named by -m NAME without one.")
    ] = None,
    store: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    latest: Annotated[bool, typer.Option("--latest", help="Export the run written last (instead of RUN_ID).")] = False,
) -> None:
    """Write a stored run's scores into your traces: per row and metric, on the span it judged."""
    from assay.integrations.traces import DESTINATIONS, ExportReport, export_run
    from assay.run import RunStore

    if (run_id is None) == (not latest):
        err_console.print("[red]error:[/red] give the RUN_ID to export, or --latest, not both (see 'assay runs list')")
        raise typer.Exit(EXIT_USAGE)
    if not store.exists():
        err_console.print(f"[red]error:[/red] no run store at {printable(store)}; 'assay run' creates one")
        raise typer.Exit(EXIT_USAGE)
    try:
        if to not in DESTINATIONS:
            raise ConfigError(f"--to {to!r}: use one of {', '.join(DESTINATIONS)}")
        thresholds = _thresholds(metric or [], min_mark)
        with RunStore(store) as runs:
            chosen = runs.latest() if run_id is None else run_id
            report = export_run(runs, chosen, to, thresholds=thresholds)
    except ExportError as exc:
        lines = exc.report.lines() if isinstance(exc.report, ExportReport) else [str(exc)]
        for line in lines:
            err_console.print(printable(line), soft_wrap=True)
        err_console.print("[red]error:[/red] the export stopped part-way (see above)")
        raise typer.Exit(EXIT_USAGE) from None
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}", soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from None
    for line in report.lines():
        out_console.print(printable(line), soft_wrap=True)
    raise typer.Exit(EXIT_OK)
