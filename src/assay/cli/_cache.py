"""``assay cache``: inspect and prune the judge-call cache (``info``, ``clear``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from assay._safety import printable
from assay.cli._console import EXIT_USAGE, err_console, out_console
from assay.errors import AssayError
from assay.run import JudgeCache

__all__ = ["cache_app"]

cache_app = typer.Typer(help="The judge-call cache: info, clear.", no_args_is_help=True)
PathOption = Annotated[Path, typer.Option("--path", help="The judge-call cache (as 'assay run --cache-path').")]
DEFAULT_PATH = Path(".assay/cache.sqlite")


def _open(path: Path) -> JudgeCache:
    try:
        return JudgeCache(path, create=False)
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return dt.datetime.fromtimestamp(stamp, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@cache_app.command("info")
def info(path: PathOption = DEFAULT_PATH) -> None:
    """The cache file, its size on disk, entries (per model), the oldest and newest entry, the scores kept."""
    cache = _open(path)
    try:
        facts = cache.info()
    finally:
        cache.close()
    out_console.print(f"cache   {printable(facts.path)}")
    out_console.print(f"size    {_size(facts.size_bytes)}")
    out_console.print(f"entries {facts.entries}")
    out_console.print(f"oldest  {_when(facts.oldest)}")
    out_console.print(f"newest  {_when(facts.newest)}")
    out_console.print(f"scores  {facts.scores} (whole scores a re-run reads back while their answers are here)")
    if facts.per_model:
        table = Table(title="entries per model", title_justify="left")
        table.add_column("model")
        table.add_column("entries", justify="right")
        for model, count in facts.per_model.items():
            table.add_row(printable(model, breaks=False), str(count))
        out_console.print(table)


@cache_app.command("clear")
def clear(
    path: PathOption = DEFAULT_PATH,
    model: Annotated[
        str | None, typer.Option("--model", help="Only this judge's entries (a model as 'info' lists it).")
    ] = None,
    older_than: Annotated[
        float | None, typer.Option("--older-than", min=0.0, help="Only entries older than DAYS.", metavar="DAYS")
    ] = None,
) -> None:
    """Delete cached answers: all of them, or one model's and/or those older than DAYS (their kept scores too)."""
    cache = _open(path)
    try:
        deleted = cache.clear(model=model, older_than_days=older_than)
        left = len(cache)
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    finally:
        cache.close()
    which = []
    if model is not None:
        which.append(f"of {printable(model, breaks=False)}")
    if older_than is not None:
        which.append(f"older than {older_than:g} days")
    scope = f" ({', '.join(which)})" if which else ""
    noun = "entry" if deleted == 1 else "entries"
    out_console.print(f"deleted {deleted} {noun}{scope} from {printable(path)}; {left} left")
