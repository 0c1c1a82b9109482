"""Shared terminal helpers for the CLI."""

from __future__ import annotations

import math

from rich.console import Console

__all__ = [
    "EXIT_BAD_ROWS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_UNSCORED",
    "EXIT_USAGE",
    "err_console",
    "fmt_score",
    "out_console",
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
