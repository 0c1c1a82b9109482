"""HTML reports of stored runs: one self-contained file, no network.

```python
from assay.report import write_report
from assay.run import EvalResult, RunStore

with RunStore() as store:
    write_report(store, "20250101-120000-ab12", "report.html", compare="20241231-090000-cd34")
```

The page shows the run's spec, per-metric means with bootstrap CIs, unscored counts by
reason, tokens and cost; score histograms (and with repeats, per-sample spread and the
gate's flake probability); a sortable, filterable sample table whose rows open the
answer with each statement coloured by its verdict, the contexts and the raw judge
exchange; and, with ``compare``, per-sample deltas, flips and paired metric deltas.
The header lists the run's settings as a table (the raw spec behind a disclosure) and,
given a :class:`~assay.analysis.GatePolicy`, ``assay gate``'s verdict on the run. The
pass mark is the gate's: ``threshold`` defaults to :data:`DEFAULT_THRESHOLD`.
See ``docs/design/report.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from assay._safety import scrub, url_secrets
from assay.analysis import GatePolicy, metrics_in
from assay.errors import ConfigError, did_you_mean
from assay.report._browse import BROWSER_SAMPLES, BrowserData, RunEntry, build_browser, report_file
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
from assay.report._html import CSP, render_browser, render_html
from assay.report._markdown import gate_summary_markdown, md_text
from assay.run import EvalResult, RunStore, trust_for_run
from assay.run._cost import PriceTable

__all__ = [
    "BROWSER_SAMPLES",
    "CSP",
    "DEFAULT_THRESHOLD",
    "BrowserData",
    "CompareMetric",
    "CostView",
    "Gate",
    "Histogram",
    "Interval",
    "MetricView",
    "ReportData",
    "RunEntry",
    "Spread",
    "build_browser",
    "build_report",
    "embed_json",
    "gate_summary_markdown",
    "load_report",
    "locate_statements",
    "md_text",
    "pass_share",
    "render_browser",
    "render_html",
    "render_report",
    "report_file",
    "report_result",
    "spread",
    "write_browser",
    "write_report",
]


DEFAULT_THRESHOLD: float = GatePolicy.threshold
"""The report's default pass mark: ``assay gate``'s default (``--min``), so the two agree."""


def _pass_mark(threshold: float | None, gate: GatePolicy | None) -> float:
    if gate is None:
        return DEFAULT_THRESHOLD if threshold is None else threshold
    if threshold is not None and threshold != gate.threshold:
        raise ConfigError(
            f"the report's threshold {threshold:g} differs from the gate policy's {gate.threshold:g}; give one"
        )
    return gate.threshold


GateMetrics = str | Sequence[str | tuple[str, float]]
"""The metrics a report's gate checks: a name, or names and ``(name, threshold)`` pairs."""


def _gated(gate_metric: GateMetrics, default: float) -> dict[str, float]:
    items = [gate_metric] if isinstance(gate_metric, str) else list(gate_metric)
    gated: dict[str, float] = {}
    for item in items:
        name, threshold = (item, default) if isinstance(item, str) else item
        gated[name] = threshold
    return gated


def load_report(
    store: RunStore | str | Path,
    run_id: str,
    compare: str | None = None,
    threshold: float | None = None,
    *,
    prices: PriceTable | None = None,
    seed: int = 0,
    gate: GatePolicy | None = None,
    gate_metric: GateMetrics = "faithfulness",
) -> ReportData:
    """Read ``run_id`` (and ``compare``) from ``store`` and compute the report's data.

    Every metric's gate column is :func:`assay.analysis.evaluate_gate` at the metric's pass
    mark (with ``gate``'s options when given), the same verdict ``assay gate`` prints; with
    ``gate``, the verdicts of ``gate_metric`` (a name, or names and ``(name, threshold)``
    pairs, each metric at its own pass mark) also head the report.

    Raises:
        StoreError: a run is not in the store.
        ConfigError: ``gate`` is given and the run has no ``gate_metric``, or
            ``threshold`` differs from the gate's.
    """
    if not isinstance(store, RunStore):
        with RunStore(store) as opened:
            return load_report(
                opened, run_id, compare, threshold, prices=prices, seed=seed, gate=gate, gate_metric=gate_metric
            )
    pass_mark = _pass_mark(threshold, gate)
    gated = _gated(gate_metric, pass_mark) if gate is not None else {}
    info = store.info(run_id)
    other = store.info(compare) if compare is not None else None
    # A run stored before its spec redacted the base URL may hold a server's echo of a
    # credential in that URL (an error body): mask them all at render time.
    secrets = [*url_secrets(info.spec.base_url), *url_secrets(other.spec.base_url if other else None)]
    records = scrub(list(store.records(run_id)), secrets)
    try:
        return build_report(
            info,
            records,
            row_errors=scrub(store.row_errors(run_id), secrets),
            other=other,
            other_records=scrub(list(store.records(compare)), secrets) if compare is not None else (),
            threshold=pass_mark,
            prices=prices,
            seed=seed,
            thresholds=gated,
            # The same analysis as 'assay gate' (its --seed is the policy's seed).
            gate=gate or GatePolicy(threshold=pass_mark, seed=seed),
            gated=list(gated),
            trust=trust_for_run(store, run_id),
        )
    except KeyError as exc:
        name = str(exc.args[0])
        names = metrics_in(records) or [m.name for m in info.spec.metrics]
        raise ConfigError(
            f"run {run_id} has no metric {name!r} to gate;{did_you_mean(name, names)} its metrics: "
            f"{', '.join(names) or 'none'}"
        ) from None


