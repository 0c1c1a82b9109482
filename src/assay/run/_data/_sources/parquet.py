"""DOC."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.errors import (
    DatasetError,
    SampleError,
)
from assay.run._data._rows import Row, SizeLimits, require_rows
from assay.run._data._sources._table import _brief, _import_optional, _table_rows
from assay.run._data._sources.files import check_data_file

__all__ = ["PARQUET_BATCH_ROWS", "read_parquet"]


PARQUET_BATCH_ROWS = 1024
"""Rows per Parquet record batch: the most a Parquet reader holds in memory at once."""


def read_parquet(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    batch_rows: int = PARQUET_BATCH_ROWS,
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a Parquet file, one record batch at a time (pyarrow).

    List columns (``list<string>`` contexts, say) and struct columns arrive as Python
    lists and dicts; nulls are absent. Row numbers are 1-based.

    Args:
        path: The Parquet file.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        batch_rows: Rows per record batch held in memory.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: pyarrow is not installed (extra ``parquet``).
        DatasetError: The file does not exist, is not Parquet, names a column twice, or
            cannot be read past some row; it has no rows (raised when iteration ends).
    """
    path = Path(path)
    return require_rows(_parquet_rows(path, tuple(required), mapping, batch_rows, limits), f"{path}: no rows (0 rows)")


def _parquet_rows(
    path: Path,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    batch_rows: int,
    limits: SizeLimits | None,
) -> Iterator[Row | SampleError]:
    source = str(path)
    if batch_rows < 1:
        raise DatasetError(f"batch_rows must be at least 1, got {batch_rows}")
    check_data_file(path)
    parquet = _import_optional("pyarrow.parquet", "pyarrow", "parquet", "Reading Parquet files")
    try:
        parquet_file = parquet.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError and friends
        raise DatasetError(f"{path}: not a readable Parquet file ({_brief(exc)})") from None
    try:

        def records() -> Iterator[dict[str, Any]]:
            number = 0
            batches = iter(parquet_file.iter_batches(batch_size=batch_rows))
            while True:
                try:
                    batch = next(batches, None)
                except Exception as exc:  # a corrupt row group
                    raise DatasetError(f"{path}: cannot read rows after row {number} ({_brief(exc)})") from None
                if batch is None:
                    return
                for record in batch.to_pylist():
                    number += 1
                    yield record

        names = [str(name) for name in parquet_file.schema_arrow.names]
        yield from _table_rows(names, records(), required=required, mapping=mapping, source=source, limits=limits)
    finally:
        parquet_file.close()
