"""Reading samples: JSONL streamed line by line, every bad row reported with its line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from assay._samples import Sample
from assay.errors import DatasetError, SampleError

__all__ = ["ALIASES", "Row", "count_rows", "read_jsonl", "sample_from_record"]


class Row(NamedTuple):
    """A sample with the line it was read from."""

    sample: Sample
    line: int


ALIASES: Mapping[str, str] = {
    "input": "question",
    "query": "question",
    "user_input": "question",
    "output": "answer",
    "response": "answer",
    "retrieved_contexts": "contexts",
    "context": "contexts",
    "ground_truth": "reference",
    "messages": "trace",
}
_FIELDS = set(Sample.model_fields)


def sample_from_record(
    record: Any,
    *,
    line: int | None = None,
    source: str | None = None,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
) -> Sample:
    """Build a :class:`Sample` from one dict, naming the row in any error.

    Args:
        record: The row (a JSON object).
        line: The row's 1-based line number, for errors and the default id ``line-N``.
        source: The file the row came from, for errors.
        required: Fields that must be present and non-empty.
        mapping: Extra column renames (``{"my_col": "answer"}``), applied before aliases.

    Raises:
        SampleError: the row is not an object, a field has the wrong type, or a required
            field is missing.
    """
    if not isinstance(record, dict):
        raise SampleError(f"expected a JSON object, got {type(record).__name__}", source=source, line=line)
    renames = {**ALIASES, **(mapping or {})}
    fields: dict[str, Any] = {}
    metadata: dict[str, Any] = dict(record.get("metadata") or {}) if isinstance(record.get("metadata"), dict) else {}
    for key, value in record.items():
        if key == "metadata":
            continue
        target = renames.get(key, key)
        if target in _FIELDS and target not in fields:
            fields[target] = value
        else:
            metadata[key] = value
    if fields.get("id") is None:
        fields["id"] = f"line-{line}" if line is not None else None
    fields["metadata"] = metadata
    try:
        sample = Sample.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}" for err in exc.errors()[:3]
        )
        raise SampleError(problems, source=source, line=line) from None
    missing = [name for name in required if not sample.field_present(name)]
    if missing:
        names = ", ".join(f"'{m}'" for m in missing)
        raise SampleError(f"missing or empty field {names}", source=source, line=line)
    return sample


def _open(path: Path) -> Any:
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    if path.is_dir():
        raise DatasetError(f"{path}: is a directory, expected a JSONL file")
    try:
        return path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc


def read_jsonl(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a JSONL file; a bad row yields a :class:`SampleError`, not a stop.

    Blank lines are skipped. Memory stays bounded: one line at a time.

    Raises:
        DatasetError: the file does not exist or cannot be opened.
    """
    path = Path(path)
    required = tuple(required)
    with _open(path) as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield SampleError(f"not UTF-8 (byte {exc.start})", source=str(path), line=number)
                continue
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                yield SampleError(f"invalid JSON: {exc.msg} at column {exc.colno}", source=str(path), line=number)
                continue
            try:
                sample = sample_from_record(record, line=number, source=str(path), required=required, mapping=mapping)
            except SampleError as exc:
                yield exc
                continue
            yield Row(sample, number)


def count_rows(path: str | Path) -> int:
    """Non-blank lines in a file (a fast pre-scan for progress bars)."""
    with _open(Path(path)) as handle:
        return sum(1 for raw in handle if raw.strip())
