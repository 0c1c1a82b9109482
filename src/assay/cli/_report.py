"""``assay report``: one self-contained HTML file for a stored run (optionally compared with another)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from assay._safety import printable
from assay.analysis import GatePolicy
from assay.cli._console import EXIT_USAGE, err_console
from assay.cli._gate import parse_gated_metrics
from assay.errors import AssayError, ConfigError, check_threshold, counted
from assay.report import DEFAULT_THRESHOLD, write_report
from assay.run import RunStore
from assay.run._cost import PriceTable
from assay.run._review import waiting_for_review

__all__ = ["report"]


def report(
    run_id: Annotated[str | None, typer.Argument(help="The run to report (see 'assay runs list').")] = None,
    compare: Annotated[
        str | None, typer.Option("--compare", "-c", help="Another run to compare with (deltas: RUN minus it).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    threshold: Annotated[
        float | None,
        typer.Option(
            help=f"The pass mark: a sample passes a metric when its value is at least this; so does the gate's mean "
            f"(default: assay gate's, {DEFAULT_THRESHOLD:g}).",
        ),
    ] = None,
    store: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    prices: Annotated[
        Path | None, typer.Option(envvar="ASSAY_PRICES", help="JSON price table overriding the built-in one.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap confidence intervals.")] = 0,
    latest: Annotated[
        bool,
        typer.Option(
            "--latest", help="Report the run written last in the store (instead of RUN_ID): a resumed run counts."
        ),
    ] = False,
    gate: Annotated[
        bool,
        typer.Option(
            "--gate", help="Also apply 'assay gate' (the options below, --threshold as its --min); show its verdict."
        ),
    ] = False,
    gate_metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="With --gate: a metric to gate, NAME or NAME=MIN, as in 'assay gate' (repeatable; default "
            "faithfulness).",
        ),
    ] = None,
    per_sample: Annotated[bool | None, typer.Option("--per-sample", help="With --gate: gate every sample.")] = None,
    strict: Annotated[
        bool | None, typer.Option("--strict", help="With --gate: any unsupported statement fails its sample.")
    ] = None,
    min_statements: Annotated[
        int | None, typer.Option(min=0, help="With --gate: a sample with fewer statements fails.")
    ] = None,
    max_flake: Annotated[
        float | None, typer.Option(min=0.0, max=0.5, help="With --gate: highest tolerated flake probability.")
    ] = None,
    max_unscored: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="With --gate: highest tolerated share of unscored results.")
    ] = None,
    flip_rate: Annotated[
        float | None, typer.Option(min=0.0, max=0.5, help="With --gate: judge flip rate for the binomial model.")
    ] = None,
    allow_partial: Annotated[
        bool | None,
        typer.Option(
            "--allow-partial", help="With --gate: gate a run that is not finished on the rows it judged, as assay gate."
        ),
    ] = None,
    max_invalid_rows: Annotated[
        int | None,
        typer.Option(min=0, metavar="N", help="With --gate: most invalid input rows a gated run may have (default 0)."),
    ] = None,
) -> None:
    """Write RUN's report as one self-contained HTML file: summary with CIs, charts, samples, verdicts.

    The pass mark is assay gate's (--threshold, default 0.8); with --gate the header also
    shows the gate's own verdict on the run, with the same options as 'assay gate'. A run
    that is not finished, or has invalid input rows, is headed by a banner saying how
    many rows were never judged and that assay gate does not pass it.
    """
    given: dict[str, Any] = {
        "per_sample": per_sample,
        "strict": strict,
        "min_statements": min_statements,
        "max_flake": max_flake,
        "max_unscored": max_unscored,
        "flip_rate": flip_rate,
        "allow_partial": allow_partial,
        "max_invalid_rows": max_invalid_rows,
    }
    given = {name: value for name, value in given.items() if value is not None}
    if threshold is not None:
        try:
            threshold = check_threshold(threshold, "--threshold")  # as every door checks its pass mark
        except ConfigError as exc:
            err_console.print(f"[red]error:[/red] {printable(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
    if given and not gate:
        names = ", ".join("--" + name.replace("_", "-") for name in given)
        err_console.print(f"[red]error:[/red] {names} only apply with --gate")
        raise typer.Exit(EXIT_USAGE)
    if gate_metric and not gate:
        err_console.print("[red]error:[/red] --metric only applies with --gate")
        raise typer.Exit(EXIT_USAGE)
    policy = (
        GatePolicy(threshold=DEFAULT_THRESHOLD if threshold is None else threshold, seed=seed, **given)
        if gate
        else None
    )
    try:
        gated = parse_gated_metrics(gate_metric or ["faithfulness"], policy.threshold if policy else DEFAULT_THRESHOLD)
    except ConfigError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
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
            data = write_report(
                runs,
                run_id,
                out,
                compare,
                threshold,
                prices=PriceTable.load(prices),
                seed=seed,
                gate=policy,
                gate_metric=gated,
            )
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    except OSError as exc:
        err_console.print(f"[red]error:[/red] cannot write {printable(str(out))}: {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    if data.caveats:
        err_console.print(
            f"[bold yellow]warning[/bold yellow]: the runs differ in more than the system judged, so Δ does not "
            f"measure it alone: {printable('; '.join(data.caveats))}",
            soft_wrap=True,
        )
    compared = f", compared with {compare}" if compare else ""
    if len(data.gate_results) == 1:
        verdict = f", gate {data.gate_results[0].outcome}"
    else:
        verdict = "".join(f", gate {g.metric} {g.outcome}" for g in data.gate_results)
    err_console.print(
        f"wrote {printable(str(out))}: {counted(len(data.samples), 'sample')}, {counted(len(data.metrics), 'metric')}"
        f"{printable(compared)}{verdict}"
    )
    if data.pending:
        err_console.print(
            f"[bold yellow]{waiting_for_review(len(data.pending))}[/bold yellow] (their samples are "
            f"unscored needs_review, in no mean): answer them on the page or with 'assay review "
            f"{printable(data.info.run_id, breaks=False)}'",
            soft_wrap=True,
        )
