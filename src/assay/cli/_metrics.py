"""``assay metrics``: the metrics ``assay run -m`` knows, with their options and fields."""

from __future__ import annotations

import inspect

from rich.table import Table

from assay.cli._console import out_console
from assay.metrics._registry import metric_entries

__all__ = ["metric_rows", "metrics"]


def metric_rows() -> list[tuple[str, str, str]]:
    """Every known metric as (name, what it asks, its options), sorted by name.

    Options read ``name=default``, or ``name*`` when required. The command's table and the
    documentation's metrics reference (``scripts/docs_hooks.py``) are both made from these.
    """
    rows = []
    for name, entry in sorted(metric_entries().items()):
        params = inspect.signature(entry.factory).parameters
        shown = ", ".join(
            f"{p}*" if params[p].default is inspect.Parameter.empty else f"{p}={params[p].default}"
            for p in entry.options
        )
        rows.append((name, entry.summary, shown or "—"))
    return rows


def metrics() -> None:
    """List every metric (built-in and plugin), its options and the sample fields it needs."""
    table = Table(title="metrics (assay run -m NAME --set NAME.OPTION=VALUE)", title_justify="left")
    for column in ("name", "what", "options (* required)"):
        table.add_column(column)
    for row in metric_rows():
        table.add_row(*row)
    out_console.print(table)
