"""Shared terminal helpers for the CLI."""

from __future__ import annotations

import math

from rich.console import Console

__all__ = ["EXIT_BAD_ROWS", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "err_console", "fmt_score", "out_console"]

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_BAD_ROWS = 2
EXIT_INTERRUPTED = 130

out_console = Console()
# Messages are never hard-wrapped: an error naming a long path or row stays one line, so
# it can be copied and grepped (and does not depend on the terminal's width).
err_console = Console(stderr=True, soft_wrap=True)


def fmt_score(value: float) -> str:
    """A score for display: 3 decimals, or a dash when unscored."""
    return "—" if math.isnan(value) else f"{value:.3f}"
