"""DOC."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay._samples import Sample
from assay.errors import (
    ConfigError,
    DatasetError,
    SampleError,
    counted,
)
from assay.metrics._base import Metric
from assay.run._data._mapping import ALIASES, IDEAL_CONTEXT_COLUMNS, likely_column, map_advice
from assay.run._data._rows import NOTES, Row, SizeLimits, require_rows
from assay.run._data._sources.arrow import from_arrow
from assay.run._data._sources.csv import read_csv
from assay.run._data._sources.dataframe import from_dataframe
from assay.run._data._sources.files import DATASET_SUFFIXES, _format_problem, check_data_file
from assay.run._data._sources.hf import from_hf_dataset
from assay.run._data._sources.json import _read_json_lines
from assay.run._data._sources.jsonl import _checked_jsonl_rows
from assay.run._data._sources.parquet import read_parquet
from assay.run._data._sources.python import rows_from_items

__all__ = ["DatasetSource", "open_dataset", "read_dataset", "read_rows"]


def read_dataset(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a file, choosing the reader by its suffix.

    ``.jsonl`` and ``.ndjson`` (JSON lines, one object per line) go to
    :func:`~assay.run.read_jsonl`; ``.json`` holds either one JSON array of objects (read
    whole; errors name the item, ``data.json: item 3: ...``) or JSON lines; ``.csv`` goes
    to :func:`read_csv`, ``.parquet`` and ``.pq`` to :func:`read_parquet`.

    Args:
        path: The dataset file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Returns:
        An iterator of rows and per-row errors.

    Raises:
        DatasetError: The path does not exist or is a directory (naming the data files in
            it), or the suffix is not one of the above (raised at once); the file is
            unreadable, a JSON array file is not valid JSON, or the content is not in the
            shape the suffix promises (one JSON array in a ``.jsonl`` file, one object
            holding the rows in a list; raised when iteration starts); it holds no rows and
            no row errors (raised when iteration ends).
        ConfigError: ``mapping`` is written the wrong way round (``{"answer": "response"}``
            where ``response`` is a column; raised when iteration starts).
    """
    path = Path(path)
    check_data_file(path)
    kind = DATASET_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise DatasetError(f"{_format_problem(path)} (in Python, read_jsonl / read_csv / read_parquet take any name)")
    if kind == "csv":
        return read_csv(path, required=required, mapping=mapping, limits=limits)
    if kind == "parquet":
        return read_parquet(path, required=required, mapping=mapping, limits=limits)
    if path.suffix.lower() == ".json":
        return _read_json_lines(path, required=tuple(required), mapping=mapping, limits=limits)
    return require_rows(
        _checked_jsonl_rows(path, tuple(required), mapping, limits),
        f"{path}: no rows (the file is empty or holds only blank lines)",
    )


