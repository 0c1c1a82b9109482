"""A file of spans: an OTLP JSON export (one document, or one export per line) read as one row per trace.

:func:`~assay.run._data._sources.jsonl.spans_in` tells such a file from rows (its top
level is the export, not a column holding one); :func:`span_rows` hands each trace's record
(:func:`~assay._traces._rag.span_records`: a RAG row, or an agent trace) to the one
mapping and validation, and a trace lacking a part is the row error of that trace,
named by its trace id (``spans.json: trace 5b8a...: no contexts (no RETRIEVER span)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay._traces._rag import span_records
from assay.errors import DatasetError, SampleError
from assay.run._data._rows import Row, SizeLimits
from assay.run._data._validate import row_from_record


def span_rows(
    path: Path,
    export: Any,
    *,
    required: tuple[str, ...],
    mapping: Mapping[str, str] | None,
    limits: SizeLimits | None,
) -> Iterator[Row | SampleError]:
    """Each trace of ``export`` (read from ``path``) as a :class:`Row` or the :class:`SampleError` naming it."""
    source = str(path)
    try:
        records = list(span_records(export))
    except ValueError as exc:
        raise DatasetError(f"{path}: an OTLP export with a malformed span: {exc}") from None
    seen: dict[str, int] = {}
    for number, traced in enumerate(records, start=1):
        if traced.record is None:
            yield SampleError(str(traced.problem), source=source, line=number, unit="trace", label=traced.trace_id)
            continue
        yield row_from_record(
            traced.record,
            line=number,
            source=source,
            required=required,
            mapping=mapping,
            unit="trace",
            label=traced.trace_id,
            seen_ids=seen,
            limits=limits,
        )
