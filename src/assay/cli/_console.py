"""Shared terminal helpers for the CLI."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console

from assay._safety import printable
from assay.errors import AssayError

__all__ = [
    "EXIT_BAD_ROWS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_UNSCORED",
    "EXIT_USAGE",
    "ctrl_c_interrupts",
    "end_state_lines",
    "err_console",
    "exits_for_judging",
    "fmt_score",
    "out_console",
    "stdout",
    "verdict_lines",
]

# ``assay run``'s exit codes, which CI relies on (docs/reference/exit-codes.md).
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


class _Stdout:
    """``sys.stdout`` (looked up at each write, so test runners can capture it), safe to pipe into ``head``.

    When the reader goes away (``assay gate ... | head -1``, a closed pipe), writing raises
    ``BrokenPipeError``. That used to end the command with exit 1, which for ``assay
    gate`` is the FAIL code: a passing gate failed CI because of ``head``. A broken pipe is
    not a verdict. The rest of the output is dropped (file descriptor 1 is pointed at the
    null device, so the interpreter's last flush cannot fail either) and the command ends
    with its own exit code.
    """

    _gone: object = None  # the stream whose reader went away

    def write(self, text: str) -> int:
        if self._gone is not sys.stdout:
            try:
                sys.stdout.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if self._gone is not sys.stdout:
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self._gone = sys.stdout
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no file descriptor (a test runner's buffer)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)


stdout = _Stdout()
"""Where commands write their output: standard output, where a closed pipe ends the output, not the command."""

# Output that is not a terminal (a CI log, a pipe) has no width to fit: tables get room for
# whole names instead of rich's 80-column default. ``emoji=False``: ":m:" in a model name
# or a sample id is text, not an emoji code.
_LOG_WIDTH = 200
out_console = Console(emoji=False, file=stdout)  # type: ignore[arg-type]  # a TextIO in all it is asked for
if not out_console.is_terminal:
    out_console = Console(emoji=False, width=_LOG_WIDTH, file=stdout)  # type: ignore[arg-type]
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
        if (v.get("decision") or {}).get("kind") == "person":
            line += " [bold]· decided by a person[/bold]"
        cited = (v.get("details") or {}).get("cited") or []
        if cited:
            line += "\n      [dim]cites " + printable(" | ".join(str(c) for c in cited), breaks=False) + "[/dim]"
        lines.append(line)
    return lines


@contextmanager
def ctrl_c_interrupts() -> Iterator[None]:
    """Within the block, SIGINT (Ctrl-C, ``kill -INT``) raises :class:`KeyboardInterrupt`, whatever was inherited.

    A process started as a background job of a non-interactive shell (``assay judges fake &``
    in a CI script) inherits SIGINT ignored, and Python then installs no handler of its own:
    the documented stop would do nothing and the process would outlive its job. The previous
    disposition comes back after the block. Only the main thread can set a handler; elsewhere
    this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def exits_for_judging() -> Iterator[None]:
    """Around a call that judges and stores as it goes: an interrupt exits 130, an :class:`AssayError` 1.

    Each with one line on stderr (the interrupt's says that what was judged is stored).
    Ctrl-C interrupts even where SIGINT was inherited ignored (:func:`ctrl_c_interrupts`).
    """
    try:
        with ctrl_c_interrupts():
            yield
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/yellow]: the items judged so far are stored")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
