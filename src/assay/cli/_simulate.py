"""``assay simulate``: how a gate's outcome scatters under a judge that flips verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from assay._safety import printable
from assay.analysis import Simulation, recommend_statements, recommend_threshold, simulate_gates, simulation_svg
from assay.cli._console import EXIT_USAGE, err_console, out_console
from assay.errors import check_threshold

__all__ = ["simulate"]

_BAR = 40


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--statements takes comma-separated counts like 3,10,20, got {text!r}") from None
    if not counts or any(n < 1 or n > 10_000 for n in counts):
        raise ValueError(f"--statements needs counts between 1 and 10000, got {text!r}")
    return counts


def _histogram(sim: Simulation) -> None:
    shares = [c / sim.runs for c in sim.counts]
    top = max(shares) or 1.0
    out_console.print(
        f"[bold]n = {sim.n_statements}[/bold]: P(pass) {sim.p_pass_simulated:.4f} simulated "
        f"(± {sim.standard_error:.4f}), {sim.p_pass_exact:.4f} exact · pass needs >= {sim.min_passing} supported"
    )
    # Many statements: show only the scores that carry mass, so the histogram stays readable.
    shown = [k for k, s in enumerate(shares) if s > 0 or sim.exact[k] >= 1e-4] or [0]
    for k in range(min(shown), max(shown) + 1):
        colour = "green" if k >= sim.min_passing else "red"
        bar = "█" * round(_BAR * shares[k] / top)
        marker = " ◀ threshold" if k == sim.min_passing else ""
        out_console.print(
            f"  {k / sim.n_statements:5.3f} │[{colour}]{bar:<{_BAR}}[/{colour}]│ {shares[k]:7.4f} "
            f"(exact {sim.exact[k]:.4f}){marker}",
            highlight=False,
        )


def simulate(
    statements: Annotated[
        str, typer.Option("--statements", "-n", help="Statement counts to compare, comma-separated.")
    ] = "3,10,20",
    flip_rate: Annotated[
        float, typer.Option("--flip-rate", min=0.0, max=1.0, help="P(the judge flips a verdict).")
    ] = 0.1,
    threshold: Annotated[float, typer.Option("--threshold", help="The gate: score >= T.")] = 0.8,
    true_rate: Annotated[
        float, typer.Option("--true-rate", min=0.0, max=1.0, help="P(a statement is truly supported).")
    ] = 0.9,
    runs: Annotated[int, typer.Option("--runs", min=1, max=10_000_000, help="Simulated runs per count.")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed (count i uses seed + i).")] = 0,
    max_flake: Annotated[
        float, typer.Option("--max-flake", min=0.0, max=0.5, help="Flake target for the verdict and advice.")
    ] = 0.01,
    svg: Annotated[Path | None, typer.Option("--svg", help="Also write the histograms to this SVG file.")] = None,
) -> None:
    """Simulate a noisy judge: score distribution and gate flake probability per statement count.

    Each statement is truly supported with probability --true-rate; the judge flips each
    verdict with probability --flip-rate. The closed form (binomial with q = p(1-ε) +
    (1-p)ε) is shown next to the seeded simulation.

    Exit codes: 0 done; 1 usage error (a bad option value, --statements, --threshold) or
    an unwritable --svg.
    """
    try:
        counts = _counts(statements)
        threshold = check_threshold(threshold, "--threshold")  # as every door checks its pass mark
    except ValueError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    sims = simulate_gates(counts, flip_rate=flip_rate, threshold=threshold, true_rate=true_rate, runs=runs, seed=seed)
    q = sims[0].q
    table = Table(
        title=(
            f"noisy judge · true rate {true_rate:g} · flip rate {flip_rate:g} (judge says 1 with q = {q:.3f}) · "
            f"gate score >= {threshold:g} · {runs:,} runs, seed {seed}"
        ),
        title_justify="left",
    )
    for column in ("statements", "P(pass) exact", "P(pass) simulated", "± s.e.", "flake exact", "flake simulated"):
        table.add_column(column, justify="right")
    table.add_column(f"at flake <= {max_flake:g}")
    table.add_column("highest stable-pass threshold", justify="right")
    for sim in sims:
        best = recommend_threshold(sim.n_statements, true_rate, flip_rate, target=max_flake)
        table.add_row(
            str(sim.n_statements),
            f"{sim.p_pass_exact:.4f}",
            f"{sim.p_pass_simulated:.4f}",
            f"{sim.standard_error:.4f}",
            f"{sim.flake_exact:.4f}",
            f"{sim.flake_simulated:.4f}",
            sim.stability(max_flake).replace("_", " "),
            "—" if best is None else f"{best:.2f}",
        )
    out_console.print(table)
    for sim in sims:
        _histogram(sim)
    (row,) = recommend_statements(true_rate, flip_rate, (threshold,), target=max_flake)
    if row.n_statements is None:
        out_console.print(
            f"recommendation: no statement count up to 200 makes a {threshold:g} gate stable at flake <= "
            f"{max_flake:g} (q = {q:.3f} is too close to the threshold): move the threshold away from q",
            soft_wrap=True,
        )
    else:
        out_console.print(
            f"recommendation: from {row.n_statements} statements on, a {threshold:g} gate is a "
            f"{row.stability.replace('_', ' ')} at flake <= {max_flake:g} (P(pass) {row.p_pass:.4f} there)",
            soft_wrap=True,
        )
    if svg is not None:
        try:
            svg.write_text(simulation_svg(sims), encoding="utf-8")
        except OSError as exc:
            err_console.print(f"[red]error:[/red] cannot write {printable(str(svg))}: {printable(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
        out_console.print(f"wrote {printable(str(svg))}")