@dataclass(frozen=True)
class DatasetSource:
    """A dataset that can be read more than once, with its fingerprint and size.

    Attributes:
        description: The path, or what kind of in-memory data it is.
        fingerprint: ``sha256:<hex>`` of the file's bytes, or of the rows read from
            in-memory data; equal fingerprints mean the same rows.
        n_rows: Rows read (valid and invalid).
        n_valid: Valid rows.
        present: For each sample field, how many valid rows have it.
        path: The file, when the data is one.
    """

    description: str
    fingerprint: str
    n_rows: int
    n_valid: int
    present: Mapping[str, int]
    path: Path | None
    _read: Callable[[Sequence[str]], Iterator[Row | SampleError]]
    ideal: Mapping[str, int] = field(default_factory=dict)
    """Ideal-context column (DeepEval's ``context``...) -> valid rows that have it (kept in metadata)."""
    errors: tuple[SampleError, ...] = ()
    """The first few invalid rows, for errors that must say why rows are missing."""
    notes: Mapping[str, int] = field(default_factory=dict)
    """Row note (a key of :data:`~assay.run._data._rows.NOTES`) -> valid rows that have it."""
    columns: Mapping[str, int] = field(default_factory=dict)
    """Column kept as metadata (no sample field) -> valid rows that have it, in the order first seen."""

    def note_messages(self) -> list[str]:
        """What was taken on trust in the data, each said once (``contexts was one string ... in 12 rows``)."""
        return [
            NOTES[key].format(rows=f"{n} row{'s' if n != 1 else ''} of {self.description}")
            for key, n in self.notes.items()
            if key in NOTES
        ]

    def rows(self, required: Sequence[str] = ()) -> Iterator[Row | SampleError]:
        """Read the rows again (a bad row is a :class:`~assay.errors.SampleError`, not a stop)."""
        return self._read(required)

    def check_fields(self, metrics: Sequence[Metric]) -> None:
        """Fail before any judge call when *no* row has a field some metric needs.

        A field missing from only some rows is reported per row (``file:line: what``) and
        the other rows are judged; a field no row has is one clear error, not one per row.
        Every door says it alike (:func:`~assay.evaluate` on a file, a table or a list, and
        ``assay run``), naming the field, the columns read for it, the columns that were
        kept as metadata instead, and how to map one: ``--map COLUMN=FIELD`` on the
        command line, ``mapping={"COLUMN": "FIELD"}`` in Python.

        Raises:
            ConfigError: a metric needs a field that no valid row has.
        """
        if self.n_valid == 0:
            return
        for metric in metrics:
            missing = [f for f in metric.required_fields if self.present.get(f, 0) == 0]
            if not missing:
                continue
            field_name = missing[0]
            aliases = {v: [k for k, t in ALIASES.items() if t == v] for v in missing}
            names = "; ".join(
                f"'{m}'" + (f" (also read from {', '.join(aliases[m])})" if aliases[m] else "") for m in missing
            )
            ideal = [name for name in IDEAL_CONTEXT_COLUMNS if self.ideal.get(name)]
            if "contexts" in missing and ideal:
                # No row has retrieved contexts, so this mapping takes no row's away from it.
                advice = (
                    f"the column '{ideal[0]}' is {IDEAL_CONTEXT_COLUMNS[ideal[0]]} (what should have been "
                    f"retrieved), kept in metadata and never judged against; add what was retrieved as "
                    f"'retrieval_context' or 'retrieved_contexts', or, if '{ideal[0]}' does hold the retrieved "
                    f"passages, {map_advice(ideal[0], 'contexts')}"
                )
            else:
                others = [name for name in self.columns if name not in IDEAL_CONTEXT_COLUMNS]
                # A column named like the field or one of its aliases ('retrieved_context') is the likely one.
                column = likely_column(field_name, others) or "COLUMN"
                advice = f"add it to the data, or name the column that holds it: {map_advice(column, field_name)}"
                if others:
                    shown = ", ".join(f"'{name}'" for name in others[:_COLUMNS_SHOWN])
                    more = f" and {len(others) - _COLUMNS_SHOWN} more" if len(others) > _COLUMNS_SHOWN else ""
                    advice += f" (columns kept as metadata: {shown}{more})"
            rejected = [e for e in self.errors if any(f"'{f}" in e.detail for f in missing)]
            if rejected:
                shown = "; ".join(str(e) for e in rejected[:3])
                advice += f". Rows that have it were invalid: {shown}"
            raise ConfigError(
                f"metric '{metric.name}' needs {names}, which no valid row of {self.description} has; {advice}"
            )


_COLUMNS_SHOWN = 5


_FINGERPRINT_CHUNK = 1 << 20


_ERRORS_KEPT = 20


_COLUMNS_KEPT = 100  # metadata columns remembered for the advice of check_fields (a wide table stays cheap)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_FINGERPRINT_CHUNK):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


_TABLES = {"dataframe": "<dataframe>", "arrow": "<arrow table>", "hf": "<dataset>"}


def _table_kind(data: Any) -> str | None:
    """Which in-memory table ``data`` is (``dataframe``, ``arrow``, ``hf``), by its type's module; ``None`` for none."""
    kind = f"{type(data).__module__}.{type(data).__qualname__}"
    if kind.split(".")[0] == "pandas" and kind.endswith("DataFrame"):
        return "dataframe"
    if kind.split(".")[0] == "pyarrow" and kind.endswith(("Table", "RecordBatch")):
        return "arrow"
    if kind.startswith("datasets."):
        return "hf"
    return None


