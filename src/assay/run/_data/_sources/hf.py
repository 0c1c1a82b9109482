"""A Hugging Face dataset, through its own iterator (Arrow-backed, a few rows at a time)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from assay.errors import DatasetError
from assay.run._data._rows import Columns, Record
from assay.run._data._sources._table import _from_columns, _import_optional

__all__ = ["hf_records"]


def hf_records(ds: Any) -> Iterator[Columns | Record]:
    """The columns of ``ds`` when it names them (a ``Dataset``; a streamed one may not), then its rows.

    Raises:
        DatasetError: ``ds`` is a ``DatasetDict`` (pick a split) or not a dataset (raised when iteration starts).
    """
    datasets = _import_optional("datasets", "datasets", "datasets", "Reading a Hugging Face dataset")
    if isinstance(ds, datasets.DatasetDict | datasets.IterableDatasetDict):
        splits = ", ".join(repr(split) for split in ds)
        raise DatasetError(f"from_hf_dataset() needs one split, got a dataset dict with splits {splits}; pick one")
    if not isinstance(ds, datasets.Dataset | datasets.IterableDataset):
        raise DatasetError(f"from_hf_dataset() needs a datasets.Dataset, got {type(ds).__name__}")
    # Read unformatted (plain Python rows): a Dataset formatted for numpy or torch, and any
    # IterableDataset (whose format is not public; with_format is lazy there).
    formatting = getattr(ds, "format", None)
    formatted = not isinstance(formatting, Mapping) or formatting.get("type") is not None
    rows = ds.with_format(None) if formatted else ds
    names = getattr(ds, "column_names", None)
    if isinstance(names, list):
        yield Columns(tuple(str(name) for name in names), complete=True)
    for number, raw in enumerate(rows, start=1):
        yield Record(_from_columns(raw), number, unit="row", cells=True)
