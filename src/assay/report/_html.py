"""Rendering :class:`~assay.report._build.ReportData` as one self-contained HTML page.

Jinja2 with autoescape renders everything known at build time (spec, summaries, SVG
charts); the per-sample data travels as JSON in ``<script type="application/json">``
(see :func:`~assay.report._build.embed_json`) and the page's own script draws the table
and the sample view from it with ``textContent``/``createElement`` only. The CSS and the
script are read from package files and inlined: the page loads nothing, and its
Content-Security-Policy forbids it to.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from functools import cache
from importlib import resources

import jinja2
from markupsafe import Markup

from assay._version import __version__
from assay.report._browse import BrowserData, browser_json, shown_date
from assay.report._build import Histogram, ReportData, Spread, embed_json
from assay.report._header import RAW_SPEC_LABEL, gate_line, raw_spec, run_settings

__all__ = ["CSP", "render_browser", "render_html"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""The page's Content-Security-Policy: inline style and script only, no network at all."""

_HIST_W, _HIST_H, _PAD = 320.0, 110.0, 4.0


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("assay.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["score"] = _fmt_score
    env.filters["signed"] = _fmt_signed
    return env


@cache
def _asset(name: str) -> Markup:
    # Our own static files, inlined verbatim (they are code, not data).
    return Markup(resources.files("assay.report").joinpath("templates", name).read_text(encoding="utf-8"))


def _fmt_score(value: float | None, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.{digits}f}"


def _fmt_signed(value: float | None, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:+.{digits}f}"


def _histogram_bars(hist: Histogram, threshold: float) -> dict[str, object]:
    """SVG geometry of a histogram: bars with their counts, and the threshold's x."""
    tallest = max(hist.counts)
    peak = tallest or 1  # the bars' scale; an empty histogram draws no bar
    width = (_HIST_W - 2 * _PAD) / len(hist.counts)
    bars: list[dict[str, object]] = []
    for (left, right), count in zip(hist.edges, hist.counts, strict=True):
        height = (_HIST_H - 2 * _PAD) * count / peak
        bars.append(
            {
                "x": round(_PAD + len(bars) * width + 0.5, 2),
                "y": round(_HIST_H - _PAD - height, 2),
                "w": round(width - 1, 2),
                "h": round(height, 2),
                "label": f"[{left:.2f}, {right:.2f}{']' if len(bars) == len(hist.counts) - 1 else ')'}: {count}",
            }
        )
    span = hist.high - hist.low
    x = _PAD + (_HIST_W - 2 * _PAD) * (threshold - hist.low) / span if span else _PAD
    return {
        "w": _HIST_W,
        "h": _HIST_H,
        "bars": bars,
        "threshold_x": round(min(max(x, _PAD), _HIST_W - _PAD), 2),
        "low": hist.low,
        "high": hist.high,
        "peak": tallest,
    }


def _spread_paths(spreads: tuple[Spread, ...], threshold: float) -> dict[str, object] | None:
    """SVG paths of per-sample min–max ranges (sorted by mean) and of the means."""
    if not spreads:
        return None
    low = min(0.0, min(s.low for s in spreads))
    high = max(1.0, max(s.high for s in spreads))
    w, h = 640.0, 140.0
    step = (w - 2 * _PAD) / max(1, len(spreads))

    def y(v: float) -> float:
        return round(h - _PAD - (h - 2 * _PAD) * (v - low) / (high - low), 2)

    ranges = []
    means = []
    for i, s in enumerate(spreads):
        x = round(_PAD + (i + 0.5) * step, 2)
        top, bottom = y(s.high), y(s.low)
        if bottom - top < 1:
            bottom = top + 1
        ranges.append(f"M{x} {top}V{bottom}")
        means.append(f"M{round(x - max(step / 2, 1), 2)} {y(s.mean)}h{round(max(step, 2), 2)}")
    return {
        "w": w,
        "h": h,
        "ranges": "".join(ranges),
        "means": "".join(means),
        "threshold_y": y(threshold) if low <= threshold <= high else None,
        "n_varying": sum(1 for s in spreads if s.high > s.low),
        "n": len(spreads),
    }


def render_html(report: ReportData, *, title: str | None = None, back_link: str | None = None) -> str:
    """The report as one HTML document (a string).

    ``back_link``: a relative link to the run browser's index (``../index.html``), shown
    in the header when the report is one of ``assay browse``'s.
    """
    template = _environment().get_template("report.html.j2")
    return template.render(
        r=report,
        back_link=back_link,
        title=title or f"assay report · {report.info.run_id}",
        csp=CSP,
        css=_asset("report.css"),
        js=_asset("dom.js") + _asset("report.js"),
        data_json=Markup(embed_json(report.page_data())),
        histograms={m.name: _histogram_bars(m.histogram, report.threshold) for m in report.metrics},
        spreads={m.name: _spread_paths(m.spreads, report.threshold) for m in report.metrics},
        settings=run_settings(report.info.spec, report.repeats),
        raw_spec=raw_spec(report.info.spec),
        raw_spec_label=RAW_SPEC_LABEL,
        gate_lines=[(g, gate_line(g)) for g in report.gate_results],
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        assay_version=__version__,
    )


def render_browser(data: BrowserData) -> str:
    """The run browser's index (``assay browse``) as one HTML document."""
    template = _environment().get_template("browser.html.j2")
    return template.render(
        b=data,
        csp=CSP,
        css=_asset("report.css"),
        js=_asset("dom.js") + _asset("browser.js"),
        data_json=Markup(browser_json(data)),
        shown_date=shown_date,
        assay_version=__version__,
    )
