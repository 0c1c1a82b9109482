"""HTML reports of stored runs: one self-contained file, no network.

```python
from assay.report import write_report
from assay.run import RunStore

with RunStore() as store:
    write_report(store, "20250101-120000-ab12", "report.html", compare="20241231-090000-cd34")
```

The page shows the run's spec, per-metric means with bootstrap CIs, unscored counts by
reason, tokens and cost; score histograms (and with repeats, per-sample spread and the
gate's flake probability); a sortable, filterable sample table whose rows open the
answer with each statement coloured by its verdict, the contexts and the raw judge
exchange; and, with ``compare``, per-sample deltas, flips and paired metric deltas.
See ``docs/design/report.md``.
"""

from __future__ import annotations

from pathlib import Path

from assay.report._build import (
    CompareMetric,
    CostView,
    Gate,
    Histogram,
    Interval,
    MetricView,
    ReportData,
    Spread,
    build_report,
    embed_json,
    locate_statements,
    pass_share,
    spread,
)
from assay.report._html import CSP, render_html
from assay.report._markdown import gate_summary_markdown, md_text
from assay.run import RunStore
from assay.run._cost import PriceTable

__all__ = [
    "CSP",
    "CompareMetric",
    "CostView",
    "Gate",
    "Histogram",
    "Interval",
    "MetricView",
    "ReportData",
    "Spread",
    "build_report",
    "embed_json",
    "gate_summary_markdown",
    "load_report",
    "locate_statements",
    "md_text",
    "pass_share",
    "render_html",
    "render_report",
    "spread",
    "write_report",
]


def load_report(
    store: RunStore | str | Path,
    run_id: str,
    compare: str | None = None,
    threshold: float = 0.8,
    *,
    prices: PriceTable | None = None,
    seed: int = 0,
) -> ReportData:
    """Read ``run_id`` (and ``compare``) from ``store`` and compute the report's data.

    Raises:
        StoreError: a run is not in the store.
    """
    if not isinstance(store, RunStore):
        with RunStore(store) as opened:
            return load_report(opened, run_id, compare, threshold, prices=prices, seed=seed)
    info = store.info(run_id)
    other = store.info(compare) if compare is not None else None
    return build_report(
        info,
        store.records(run_id),
        row_errors=store.row_errors(run_id),
        other=other,
        other_records=store.records(compare) if compare is not None else (),
        threshold=threshold,
        prices=prices,
        seed=seed,
    )


def render_report(
    store: RunStore | str | Path,
    run_id: str,
    compare: str | None = None,
    threshold: float = 0.8,
    *,
    prices: PriceTable | None = None,
    seed: int = 0,
) -> str:
    """The report of ``run_id`` (compared with run ``compare``, if given) as an HTML string."""
    return render_html(load_report(store, run_id, compare, threshold, prices=prices, seed=seed))


def write_report(
    store: RunStore | str | Path,
    run_id: str,
    out: str | Path,
    compare: str | None = None,
    threshold: float = 0.8,
    *,
    prices: PriceTable | None = None,
    seed: int = 0,
) -> ReportData:
    """Write the report of ``run_id`` to ``out`` as one self-contained HTML file.

    Args:
        store: The run store (or its path).
        run_id: The run to report.
        out: The HTML file to write (its folder is created).
        compare: Another run to compare with; deltas are ``run_id`` minus ``compare``.
        threshold: A sample passes a metric when its value is at least this; the gate
            passes a repeat when the run's mean is at least this.
        prices: Token prices for the cost (default: the built-in table).
        seed: Seed of the bootstrap confidence intervals.

    Returns:
        The report's data (what the page shows).

    Raises:
        StoreError: a run is not in the store.
    """
    report = load_report(store, run_id, compare, threshold, prices=prices, seed=seed)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return report
