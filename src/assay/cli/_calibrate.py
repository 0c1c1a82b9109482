"""``assay calibrate``: parses options, calls :func:`assay.run.calibrate` and prints the figures."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from assay._safety import printable
from assay.analysis._agreement import Agreement
from assay.cli._console import (
    EXIT_BAD_ROWS,
    EXIT_OK,
    EXIT_UNSCORED,
    err_console,
    exits_for_judging,
    fmt_score,
    out_console,
)
from assay.cli._envvars import base_url_for
from assay.errors import SampleError
from assay.models import JUDGE_FORMS
from assay.run._calibrate import CalibrationOutcome
from assay.run._calibrate import calibrate as run_calibration

__all__ = ["calibrate"]


def _fmt_ci(value: float, ci: tuple[float, float] | list[float | None]) -> str:
    lo, hi = (math.nan if v is None else v for v in ci)
    return f"{fmt_score(value)} [{fmt_score(lo)}, {fmt_score(hi)}]"


def _print_report(
    overall: Agreement, by_source: dict[str, Agreement], outcomes: Sequence[CalibrationOutcome], n_show: int
) -> None:
    c = overall.confusion
    out_console.print(
        f"[bold]balanced accuracy[/bold] {_fmt_ci(overall.balanced_accuracy, overall.balanced_accuracy_ci)}  "
        f"[bold]Cohen's kappa[/bold] {_fmt_ci(overall.kappa, overall.kappa_ci)}  (n={overall.n}, 95% bootstrap CI)"
    )
    matrix = Table(title="confusion (rows: people, columns: judge)", title_justify="left")
    for column in ("", "judge 1", "judge 0"):
        matrix.add_column(column, justify="right")
    matrix.add_row("label 1", str(c.tp), str(c.fn))
    matrix.add_row("label 0", str(c.fp), str(c.tn))
    out_console.print(matrix)
    classes = Table(title="per class", title_justify="left")
    for column in ("class", "precision", "recall", "f1", "support"):
        classes.add_column(column, justify="right")
    for cls in (1, 0):
        s = overall.per_class[cls]
        classes.add_row(str(cls), fmt_score(s.precision), fmt_score(s.recall), fmt_score(s.f1), str(s.support))
    out_console.print(classes)
    sources = Table(title="per source", title_justify="left")
    for column in ("source", "n", "balanced acc.", "kappa", "TP", "FN", "FP", "TN"):
        sources.add_column(column, justify="right")
    for name, a in by_source.items():
        k = a.confusion
        sources.add_row(
            printable(name),
            str(a.n),
            _fmt_ci(a.balanced_accuracy, a.balanced_accuracy_ci),
            _fmt_ci(a.kappa, a.kappa_ci),
            *(str(v) for v in (k.tp, k.fn, k.fp, k.tn)),
        )
    out_console.print(sources)
    unscored = Counter(o.score.unscored_reason.value for o in outcomes if o.score.unscored_reason is not None)
    if unscored:
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(unscored.items()))
        out_console.print(f"[yellow]unscored {sum(unscored.values())}[/yellow] ({reasons}): left out of the figures")
    disagreements = [o for o in outcomes if o.disagrees]
    if disagreements and n_show > 0:
        table = Table(
            title=f"disagreements ({len(disagreements)}, showing {min(n_show, len(disagreements))})",
            title_justify="left",
            show_lines=True,
        )
        for column in ("id", "label", "judge", "P(supported)", "judge's reason"):
            table.add_column(column)
        for o in disagreements[:n_show]:
            p = "—" if o.probability is None else f"{o.probability:.2f}"
            table.add_row(printable(o.item.id, breaks=False), str(o.item.label), str(o.pred), p, printable(o.reason))
        out_console.print(table)


def calibrate(
    ctx: typer.Context,
    data: Annotated[Path, typer.Argument(help="JSONL of human-labelled grounding or grader items.")],
    judge: Annotated[
        str,
        typer.Option(
            "--judge",
            "-j",
            envvar="ASSAY_JUDGE",
            help=f"Judge: {JUDGE_FORMS}; an API judge with +logprobs or +samples:K is calibrated with that confidence.",
        ),
    ] = "local",
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="Server URL for openai: judges.")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Verifier: P(supported) at or above which a claim is supported."),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Judge only the first N valid items.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap confidence intervals.")] = 0,
    store_path: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    disagreements: Annotated[int, typer.Option(min=0, help="Show at most N disagreements.")] = 20,
) -> None:
    """Measure the judge against human labels: balanced accuracy, kappa, confusion, disagreements.

    Exit codes: 0 every row judged; 1 could not run (unreadable input, bad option);
    2 judged, but some input rows were invalid; 3 nothing was scored (every item's call
    failed or its answer could not be read): no agreement measured, nothing attached;
    130 interrupted (the items judged so far are stored).
    """

    def skipped(error: SampleError) -> None:
        err_console.print(f"[red]skipped[/red] {printable(str(error))}")

    with exits_for_judging():
        base_url = base_url_for(ctx, [judge], base_url)
        result = run_calibration(
            data,
            judge,
            base_url=base_url,
            threshold=threshold,
            limit=limit,
            seed=seed,
            store=store_path,
            progress="auto",
            on_error=skipped,
        )
    out_console.print(f"calibration of [bold]{printable(result.judge)}[/bold] on {printable(data)}")
    if result.partial:
        out_console.print(
            f"[yellow]partial[/yellow]: judged {len(result.outcomes)} of {result.items_total} items (--limit "
            f"{result.limit}); stored and shown as partial"
        )
    _print_report(result.overall, result.by_source, result.outcomes, disagreements)
    out_console.print(
        f"stored in {printable(store_path)} as run [bold]{result.run_id}[/bold] · 'assay runs show {result.run_id}'"
    )
    for metric in result.attached_to:
        options = " ".join(f"--set {metric}.{k}={v}" for k, v in result.attached_with.items())
        runs = f"with {options}" if options else "with its default settings"
        out_console.print(
            f"attached to {printable(metric)} with this judge: later runs of it {printable(runs)} show this "
            "agreement beside the score (runs set otherwise say which setting differs)",
            soft_wrap=True,
        )
    if result.outcomes and all(o.pred is None for o in result.outcomes):
        err_console.print(
            f"[red]nothing was scored[/red]: {len(result.outcomes)} of {len(result.outcomes)} items unscored, so no "
            "agreement was measured and none is attached to a metric; 'assay runs show "
            f"{result.run_id}' has each item's reason"
        )
        raise typer.Exit(EXIT_UNSCORED)
    raise typer.Exit(EXIT_BAD_ROWS if result.errors else EXIT_OK)
