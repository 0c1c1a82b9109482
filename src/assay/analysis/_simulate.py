"""A noisy-judge simulator: how a gate's outcome scatters when the judge flips verdicts.

Model (the binomial model of ``docs/design/variance.md``): an answer has n statements,
each truly supported with probability p (``true_rate``); the judge reports each truly
supported statement as 1 with probability 1 - ε and each unsupported one as 1 with
probability ε (``flip_rate``), independently. The score is (reported 1s) / n and the gate
passes when score >= t. The closed form: reported 1s ~ Binomial(n, q), q = p(1-ε) + (1-p)ε.

The simulation draws both stages (truth, then flips) with a seeded generator, so it also
checks the closed form. :func:`simulation_svg` renders the histograms as a hand-written SVG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np

from assay.analysis._gates import Stability, classify, flake_probability, min_passing, observed_rate

__all__ = ["Simulation", "simulate_gate", "simulate_gates", "simulation_svg"]


@dataclass(frozen=True)
class Simulation:
    """Simulated and exact score distributions of one statement count.

    Attributes:
        n_statements: n.
        true_rate: p.
        flip_rate: ε.
        threshold: t.
        runs: Simulated runs.
        seed: The seed of this simulation's generator.
        counts: ``counts[k]`` = simulated runs with k statements reported supported.
        exact: ``exact[k]`` = Binomial(n, q) probability of k.
    """

    n_statements: int
    true_rate: float
    flip_rate: float
    threshold: float
    runs: int
    seed: int
    counts: tuple[int, ...]
    exact: tuple[float, ...]

    @property
    def q(self) -> float:
        """The rate at which the judge reports 1: p(1-ε) + (1-p)ε."""
        return observed_rate(self.true_rate, self.flip_rate)

    @property
    def min_passing(self) -> int:
        """The fewest reported-supported statements that pass: ceil(t·n)."""
        return min_passing(self.n_statements, self.threshold)

    @property
    def p_pass_simulated(self) -> float:
        """Share of simulated runs that pass."""
        return sum(self.counts[self.min_passing :]) / self.runs

    @property
    def p_pass_exact(self) -> float:
        """The binomial closed form of P(pass)."""
        return min(1.0, math.fsum(self.exact[self.min_passing :]))

    @property
    def standard_error(self) -> float:
        """Monte-Carlo standard error of ``p_pass_simulated``: sqrt(P(1-P)/runs) at the exact P."""
        p = self.p_pass_exact
        return math.sqrt(p * (1 - p) / self.runs)

    @property
    def flake_simulated(self) -> float:
        """min(P, 1-P) of the simulated P(pass)."""
        return flake_probability(self.p_pass_simulated)

    @property
    def flake_exact(self) -> float:
        """min(P, 1-P) of the exact P(pass)."""
        return flake_probability(self.p_pass_exact)

    def stability(self, target: float = 0.01) -> Stability:
        """Stable pass / stable fail / flaky, from the exact P(pass)."""
        return classify(self.p_pass_exact, target)


def simulate_gate(
    n_statements: int,
    *,
    flip_rate: float,
    threshold: float,
    true_rate: float = 0.9,
    runs: int = 10_000,
    seed: int = 0,
) -> Simulation:
    """Simulate ``runs`` judgements of an n-statement answer (seeded; see the module docstring)."""
    if n_statements < 1:
        raise ValueError(f"the statement count must be at least 1, got {n_statements}")
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    for name, value in (("flip_rate", flip_rate), ("threshold", threshold), ("true_rate", true_rate)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    rng = np.random.default_rng(seed)
    counts = np.zeros(n_statements + 1, dtype=np.int64)
    for start in range(0, runs, 10_000):
        size = min(runs, start + 10_000) - start
        truth = rng.random((size, n_statements)) < true_rate
        flips = rng.random((size, n_statements)) < flip_rate
        counts += np.bincount((truth ^ flips).sum(axis=1), minlength=n_statements + 1)
    q = observed_rate(true_rate, flip_rate)
    exact = tuple(math.comb(n_statements, k) * q**k * (1 - q) ** (n_statements - k) for k in range(n_statements + 1))
    return Simulation(
        n_statements=n_statements,
        true_rate=true_rate,
        flip_rate=flip_rate,
        threshold=threshold,
        runs=runs,
        seed=seed,
        counts=tuple(int(c) for c in counts),
        exact=exact,
    )


def simulate_gates(
    statement_counts: Sequence[int],
    *,
    flip_rate: float,
    threshold: float,
    true_rate: float = 0.9,
    runs: int = 10_000,
    seed: int = 0,
) -> tuple[Simulation, ...]:
    """:func:`simulate_gate` for each statement count; the i-th uses seed ``seed + i``."""
    return tuple(
        simulate_gate(n, flip_rate=flip_rate, threshold=threshold, true_rate=true_rate, runs=runs, seed=seed + i)
        for i, n in enumerate(statement_counts)
    )


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x == x else "nan"


def simulation_svg(simulations: Sequence[Simulation], *, title: str | None = None) -> str:
    """An SVG document: one histogram panel per statement count.

    Each panel plots the simulated share of runs at each score k/n (bars; green at or
    above the threshold, red below), the exact binomial probabilities (dots), the
    threshold (a dashed line), and P(pass) simulated and exact in its title.
    """
    panel_w, panel_h, margin = 340, 240, 36
    cols = max(1, min(3, len(simulations)))
    rows = max(1, math.ceil(len(simulations) / cols))
    header = 30
    width, height = cols * panel_w, header + rows * panel_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    if simulations:
        first = simulations[0]
        heading = title or (
            f"Noisy judge: flip rate {_fmt(first.flip_rate)}, true rate {_fmt(first.true_rate)}, "
            f"threshold {_fmt(first.threshold)}, {first.runs:,} runs"
        )
        out.append(f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(heading)}</text>')
    for index, sim in enumerate(simulations):
        x0 = (index % cols) * panel_w
        y0 = header + (index // cols) * panel_h
        plot_x, plot_y = x0 + margin, y0 + 28
        plot_w, plot_h = panel_w - margin - 12, panel_h - 28 - 30
        shares = [c / sim.runs for c in sim.counts]
        top = max([*shares, *sim.exact, 1e-12])
        label = f"n = {sim.n_statements}: P(pass) = {sim.p_pass_simulated:.3f} simulated, {sim.p_pass_exact:.3f} exact"
        out.append(f'<g id="panel-{sim.n_statements}">')
        out.append(f'<text x="{x0 + 8}" y="{y0 + 16}" font-weight="bold">{escape(label)}</text>')
        out.append(
            f'<line x1="{plot_x}" y1="{plot_y + plot_h}" x2="{plot_x + plot_w}" y2="{plot_y + plot_h}" stroke="black"/>'
        )
        out.append(f'<line x1="{plot_x}" y1="{plot_y}" x2="{plot_x}" y2="{plot_y + plot_h}" stroke="black"/>')
        out.append(f'<text x="{plot_x - 4}" y="{plot_y + 4}" text-anchor="end">{top:.2f}</text>')
        out.append(f'<text x="{plot_x - 4}" y="{plot_y + plot_h}" text-anchor="end">0</text>')
        slot = plot_w / (sim.n_statements + 1)
        for k, share in enumerate(shares):
            bar_h = plot_h * share / top
            bx = plot_x + k * slot
            colour = "#2e7d32" if k >= sim.min_passing else "#c62828"
            out.append(
                f'<rect x="{bx + slot * 0.1:.2f}" y="{plot_y + plot_h - bar_h:.2f}" width="{slot * 0.8:.2f}" '
                f'height="{bar_h:.2f}" fill="{colour}" fill-opacity="0.75"><title>score {k}/{sim.n_statements}: '
                f"{share:.4f} simulated, {sim.exact[k]:.4f} exact</title></rect>"
            )
            dot_y = plot_y + plot_h - plot_h * sim.exact[k] / top
            out.append(f'<circle cx="{bx + slot / 2:.2f}" cy="{dot_y:.2f}" r="2" fill="black"/>')
        ticks = sorted({0, sim.n_statements, sim.min_passing} - {sim.n_statements + 1})
        for k in ticks:
            tx = plot_x + k * slot + slot / 2
            out.append(
                f'<text x="{tx:.2f}" y="{plot_y + plot_h + 14}" text-anchor="middle">'
                f"{_fmt(k / sim.n_statements)}</text>"
            )
        line_x = plot_x + (sim.threshold * sim.n_statements) * slot + slot / 2
        line_x = min(max(line_x, plot_x), plot_x + plot_w)
        out.append(
            f'<line x1="{line_x:.2f}" y1="{plot_y - 4}" x2="{line_x:.2f}" y2="{plot_y + plot_h}" '
            'stroke="#1565c0" stroke-width="1.5" stroke-dasharray="4 3"/>'
        )
        out.append(f'<text x="{line_x + 3:.2f}" y="{plot_y + 8}" fill="#1565c0">threshold {_fmt(sim.threshold)}</text>')
        out.append(
            f'<text x="{plot_x + plot_w / 2:.2f}" y="{plot_y + plot_h + 27}" text-anchor="middle" fill="#555">'
            "score (supported / statements)</text>"
        )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
