"""``assay metrics``: the metrics ``assay run -m`` knows, with their options and fields."""

from __future__ import annotations

import inspect

from rich.table import Table

from assay.cli._console import out_console
from assay.metrics._registry import metric_entries

__all__ = ["metrics"]


def metrics() -> None:
    """List every metric (built-in and plugin), its options and the sample fields it needs."""
    table = Table(title="metrics (assay run -m NAME --set NAME.OPTION=VALUE)", title_justify="left")
    for column in ("name", "what", "options (* required)"):
        table.add_column(column)
    for name, entry in sorted(metric_entries().items()):
        params = inspect.signature(entry.factory).parameters
        shown = ", ".join(
            f"{p}*" if params[p].default is inspect.Parameter.empty else f"{p}={params[p].default}"
            for p in entry.options
        )
        table.add_row(name, entry.summary, shown or "—")
    out_console.print(table)
