"""CSV with a header row (standard library ``csv``): dialects, strict quoting, bytes that are not UTF-8."""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from assay.errors import DatasetError, SampleError
from assay.run._data._rows import Columns, Record
from assay.run._data._sources._table import _check_unique
from assay.run._data._sources.files import _first_line, check_data_file

__all__ = ["NO_ROWS", "csv_records"]


NO_ROWS = "{path}: no rows (the file is empty or holds only a header)"
"""What a CSV file that holds no rows and no row errors is told."""


def csv_records(path: Path) -> Iterator[Columns | Record | SampleError]:
    """The header's columns, then each record's cells (named by the physical line it starts on), or its error.

    Raises:
        DatasetError: the file does not exist or cannot be opened, its header is not UTF-8
            or not valid CSV, or it names a column twice (raised when iteration starts).
    """
    source = str(path)
    check_data_file(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc
    with handle:
        lines = _Lines(handle)
        reader = csv.reader(lines, strict=True, delimiter=_csv_delimiter(path))
        header = _csv_header(reader, lines, source)
        if header is None:
            return
        yield Columns(tuple(name for name in header if name), complete=True)
        reread_until = 0  # lines up to this one are read a second time, after an unclosed quote
        while True:
            lines.begin_record()
            start = lines.number + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                end = lines.number
                if end > start:
                    # The record ran on past its line: a quote opened a cell that never
                    # closed. Report what it swallowed, then read those lines again.
                    taken = f"line {end} was" if end == start + 1 else f"lines {start + 1}-{end} were"
                    yield SampleError(
                        f"unclosed quote in a cell opened on line {start}; {taken} read into it, and are read again "
                        f"as rows (csv: {exc}{_limit_note(exc)})",
                        source=source,
                        line=start,
                        end_line=end,
                    )
                    lines.first_bad_byte(start, start)
                    lines.read_again(start + 1)
                    reread_until = max(reread_until, end)
                else:
                    lines.first_bad_byte(start, end)  # forget them: the record is reported anyway
                    yield SampleError(_csv_problem(exc), source=source, line=start)
                continue
            end = lines.number
            if not any(cell.strip() for cell in cells):
                continue
            bad_byte = lines.first_bad_byte(start, end)
            if bad_byte is not None:
                yield SampleError(f"not UTF-8 (byte {bad_byte + 1} of its line)", source=source, line=start)
                continue
            if len(cells) > len(header):
                yield SampleError(
                    f"the row has {len(cells)} cells but the header has {len(header)} columns",
                    source=source,
                    line=start,
                )
                continue
            if start <= reread_until and len(cells) != len(header):
                yield SampleError(
                    f"the row has {len(cells)} cells, not {len(header)}; it was read into an unclosed quote above "
                    "and read again, which needs a cell for every column",
                    source=source,
                    line=start,
                )
                continue
            record = {name: cell for name, cell in zip(header, cells, strict=False) if name}
            yield Record(record, start, cells=True)


_CSV_HEADER_BYTES = 65_536


def _csv_delimiter(path: Path) -> str:
    """The header's delimiter: a comma, or a ``;`` or a tab when the header holds it and no comma.

    A spreadsheet set to a European locale writes ``;``-separated CSV, and a TSV saved as
    ``.csv`` is tab-separated: read with a comma, the header was one column named
    ``Question;Answer;Contexts``. A header that holds both and no comma is refused.

    Raises:
        DatasetError: the header holds both ``;`` and a tab and no comma.
    """
    header = _first_line(path, _CSV_HEADER_BYTES)
    if "," in header:
        return ","
    found = [sep for sep in (";", "\t") if sep in header]
    if len(found) == 2:
        raise DatasetError(
            f"{path}: the header holds both ';' and tabs and no comma, so which one separates the columns is not "
            "clear; save the file as comma-separated CSV (or as JSONL)"
        )
    return found[0] if found else ","


def _csv_problem(exc: csv.Error) -> str:
    """A one-line record the csv module refused, said in words a person can act on."""
    text = str(exc)
    if "field larger than field limit" in text:
        return (
            f"a cell is longer than the CSV field limit ({csv.field_size_limit():,} characters); put long texts in "
            "JSONL or Parquet, or raise csv.field_size_limit()"
        )
    if "unexpected end of data" in text:
        return "unclosed quote in a cell (the file ends inside it)"
    if "expected after" in text:
        return f'a quote inside a quoted cell is not doubled: write "" for a literal quote (csv: {text})'
    return f"invalid CSV: {text}"


def _limit_note(exc: csv.Error) -> str:
    if "field larger than field limit" in str(exc):
        return "; or a cell longer than the limit, csv.field_size_limit()"
    return ""


class _Lines:
    """The physical lines of a binary file as text, remembering which were not UTF-8.

    Keeps the lines of the record being read, so that they can be read again (after an
    unclosed quote swallowed them); :attr:`number` is the last line handed out.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.number = 0
        self._bad: dict[int, int] = {}  # line number -> offset of the first bad byte
        self._record: list[str] = []  # lines handed out since begin_record(), in order
        self._again: list[str] = []  # lines to hand out again, last first

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self._again:
            text = self._again.pop()
        else:
            raw = next(self._handle)
            if self.number == 0:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                self._bad[self.number + 1] = exc.start
                text = raw.decode("utf-8", errors="replace")
        self.number += 1
        self._record.append(text)
        return text

    def begin_record(self) -> None:
        """Start remembering lines afresh: a new record begins."""
        self._record.clear()

    def read_again(self, first: int) -> None:
        """Hand out this record's lines from line ``first`` on again."""
        start = self.number - len(self._record) + 1
        again = self._record[first - start :]
        self._again.extend(reversed(again))
        self.number = first - 1
        self._record.clear()

    def first_bad_byte(self, first: int, last: int) -> int | None:
        """The first bad byte's offset on lines ``first..last``, forgetting those lines."""
        offsets = [self._bad.pop(n) for n in sorted(self._bad) if first <= n <= last]
        return offsets[0] if offsets else None


def _csv_header(reader: Iterator[list[str]], lines: _Lines, source: str) -> list[str] | None:
    """The header's column names (stripped), or ``None`` for an empty file."""
    try:
        header = next((row for row in reader if any(cell.strip() for cell in row)), None)
    except csv.Error as exc:
        raise DatasetError(f"{source}: the header is not valid CSV ({exc})") from None
    if header is None:
        return None
    if lines.first_bad_byte(1, lines.number) is not None:
        raise DatasetError(f"{source}: the header is not UTF-8; save the file as UTF-8")
    names = [name.strip() for name in header]
    _check_unique([n for n in names if n], source)
    return names
