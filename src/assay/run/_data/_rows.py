"""What travels the road: a source's :class:`Record` (and its :class:`Columns`), the :class:`Row` made of it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from assay._samples import Sample
from assay.errors import ConfigError

__all__ = [
    "DEFAULT_MAX_FIELD_CHARS",
    "DEFAULT_MAX_ROW_CHARS",
    "MAX_NESTING",
    "NOTES",
    "Columns",
    "Record",
    "Row",
    "SizeLimits",
    "is_missing",
]


class Record(NamedTuple):
    """One record as a source read it, with its place: what the mapping turns into fields.

    Attributes:
        value: The record: a dict (a JSON object, a table's row of cells), or whatever a
            line held (the validation says it is no object).
        line: Its 1-based line (or item, row, trace) number; ``None`` for a record with no place.
        unit: What ``line`` counts (``line``, ``item``, ``row``, ``index``, ``trace``), for errors.
        label: How errors name it in place of its number (a DataFrame's index label, a trace id).
        cells: A table's cells: text the mapping decodes by the field its column gives
            (a list in a ``contexts`` cell, JSON in a ``trace`` cell); empty cells are absent.
    """

    value: Any
    line: int | None
    unit: str = "line"
    label: str | None = None
    cells: bool = False


class Columns(NamedTuple):
    """The column names a source knows before its first record, for the mapping to fit itself to.

    Attributes:
        names: The columns.
        complete: A header or a schema (every record has these columns): a mapped column not
            among them is refused at once. Otherwise they are the keys of the first records of
            a format whose records may differ (JSON), and the mapped columns are checked over
            every record's keys when the read ends.
        fit: Columns named like a field but for their case are read as it.
        checked: Whether a mapped column must be a column at all (not for records assay
            builds itself, such as a trace of spans).
    """

    names: tuple[str, ...]
    complete: bool
    fit: bool = True
    checked: bool = True


class Row(NamedTuple):
    """A sample with the line (or item, or row) it was read from.

    ``notes`` name what the reader took on trust in this row (keys of :data:`NOTES`);
    :func:`~assay.run.open_dataset` counts them and the run says each once.
    """

    sample: Sample
    line: int
    notes: tuple[str, ...] = ()


NOTES: Mapping[str, str] = {
    "contexts_string": "contexts was one string, not a list, in {rows}; each was taken as one context "
    "(give a list to pass several)",
    "contexts_list_text": "contexts was a list written as text in {rows}; each was read as the list it holds "
    "(give the list itself to avoid the guess)",
    "missing_as_text": "a field was the text 'nan', 'None' or 'null' in {rows} (what pandas or Python write for "
    "a missing value); it was judged as that text: leave the cell empty for a row that lacks the field",
    "trace_ids_several": "the trace held spans of several OpenTelemetry traces in {rows}; no trace or span id "
    "was kept for them, so 'assay export' gives their scores a trace of their own (one trace a row, or give "
    "trace_id and span_id columns)",
}
"""Row note -> what the run says once about the rows that have it (``{rows}``: "12 rows of data.jsonl").

A CSV cell can only hold text, so a list in it is the normal form and no note; a JSON
string holding a list is a guess, and said.
"""


DEFAULT_MAX_FIELD_CHARS = 200_000
"""Longest text one field of a row may hold (characters), unless raised.

About 50,000 tokens: far above a retrieved chunk (typically 500-4,000 characters), a whole
long article or report given as one context, and any answer a model writes (16,000 output
tokens, the most common ceiling, are about 64,000 characters). Above it, the text is
almost always a mistake (a file pasted into a cell, a log, a base64 blob) that would be
split, judged and stored at a cost nobody asked for.
"""


DEFAULT_MAX_ROW_CHARS = 1_000_000
"""Most text one row may hold in all (characters, every string counted, keys and metadata too).

About 250,000 tokens: more than the whole window of any judge (128,000-200,000 tokens),
so twenty long contexts of 50,000 characters still fit, while one row can no longer fill
the run store with hundreds of megabytes.
"""


@dataclass(frozen=True)
class SizeLimits:
    """How much text a row may hold before it is a row error (``assay run --max-field-chars``, ``--max-row-chars``).

    Attributes:
        max_field_chars: Longest single text (an answer, a question, one context, a
            trace message, a metadata value), in characters.
        max_row_chars: Most text of the whole row, every string counted.
    """

    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS

    def __post_init__(self) -> None:
        for name in ("max_field_chars", "max_row_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a whole number of characters, at least 1, not {value!r}")


MAX_NESTING = 100
"""Deepest nesting of lists and objects a row may have (deeper cannot be stored later)."""


_DEFAULT_LIMITS = SizeLimits()


_MISSING_TYPES = frozenset({"NAType", "NaTType"})  # pandas.NA, pandas.NaT


def is_missing(value: Any) -> bool:
    """Whether a table's cell holds no value: ``None``, NaN, ``pandas.NA`` or ``pandas.NaT``."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ in _MISSING_TYPES
