"""mkdocs hooks (mkdocs.yml ``hooks:``): the parts of the site generated from the code.

- ``reference/metrics.md``: its ``<!-- assay-metrics-reference -->`` marker becomes the
  metric registry as a table (the rows ``assay metrics`` prints), so the page lists every
  metric and option the installed code knows.
- ``reference/cli.md``: its ``<!-- assay-cli-reference -->`` marker becomes every command
  and option of the typer app, from typer's own Markdown generator (what ``typer
  assay.cli utils docs`` prints), in process; the page is then checked to show every
  command, so a generator that changed shape cannot leave it silently empty.
- ``trust.md``: its ``<!-- assay-trust-table -->`` marker becomes the shipped trust table
  (``src/assay/run/agreement.json``, what ``trust_for`` reads) as a Markdown table, one row
  per measured figure, so the page shows exactly what ships.

- the API reference: the docstrings cross-reference in Sphinx's roles (``:class:`~assay.Sample```),
  which mkdocstrings leaves as typed; each becomes the code name it points at (``Sample``).

A failure raises ``PluginError``, which fails ``mkdocs build`` (strict or not).
"""

from __future__ import annotations

import html
import re
from typing import Any

import typer
from mkdocs.exceptions import PluginError

METRICS_PAGE = "reference/metrics.md"
METRICS_MARKER = "<!-- assay-metrics-reference -->"
CLI_PAGE = "reference/cli.md"
CLI_MARKER = "<!-- assay-cli-reference -->"
TRUST_PAGE = "trust.md"
TRUST_MARKER = "<!-- assay-trust-table -->"
_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj):<code>(~?)([\w.]+)</code>")


def _cell(text: str) -> str:
    """Plain text as one table cell: HTML escaped, no table separator, no line break."""
    return html.escape(text).replace("|", "&#124;").replace("\n", " ")


def metrics_table() -> str:
    """The metric registry as a Markdown table: name, what it asks, options (``*``: required)."""
    from assay.cli._metrics import metric_rows

    def code(text: str) -> str:  # HTML, not backticks: a backtick span would show the escapes as typed
        return "<code>" + _cell(text) + "</code>"

    lines = [
        "| metric (`-m`) | what it asks | options (`--set NAME.OPTION=VALUE`; `*` required) |",
        "|---|---|---|",
    ]
    for name, summary, options in metric_rows():
        shown = ", ".join(code(o) for o in options.split(", ")) if options != "—" else "—"
        lines.append(f"| {code(name)} | {_cell(summary)} | {shown} |")
    return "\n".join(lines)


def trust_rows(table: dict[str, Any] | None = None) -> list[list[str]]:
    """The shipped trust table's rows as cells (plain text): every figure of every metric, then the model-free ones.

    Columns: metric, level, agrees with, figure [95% CI], data set and n, measured with,
    date and source. The figure a run shows (the metric's headline) is marked ``shown``;
    one whose CI reaches chance (0.5) says ``not for gating``.
    """
    from assay.run._trust import CHANCE, shipped_table

    data = shipped_table() if table is None else table
    rows: list[list[str]] = []
    free: list[list[str]] = []
    for name, entry in sorted(data["metrics"].items()):
        if entry.get("model_free"):
            free.append([name, "", "—", f"model-free: {entry['model_free']}", "", "", ""])
            continue
        headline = entry.get("figure") or {}
        for figure in (entry.get("figures") or {"": headline}).values():
            low, high = figure["ci"]
            shown = f"{figure['balanced_accuracy']:.3f} [{low:.3f}-{high:.3f}]"
            if low <= CHANCE:
                shown += ": not for gating"
            if figure == headline:
                shown += " (shown)"
            rows.append(
                [
                    name,
                    str(entry.get("level") or ""),
                    str(figure.get("against") or "people"),
                    shown,
                    f"{figure['dataset']}, {figure['n']}",
                    str(figure.get("measured_with") or ""),
                    f"{figure['date']}, {figure.get('source') or ''}",
                ]
            )
    return rows + free


def trust_table() -> str:
    """The shipped trust table as Markdown: a header and one line per row of :func:`trust_rows`."""
    lines = [
        "| metric | level | agrees with | figure [95% CI] | data set, n | measured with | date, source |",
        "|---|---|---|---|---|---|---|",
    ]
    for metric, *rest in trust_rows():
        lines.append("| " + " | ".join([f"<code>{_cell(metric)}</code>", *(_cell(c) for c in rest)]) + " |")
    return "\n".join(lines)


def cli_commands() -> list[str]:
    """Every command path of the typer app, e.g. ``run``, ``runs show``."""
    from assay.cli import app

    def walk(command: Any, prefix: str) -> list[str]:
        paths = [prefix] if prefix else []
        for name, sub in (getattr(command, "commands", None) or {}).items():  # a group (typer vendors click)
            paths += walk(sub, f"{prefix} {name}".strip())
        return paths

    return walk(typer.main.get_command(app), "")


def cli_reference() -> str:
    """Every command and option of the typer app as Markdown, its headings one level down (under the page's title)."""
    from typer.cli import get_docs_for_click

    from assay.cli import app

    command = typer.main.get_command(app)
    text = get_docs_for_click(obj=command, ctx=typer.Context(command), name="assay")
    lines, fenced = [], False
    for line in text.strip().splitlines():
        fenced ^= line.startswith("```")
        lines.append("#" + line if line.startswith("#") and not fenced else line)
    return "\n".join(lines)


def _fill(markdown: str, page: str, marker: str, make: Any) -> str:
    if marker not in markdown:
        raise PluginError(f"{page}: the marker {marker} is missing: the generated reference has no place")
    return markdown.replace(marker, make())


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Fill the metrics and CLI references from the registry and the typer app, the trust table from its JSON."""
    if page.file.src_uri == METRICS_PAGE:
        return _fill(markdown, METRICS_PAGE, METRICS_MARKER, metrics_table)
    if page.file.src_uri == CLI_PAGE:
        return _fill(markdown, CLI_PAGE, CLI_MARKER, cli_reference)
    if page.file.src_uri == TRUST_PAGE:
        return _fill(markdown, TRUST_PAGE, TRUST_MARKER, trust_table)
    return markdown


def sphinx_roles_as_code(content: str) -> str:
    """``:class:<code>~a.b.C</code>`` (a Sphinx role as rendered) -> ``<code>C</code>``; without ``~``: ``a.b.C``."""
    return _ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", content)


def on_page_content(content: str, page: Any, **_: Any) -> str:
    """Show the docstrings' Sphinx roles as code; check that the CLI reference shows every command of the app."""
    content = sphinx_roles_as_code(content)
    if page.file.src_uri == CLI_PAGE:
        missing = [c for c in cli_commands() if f"assay {c}" not in content]
        if missing:
            raise PluginError(f"{CLI_PAGE}: the generated CLI reference lacks {', '.join(missing)}")
    return content
