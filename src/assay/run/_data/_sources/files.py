"""DOC."""

from __future__ import annotations

import codecs
import os
from collections.abc import Mapping
from pathlib import Path

from assay.errors import (
    DatasetError,
)

__all__ = ["DATASET_SUFFIXES", "check_data_file", "check_format"]


DATASET_SUFFIXES: Mapping[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
"""File suffix (lower case) -> the reader :func:`~assay.run.read_dataset` uses for it."""


_SCAN_ENTRIES = 2000


_SHOWN_FILES = 5


def check_data_file(path: Path) -> None:
    """Raise unless ``path`` is an existing file: said before anything is opened or created.

    A directory is answered with the data files in it (and in its subfolders, one level
    down), so ``assay run data/`` says which file to give rather than "cannot tell the
    format"; the scan stops after a few thousand entries, so a huge folder costs nothing.

    Raises:
        DatasetError: ``"X: no such file"`` or ``"X: is a directory; give a file (...)"``.
    """
    if path.is_dir():
        known = ", ".join(DATASET_SUFFIXES)
        found = _data_files_in(path)
        listed = ""
        if found:
            more = f" and {len(found) - _SHOWN_FILES} more" if len(found) > _SHOWN_FILES else ""
            listed = "; it holds " + ", ".join(str(f) for f in found[:_SHOWN_FILES]) + more
        raise DatasetError(f"{path}: is a directory; give a data file ({known}){listed}")
    if not path.exists():
        raise DatasetError(f"{path}: no such file")


def _data_files_in(folder: Path) -> list[Path]:
    """Files with a data suffix in ``folder`` and its immediate subfolders, sorted (a bounded scan)."""
    found: list[Path] = []
    scanned = 0
    pending = [(folder, 0)]
    while pending and scanned < _SCAN_ENTRIES:
        current, depth = pending.pop(0)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            scanned += 1
            if scanned > _SCAN_ENTRIES:
                break
            try:
                if entry.is_file() and Path(entry.name).suffix.lower() in DATASET_SUFFIXES:
                    found.append(Path(entry.path))
                elif entry.is_dir() and depth == 0 and not entry.name.startswith("."):
                    pending.append((Path(entry.path), 1))
            except OSError:
                continue
    return found


def check_format(path: str | Path) -> None:
    """Raise unless ``path`` is a data file whose format its suffix tells (``assay run``'s check).

    Raises:
        DatasetError: the path is missing or a directory (naming the data files in it), or
            its suffix is none of :data:`DATASET_SUFFIXES`; the message says which suffix
            to give it, from what its first line looks like.
    """
    path = Path(path)
    check_data_file(path)
    if path.suffix.lower() not in DATASET_SUFFIXES:
        raise DatasetError(_format_problem(path))


def _format_problem(path: Path) -> str:
    """A file whose suffix names no format: which suffixes there are, and the one its content suggests."""
    shown = f"suffix {path.suffix!r}" if path.suffix else "no suffix"
    problem = f"{path}: cannot tell the format from {shown}; give a file ending in {', '.join(DATASET_SUFFIXES)}"
    first = _first_line(path, 4096).lstrip()
    guess = None
    if first.startswith("{"):
        guess, what = ".jsonl", "a JSON object (JSON lines)"
    elif first.startswith("["):
        guess, what = ".json", "a JSON array"
    elif first.startswith("PAR1"):
        guess, what = ".parquet", "Parquet"
    elif "," in first and not first.startswith("<"):
        guess, what = ".csv", "a CSV header"
    if guess is None:
        return problem
    return f"{problem}. It starts like {what}: if that is what it holds, rename it {path.with_suffix(guess).name}"


def _first_line(path: Path, limit: int) -> str:
    """The first non-blank line of a file (at most ``limit`` bytes of it), as text; ``""`` if unreadable."""
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if raw.strip():
                    return raw[:limit].removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace")
                if handle.tell() > limit:
                    break
    except OSError:
        return ""
    return ""
