"""Results as tables: one row per sample, one column per metric (the *wide* frame).

Ragas' ``result.to_pandas()`` and DeepEval's results give one row per test case with a
column per metric; a user coming from them looks for that shape. :func:`wide_rows` builds
it from stored records (``RunStore.records`` or ``SampleResult.to_record``), so
``EvalResult.to_pandas(wide=True)``, ``RunStore.to_pandas(run_id, wide=True)`` and
``assay runs export RUN --wide`` give the same table. Rows are in input order (line, then
repeat); a run with repeats has one row per (sample, repeat).

Columns: ``id``, ``line``, ``repeat``, ``question``, ``answer``, ``reference``, then for
each metric ``<metric>`` (the value; empty when unscored: never a made-up 0),
``<metric>_reason`` (the metric's explanation, or why it is unscored) and
``<metric>_unscored`` (the machine-readable unscored reason, empty when scored).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

__all__ = ["wide_rows"]


def _reason(score: Mapping[str, Any]) -> str | None:
    if score.get("unscored_reason"):
        detail = score.get("detail")
        return f"unscored ({score['unscored_reason']})" + (f": {detail}" if detail else "")
    text = score.get("explanation") or score.get("detail")
    return str(text) if text is not None else None


def score_value(score: Mapping[str, Any]) -> float | None:
    """A stored score's value, or ``None`` when it is unscored (or not a finite number)."""
    value = score.get("value")
    if value is None or score.get("unscored_reason"):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def wide_rows(records: Iterable[Mapping[str, Any]], metrics: Sequence[str] = ()) -> Iterator[dict[str, Any]]:
    """One row per (sample, repeat) with a value, a reason and an unscored column per metric.

    Args:
        records: Stored records, in input order.
        metrics: The metrics to give columns, in order (a run's metrics); metrics met in
            the records and not listed get columns after them.
    """
    names = list(metrics)
    buffered: list[Mapping[str, Any]] = []
    if not names:  # discover them: the records must be read twice
        buffered = list(records)
        records = buffered
        for record in buffered:
            for name in record.get("scores") or {}:
                if name not in names:
                    names.append(name)
    for record in records:
        sample = record.get("sample") or {}
        row: dict[str, Any] = {
            "id": record.get("id", sample.get("id")),
            "line": record.get("line"),
            "repeat": record.get("repeat", 0),
            "question": sample.get("question"),
            "answer": sample.get("answer"),
            "reference": sample.get("reference"),
        }
        scores = record.get("scores") or {}
        for name in [*names, *(n for n in scores if n not in names)]:
            score = scores.get(name)
            row[name] = score_value(score) if score is not None else None
            row[f"{name}_reason"] = _reason(score) if score is not None else None
            row[f"{name}_unscored"] = (score.get("unscored_reason") if score is not None else "missing") or None
        yield row