def read_rows(
    data: Any,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
    source: str | None = "<samples>",
) -> Iterator[Row | SampleError]:
    """The one road into a run: whatever ``data`` is, its rows, each a :class:`Row` or its :class:`SampleError`.

    A file path goes to the reader its suffix names (:func:`read_dataset`); a pandas
    DataFrame, an Arrow table and a Hugging Face dataset to theirs; anything else is a
    sequence of :class:`~assay.Sample` objects, dicts or rows already read
    (:func:`~assay.run._data._sources.python.rows_from_items`, errors naming ``source``).
    Every source hands each record to one mapping (columns to fields) and one validation
    (limits, required fields, ids), so every door (``assay run``, :func:`~assay.evaluate`,
    Ray, the pytest plugin) reads alike.

    Raises:
        DatasetError: as the reader of ``data`` raises (see :func:`read_dataset`).
    """
    if isinstance(data, str | Path):
        return read_dataset(data, required=required, mapping=mapping, limits=limits)
    kind = _table_kind(data)
    if kind == "dataframe":
        return from_dataframe(data, required=required, mapping=mapping, limits=limits)
    if kind == "arrow":
        return from_arrow(data, required=required, mapping=mapping, limits=limits)
    if kind == "hf":
        return from_hf_dataset(data, required=required, mapping=mapping, limits=limits)
    return rows_from_items(data, required=required, mapping=mapping, limits=limits, source=source)


def _reader(
    data: Any, mapping: Mapping[str, str], limits: SizeLimits | None = None
) -> tuple[str, Path | None, Callable[..., Iterator[Any]]]:
    """What the data is, its path if any, and a function that reads it (again) as rows (:func:`read_rows`)."""
    path: Path | None = None
    kind = None if isinstance(data, str | Path) else _table_kind(data)
    if isinstance(data, str | Path):
        path = Path(data)
        description = str(path)
    elif kind is not None:
        description = _TABLES[kind]
    else:
        if isinstance(data, Mapping):
            raise DatasetError("evaluate() takes a list of samples or dicts, a file path, or a table; got one dict")
        if not isinstance(data, Sequence):
            data = list(data)  # a generator is read twice: once to check, once to judge
        description = f"<{counted(len(data), 'sample')}>"
    given = data if path is None else path
    return description, path, lambda required: read_rows(given, required=required, mapping=mapping, limits=limits)


_OTEL_FIELDS = ("trace_id", "span_id", "response_id")


def open_dataset(
    data: Any, *, mapping: Mapping[str, str] | None = None, limits: SizeLimits | None = None
) -> DatasetSource:
    """Check ``data`` in one pass and return a re-readable source with its fingerprint.

    Args:
        data: A file path (JSONL, CSV, Parquet, a JSON array), a pandas DataFrame, a
            Hugging Face ``Dataset``, or a sequence of :class:`~assay.Sample` objects or
            dicts (a generator is read into a list).
        mapping: Column renames (``{"my_answer": "answer"}``).
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`);
            a row above either is a row error, found here, before any judge call.

    Raises:
        DatasetError: the data cannot be read (a missing path, a directory), or holds no
            row at all.
    """
    mapping = dict(mapping or {})
    description, path, read = _reader(data, mapping, limits)
    digest = hashlib.sha256()
    n_rows = n_valid = 0
    present: dict[str, int] = {}
    ideal: dict[str, int] = {}
    errors: list[SampleError] = []
    notes: dict[str, int] = {}
    columns: dict[str, int] = {}
    for item in read(()):
        n_rows += 1
        if isinstance(item, SampleError) and len(errors) < _ERRORS_KEPT:
            errors.append(item)
        if isinstance(item, Row):
            n_valid += 1
            for note in item.notes:
                notes[note] = notes.get(note, 0) + 1
            for name in Sample.model_fields:
                if item.sample.field_present(name):
                    present[name] = present.get(name, 0) + 1
            for name in IDEAL_CONTEXT_COLUMNS:
                if item.sample.metadata.get(name):
                    ideal[name] = ideal.get(name, 0) + 1
            for name in item.sample.metadata:
                if len(columns) < _COLUMNS_KEPT or name in columns:
                    columns[name] = columns.get(name, 0) + 1
            if path is None:
                # ASCII JSON: text that is not valid Unicode (a lone surrogate) still hashes.
                # The OpenTelemetry ids only where given: data without them hashes as before they existed.
                dumped = item.sample.model_dump(mode="json")
                for name in _OTEL_FIELDS:
                    if dumped.get(name) is None:
                        dumped.pop(name, None)
                digest.update(json.dumps(dumped, sort_keys=True).encode() + b"\n")
        elif path is None:
            digest.update(str(item).encode("utf-8", "surrogatepass") + b"\n")
    if n_rows == 0:
        raise DatasetError(f"{description}: holds no rows; nothing to evaluate")
    fingerprint = _file_sha256(path) if path is not None else f"sha256:{digest.hexdigest()}"
    return DatasetSource(
        description, fingerprint, n_rows, n_valid, present, path, read, ideal, tuple(errors), notes, columns
    )
