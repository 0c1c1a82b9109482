"""Progress of a run: a rich bar in terminals and notebooks, plain lines in CI logs.

Where output is not a terminal (a CI log, a pipe), a redrawn bar is noise: the plain
reporter prints one line at a steady pace (every ``interval_s`` seconds, default
:data:`PLAIN_INTERVAL_S`, and at the end) with counts, tokens, cost and an ETA, and never
an ANSI escape. A line comes at least that often while the run goes on, even when no
sample or call finished meanwhile (a slow local judge): a log that stays silent for a
minute looks like a hung job. The bar and the final
summary describe cost the same way (:meth:`~assay.run.CostReport.describe`), so a run
whose judge has no price says ``unknown`` in both, never ``$0.0000``.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any, Literal, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["PLAIN_INTERVAL_S", "ProgressMode", "Reporter", "load_local_judge", "make_reporter"]

PLAIN_INTERVAL_S = 10.0
"""Seconds between plain progress lines (at most: one comes this often while a run goes on)."""

ProgressMode = Literal["auto", "bar", "plain", "none"]
"""``auto``: a bar where the output is a terminal or a notebook, plain lines elsewhere."""


class Reporter(Protocol):
    """What the runner tells about its progress."""

    def start(self, description: str, total: int | None, done: int) -> None:
        """Begin: ``done`` of ``total`` items are already finished (a resumed run)."""
        ...

    def advance(self, n: int, stats: str) -> None:
        """``n`` more items finished; ``stats`` is the running tally to show."""
        ...

    def note(self, message: str) -> None:
        """A line to print above the progress (already made safe for a terminal)."""
        ...

    def bytes(self, description: str, done: int, total: int) -> None:
        """Progress of a byte-sized step (assembling model weights)."""
        ...

    def close(self) -> None:
        """Finish (print the last line)."""
        ...


class _Silent:
    def start(self, description: str, total: int | None, done: int) -> None:
        pass

    def advance(self, n: int, stats: str) -> None:
        pass

    def note(self, message: str) -> None:
        pass

    def bytes(self, description: str, done: int, total: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Bar:
    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
        )
        self._task: TaskID | None = None
        self._byte_tasks: dict[str, TaskID] = {}
        self._progress.start()

    def start(self, description: str, total: int | None, done: int) -> None:
        self._task = self._progress.add_task(description, total=total, completed=done, stats="")

    def advance(self, n: int, stats: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, advance=n, stats=stats)

    def note(self, message: str) -> None:
        self._progress.console.print(message, markup=False, highlight=False)

    def bytes(self, description: str, done: int, total: int) -> None:
        task = self._byte_tasks.get(description)
        if task is None:
            task = self._byte_tasks[description] = self._progress.add_task(description, total=total, stats="")
        self._progress.update(task, completed=done)

    def close(self) -> None:
        self._progress.stop()


def _duration(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class _Plain:
    """One plain line every ``interval_s`` seconds (and at the end): for logs.

    Lines come when work finishes, at most one per ``interval_s``; a heartbeat thread adds
    one whenever ``interval_s`` passed without any, so a log never goes quiet for longer
    while the run goes on. Every print holds one lock, so lines never interleave.
    """

    def __init__(self, stream: IO[str], interval_s: float) -> None:
        self._stream = stream
        self._interval = interval_s
        self._description = ""
        self._total: int | None = None
        self._done = 0
        self._done_here = 0
        self._stats = ""
        self._started = time.monotonic()
        self._last = -float("inf")
        self._last_bytes = -float("inf")
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def _line(self) -> str:
        elapsed = time.monotonic() - self._started
        total = f"/{self._total}" if self._total is not None else ""
        share = f" ({100 * self._done / self._total:.0f}%)" if self._total else ""
        eta = ""
        if self._total is not None and self._done_here > 0 and self._done < self._total:
            eta = f" · ETA {_duration(elapsed / self._done_here * (self._total - self._done))}"
        stats = f" · {self._stats}" if self._stats else ""
        return f"{self._description}: {self._done}{total}{share}{stats} · elapsed {_duration(elapsed)}{eta}"

    def _print(self, text: str) -> None:
        print(text, file=self._stream, flush=True)

    def start(self, description: str, total: int | None, done: int) -> None:
        with self._lock:
            self._description, self._total, self._done = description, total, done
            self._started = time.monotonic()
            self._print(self._line())
            self._last = time.monotonic()
        if self._heartbeat is None and self._interval > 0:
            self._heartbeat = threading.Thread(target=self._beat, name="assay-progress", daemon=True)
            self._heartbeat.start()

    def _beat(self) -> None:
        """Print the line whenever ``interval_s`` passed without one, until :meth:`close`."""
        while True:
            with self._lock:
                wait = self._last + self._interval - time.monotonic()
                if wait <= 0:
                    self._last = time.monotonic()
                    self._print(self._line())
                    wait = self._interval
            if self._closed.wait(wait):
                return

    def advance(self, n: int, stats: str) -> None:
        with self._lock:
            self._done += n
            self._done_here += n
            self._stats = stats
            now = time.monotonic()
            if now - self._last >= self._interval:
                self._last = now
                self._print(self._line())

    def note(self, message: str) -> None:
        with self._lock:
            self._print(message)

    def bytes(self, description: str, done: int, total: int) -> None:
        with self._lock:
            now = time.monotonic()
            if done >= total or now - self._last_bytes >= self._interval:
                self._last_bytes = now
                self._print(f"{description}: {done / 1e6:.0f}/{total / 1e6:.0f} MB")

    def close(self) -> None:
        self._closed.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        with self._lock:
            if self._description:
                self._print(self._line())


def make_reporter(
    mode: ProgressMode | bool | None, console: Console | None = None, *, interval_s: float | None = None
) -> Reporter:
    """The reporter for ``mode`` (``True``/``None``: ``auto``; ``False``: ``none``).

    Args:
        mode: How to show progress.
        console: Where a bar draws (default: standard error).
        interval_s: Seconds between plain lines (default :data:`PLAIN_INTERVAL_S`): at
            most this long passes without one while the run goes on.
    """
    if mode is False or mode == "none":
        return _Silent()
    console = console or Console(stderr=True, emoji=False)
    if mode in (None, True, "auto"):
        mode = "bar" if console.is_terminal or console.is_jupyter else "plain"
    if mode == "bar":
        return _Bar(console)
    interval = PLAIN_INTERVAL_S if interval_s is None else interval_s
    return _Plain(console.file if console.file is not None else sys.stderr, interval)


def load_local_judge(judge: Any, reporter: Reporter) -> None:
    """Assemble the default weights (first run only) and load an in-process model, visibly.

    Args:
        judge: A :class:`~assay.models.LocalJudge`.
        reporter: Where the "loading" line and the weights' byte progress go.
    """
    reporter.note(f"loading {judge.model_id}")
    judge.load(progress=lambda done, total: reporter.bytes("preparing model weights (once)", done, total))
    if judge.library is not None:
        reporter.note(f"llama.cpp build: {judge.library.library} ({judge.library.reason})")
    if judge.weights is not None:
        reporter.note(f"weights: {judge.weights}")