def render_report(
    store: RunStore | str | Path,
    run_id: str,
    compare: str | None = None,
    threshold: float | None = None,
    *,
    prices: PriceTable | None = None,
    seed: int = 0,
    gate: GatePolicy | None = None,
    gate_metric: GateMetrics = "faithfulness",
) -> str:
    """The report of ``run_id`` (compared with run ``compare``, if given) as an HTML string."""
    return render_html(
        load_report(store, run_id, compare, threshold, prices=prices, seed=seed, gate=gate, gate_metric=gate_metric)
    )


def write_report(
    store: RunStore | str | Path,
    run_id: str,
    out: str | Path,
    compare: str | None = None,
    threshold: float | None = None,
    *,
    prices: PriceTable | None = None,
    seed: int = 0,
    gate: GatePolicy | None = None,
    gate_metric: GateMetrics = "faithfulness",
    back_link: str | None = None,
) -> ReportData:
    """Write the report of ``run_id`` to ``out`` as one self-contained HTML file.

    Args:
        store: The run store (or its path).
        run_id: The run to report.
        out: The HTML file to write (its folder is created).
        compare: Another run to compare with; deltas are ``run_id`` minus ``compare``.
        threshold: A sample passes a metric when its value is at least this; the gate
            passes a repeat when the run's mean is at least this. Default: the gate
            policy's threshold, else :data:`DEFAULT_THRESHOLD` (``assay gate``'s).
        prices: Token prices for the cost (default: the built-in table).
        seed: Seed of the bootstrap confidence intervals.
        gate: Apply this ``assay gate`` policy to ``gate_metric`` and show its verdict
            (pass, fail, flaky or unscored) in the header.
        gate_metric: The metric the gate checks, or several: names and ``(name,
            threshold)`` pairs, each gated (and coloured) at its own pass mark.
        back_link: A relative link to the run browser's index, shown in the header.

    Returns:
        The report's data (what the page shows).

    Raises:
        StoreError: a run is not in the store.
        ConfigError: the run has no ``gate_metric``, or ``threshold`` differs from the gate's.
    """
    report = load_report(
        store, run_id, compare, threshold, prices=prices, seed=seed, gate=gate, gate_metric=gate_metric
    )
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report, back_link=back_link), encoding="utf-8")
    return report


def report_result(
    result: EvalResult, path: str | Path = "report.html", *, compare: str | None = None, threshold: float | None = None
) -> Path:
    """Write the HTML report of the run :func:`assay.evaluate` returned (it must have been stored).

    ``report_result(assay.evaluate(data, metrics, judge, store=".assay/runs.sqlite"), "report.html")``;
    :func:`write_report` takes a store and a run id instead.

    Raises:
        ConfigError: ``result`` was not stored (``evaluate(..., store=None)``).
    """
    if result.run_id is None or result.store_path is None:
        raise ConfigError("a report needs a stored run: evaluate(..., store='.assay/runs.sqlite')")
    out = Path(path)
    with RunStore(result.store_path) as store:
        write_report(store, result.run_id, out, compare, threshold)
    return out


def write_browser(
    store: RunStore | str | Path,
    out_dir: str | Path = "assay-runs",
    *,
    threshold: float | None = None,
    prices: PriceTable | None = None,
    seed: int = 0,
    reports: bool = True,
    max_samples: int = BROWSER_SAMPLES,
) -> BrowserData:
    """Write the run browser: ``out_dir/index.html`` over every run, and each run's report in ``out_dir/runs/``.

    The folder is self-contained (relative links, no network): open ``index.html``, or
    upload the folder as a CI artifact. See :mod:`assay.report._browse`.

    Args:
        store: The run store (or its path).
        out_dir: The folder to write (created).
        threshold: The pass mark (default: ``assay gate``'s).
        prices: Token prices for the reports' costs.
        seed: Seed of the bootstrap intervals.
        reports: Also write every run's report (``False``: the index only, e.g. when the
            reports are already there).
        max_samples: Samples per run the index embeds for side-by-side comparison.

    Returns:
        What the index shows.
    """
    if not isinstance(store, RunStore):
        with RunStore(store) as opened:
            return write_browser(
                opened, out_dir, threshold=threshold, prices=prices, seed=seed, reports=reports,
                max_samples=max_samples,
            )  # fmt: skip
    folder = Path(out_dir)
    mark = DEFAULT_THRESHOLD if threshold is None else threshold
    runs = []
    for info in store.runs():
        records = scrub(list(store.records(info.run_id)), url_secrets(info.spec.base_url))
        runs.append((info, records))
        if reports:
            write_report(
                store, info.run_id, folder / "runs" / report_file(info.run_id), threshold=mark, prices=prices,
                seed=seed, back_link="../index.html",
            )  # fmt: skip
    trust = {info.run_id: trust_for_run(store, info.run_id) for info, _ in runs}
    data = build_browser(runs, threshold=mark, store=str(store.path), max_samples=max_samples, trust=trust)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(render_browser(data), encoding="utf-8")
    return data
