"""Shared terminal helpers for the CLI."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console

from assay._safety import printable

__all__ = [
    "EXIT_BAD_ROWS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_UNSCORED",
    "EXIT_USAGE",
    "end_state_lines",
    "err_console",
    "fmt_score",
    "out_console",
    "verdict_lines",
]

# ``assay run``'s exit codes, which CI relies on (README, "Exit codes").
EXIT_OK = 0
"""Every row was evaluated and the unscored share is within ``--max-unscored``."""
EXIT_USAGE = 1
"""Could not run: a usage error, an unreadable or empty input, a resume that does not match."""
EXIT_BAD_ROWS = 2
"""Evaluated, but some input rows were invalid (each reported as ``file:line: what``)."""
EXIT_UNSCORED = 3
"""Evaluated, but nothing was scored or the unscored share exceeds ``--max-unscored``."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C); every finished sample is stored and ``--resume`` continues."""

# Output that is not a terminal (a CI log, a pipe) has no width to fit: tables get room for
# whole names instead of rich's 80-column default. ``emoji=False``: ":m:" in a model name
# or a sample id is text, not an emoji code.
_LOG_WIDTH = 200
out_console = Console(emoji=False)
if not out_console.is_terminal:
    out_console = Console(emoji=False, width=_LOG_WIDTH)
# Messages are never hard-wrapped: an error naming a long path or row stays one line, so
# it can be copied and grepped (and does not depend on the terminal's width).
err_console = Console(stderr=True, soft_wrap=True, emoji=False)


def fmt_score(value: float) -> str:
    """A score for display: 3 decimals, or a dash when unscored."""
    return "—" if math.isnan(value) else f"{value:.3f}"


_MARKS = {1: "[green]✓[/green]", 0: "[red]✗[/red]", "PASS": "[green]✓[/green]", "FAIL": "[red]✗[/red]"}
_ARGUMENT_CHARS = 160


def end_state_lines(score: Mapping[str, Any]) -> list[str]:
    """An agent score's end state (``details["end_state"]``): each state-changing call and its outcome.

    ``score`` is a stored score record (or ``Score.model_dump(mode="json")``); other scores
    give no lines.
    """
    end = (score.get("details") or {}).get("end_state")
    if not isinstance(end, Mapping):
        return []
    changes = end.get("state_changes") or []
    lines = [
        f"end state: {len(changes)} state-changing call(s), {end.get('read_calls', 0)} read call(s) "
        f"(state-changing tools {printable(str(end.get('kinds', '')), breaks=False)})"
    ]
    for change in changes:
        arguments = json.dumps(change.get("arguments") or {}, ensure_ascii=False, default=str)
        if len(arguments) > _ARGUMENT_CHARS:
            arguments = arguments[: _ARGUMENT_CHARS - 1] + "…"
        outcome = str(change.get("outcome", ""))
        mark = "[red]✗[/red]" if outcome == "failed" else "[green]✓[/green]"
        lines.append(
            f"  {mark} call {change.get('call')} {printable(str(change.get('tool')), breaks=False)}"
            f"({printable(arguments, breaks=False)}) [dim]{printable(outcome)}[/dim]"
        )
    return lines


def verdict_lines(score: Mapping[str, Any]) -> list[str]:
    """Each verdict of a stored score: mark, subject, the judge's reason and the calls it cites."""
    lines = []
    for v in score.get("verdicts") or ():
        mark = _MARKS.get(v.get("value"), "[yellow]?[/yellow]")
        subject = printable(str(v.get("subject", "")), breaks=False)
        reason = printable(str(v.get("reason") or ""), breaks=False)
        line = f"  {mark} {subject} [dim]({reason})[/dim]" if reason else f"  {mark} {subject}"
        cited = (v.get("details") or {}).get("cited") or []
        if cited:
            line += "\n      [dim]cites " + printable(" | ".join(str(c) for c in cited), breaks=False) + "[/dim]"
        lines.append(line)
    return lines
