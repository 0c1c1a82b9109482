"""Parquet: one record batch at a time (pyarrow), each row a record of cells."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.errors import DatasetError
from assay.run._data._rows import Columns, Record
from assay.run._data._sources._table import _brief, _import_optional, _table_records
from assay.run._data._sources.files import check_data_file

__all__ = ["NO_ROWS", "PARQUET_BATCH_ROWS", "parquet_records"]


NO_ROWS = "{path}: no rows (0 rows)"
"""What a Parquet file without rows is told."""


PARQUET_BATCH_ROWS = 1024
"""Rows per Parquet record batch: the most a Parquet reader holds in memory at once."""


def parquet_records(path: Path, batch_rows: int = PARQUET_BATCH_ROWS) -> Iterator[Columns | Record]:
    """The columns of a Parquet file's schema, then its rows, ``batch_rows`` held in memory at once.

    Raises:
        DatasetError: the file does not exist, is not Parquet, names a column twice, or
            cannot be read past some row (raised when iteration reaches it).
    """
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
        yield from _table_records(names, records(), source=source)
    finally:
        parquet_file.close()
