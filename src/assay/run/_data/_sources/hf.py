"""DOC."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from assay.errors import (
    DatasetError,
    SampleError,
)
from assay.run._data._mapping import MappedColumns, _renames, check_mapped_columns, fit_mapping
from assay.run._data._rows import Row, SizeLimits, require_rows
from assay.run._data._sources._table import _from_columns, _import_optional, _row

__all__ = ["from_hf_dataset"]


def from_hf_dataset(
    ds: Any,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    source: str | None = "<dataset>",
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a Hugging Face ``datasets.Dataset`` (or ``IterableDataset``).

    Rows are read through the dataset's own iterator (Arrow-backed, a few rows at a time),
    never materialised as a whole; a dataset formatted for numpy, torch or pandas is read
    unformatted. Row numbers are the 1-based position.

    Args:
        ds: One split, e.g. ``load_dataset(...)["test"]``.
        required: Fields that must be present and non-empty in every row.
        mapping: Column renames (``{"my_answer": "answer"}``), applied before the aliases.
        source: How errors name the dataset.
        limits: The text a field and a row may hold (default :class:`~assay.run.SizeLimits`).

    Yields:
        A :class:`Row` per good row, a :class:`SampleError` per bad one.

    Raises:
        MissingExtraError: ``datasets`` is not installed (extra ``datasets``).
        DatasetError: ``ds`` is a ``DatasetDict`` (pick a split) or not a dataset; it has
            no rows (raised when iteration ends).
    """
    return require_rows(_hf_rows(ds, tuple(required), mapping, source, limits), f"{source or 'the dataset'}: no rows")


def _hf_rows(
    ds: Any, required: tuple[str, ...], mapping: Mapping[str, str] | None, source: str | None, limits: SizeLimits | None
) -> Iterator[Row | SampleError]:
    datasets = _import_optional("datasets", "datasets", "datasets", "Reading a Hugging Face dataset")
    if isinstance(ds, datasets.DatasetDict | datasets.IterableDatasetDict):
        splits = ", ".join(repr(split) for split in ds)
        raise DatasetError(f"from_hf_dataset() needs one split, got a dataset dict with splits {splits}; pick one")
    if not isinstance(ds, datasets.Dataset | datasets.IterableDataset):
        raise DatasetError(f"from_hf_dataset() needs a datasets.Dataset, got {type(ds).__name__}")
    seen: dict[str, int] = {}
    # Read unformatted (plain Python rows): a Dataset formatted for numpy or torch, and any
    # IterableDataset (whose format is not public; with_format is lazy there).
    formatting = getattr(ds, "format", None)
    formatted = not isinstance(formatting, Mapping) or formatting.get("type") is not None
    rows = ds.with_format(None) if formatted else ds
    names = getattr(ds, "column_names", None)
    if isinstance(names, list):
        mapping = fit_mapping(mapping, [str(name) for name in names], source)
        check_mapped_columns(mapping, [str(name) for name in names], source)
    renames = _renames(mapping)
    columns = MappedColumns(mapping if not isinstance(names, list) else None, source)
    number = 0
    for number, raw in enumerate(rows, start=1):
        columns.see(raw)
        record = _from_columns(raw)
        yield _row(
            record,
            line=number,
            source=source,
            required=required,
            mapping=mapping,
            renames=renames,
            seen=seen,
            unit="row",
            limits=limits,
        )
    columns.check(number)
