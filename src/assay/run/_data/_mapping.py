"""DOC."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from assay._samples import Sample
from assay.errors import (
    ConfigError,
    SampleError,
    closest,
    did_you_mean,
)

__all__ = [
    "ALIASES",
    "IDEAL_CONTEXT_COLUMNS",
    "LIST_ALIASES",
    "TOOLS_CALLED",
    "MappedColumns",
    "check_mapped_columns",
    "fit_mapping",
    "likely_column",
    "map_advice",
    "trace_from_tools_called",
]


ALIASES: Mapping[str, str] = {
    # DeepEval: input, actual_output, expected_output, retrieval_context.
    # Ragas: user_input, response, retrieved_contexts, reference.
    "input": "question",
    "query": "question",
    "user_input": "question",
    "output": "answer",
    "response": "answer",
    "actual_output": "answer",
    "retrieved_contexts": "contexts",
    "retrieval_context": "contexts",
    "ground_truth": "reference",
    "expected_output": "reference",
    "messages": "trace",
    # Ragas: reference_tool_calls (same name); DeepEval: expected_tools.
    "expected_tools": "reference_tool_calls",
    # Phoenix's spans dataframe; the OpenTelemetry GenAI response id.
    "context.trace_id": "trace_id",
    "context.span_id": "span_id",
    "gen_ai.response.id": "response_id",
}
"""Column name -> sample field, for columns named as other tools name them.

Every reader uses this one table. An explicit ``mapping`` always wins over it; two
columns that would fill one field (``answer`` and ``response``) are a row error.
A ``user_input`` that holds a list is Ragas' ``MultiTurnSample`` conversation and fills the
trace (see :data:`LIST_ALIASES`); DeepEval's ``tools_called`` becomes a trace when the row
has none (:func:`trace_from_tools_called`).
"""


LIST_ALIASES: Mapping[str, str] = {"user_input": "trace"}
"""Column name -> sample field when the column holds a list (Ragas' multi-turn ``user_input``)."""


TOOLS_CALLED = "tools_called"
"""DeepEval's column of the calls an agent made (``name``, ``input_parameters``, ``output``)."""


IDEAL_CONTEXT_COLUMNS: Mapping[str, str] = {
    "context": "DeepEval's ideal context",
    "reference_contexts": "Ragas' reference contexts",
}
"""Columns that hold what *should* have been retrieved, never read as ``contexts``.

They stay in ``metadata`` under their own names (a grader template can use them as
``{metadata[context]}``); ``--map context=contexts`` reads one as the contexts.
"""


_FIELDS = frozenset(Sample.model_fields)


_BY_FOLDED = {name.casefold(): name for name in (*_FIELDS, *ALIASES) if name not in LIST_ALIASES}


def check_mapped_columns(mapping: Mapping[str, str] | None, columns: Iterable[str], source: str | None) -> None:
    """Raise unless every column a mapping renames is one of ``columns``.

    A misspelt ``--map my_answr=answer`` used to be ignored, and the default ``answer``
    column was judged instead: a silent wrong result. Now it stops the run before any
    judge call, naming the columns there are and the closest one.

    Raises:
        ConfigError: a mapped column is not among ``columns``.
    """
    present = list(dict.fromkeys(columns))
    for column, target in (mapping or {}).items():
        if column not in present:
            where = f"{source}: " if source else ""
            shown = ", ".join(present) or "none"
            hint = did_you_mean(column, present)
            raise ConfigError(
                f"{where}no column {column!r} (named in --map {column}={target}); columns are {shown}"
                + (f";{hint}" if hint else "")
            )


class MappedColumns:
    """The columns one read has seen, to check at its end that every mapped column was among them.

    For formats whose rows may differ in their keys (JSON lines, JSON arrays, lists of
    dicts); CSV, Parquet and DataFrames check their header at once instead.
    """

    def __init__(self, mapping: Mapping[str, str] | None, source: str | None) -> None:
        self.mapping = dict(mapping or {})
        self.source = source
        self.columns: dict[str, None] = {}

    def see(self, record: object) -> None:
        """Note a row's keys (nothing to do without a mapping)."""
        if self.mapping and isinstance(record, Mapping):
            for key in record:
                self.columns.setdefault(str(key), None)

    def check(self, n_rows: int) -> None:
        """Raise :class:`ConfigError` if a mapped column was in no row (after ``n_rows`` rows)."""
        if self.mapping and n_rows:
            check_mapped_columns(self.mapping, self.columns, self.source)


def fit_mapping(mapping: Mapping[str, str] | None, columns: Iterable[str], source: str | None) -> dict[str, str]:
    """``mapping`` checked against the ``columns`` a source has, with columns named but for their case added.

    A column that differs from a field or an alias only in case (``Question``, ``Answer``,
    ``Retrieved_Contexts``) is read as that field, unless the mapping names it or another
    column (an exact name, an alias, a mapped one) gives the field already.

    Raises:
        ConfigError: the mapping is written FIELD=COLUMN (``--map answer=response``, where
            ``answer`` is no column and ``response`` is one); the message gives the
            mapping meant (``--map response=answer``).
    """
    given = dict(mapping or {})
    present = list(dict.fromkeys(str(column) for column in columns))
    where = f"{source}: " if source else ""
    for column, target in given.items():
        if target not in _FIELDS and column in _FIELDS and column not in present and target in present:
            raise ConfigError(
                f"{where}--map {column}={target} is the wrong way round: '{target}' is a column and '{column}' a "
                f"field, and --map takes COLUMN=FIELD; did you mean --map {target}={column}?"
            )
    exact = _FIELDS | set(ALIASES)
    claimed = {given.get(c) or ALIASES.get(c, c) for c in present if c in given or c in exact}
    claimed.update(given.values())
    found: dict[str, str] = {}
    for column in present:
        if column in given or column in exact:
            continue
        field = _column_field(column)
        if field is None or field in claimed:
            continue
        found[column] = field
        claimed.add(field)
    return {**found, **given}


def _column_field(column: str) -> str | None:
    """The field a column gives by its name (exactly, as an alias, or but for its case), or ``None``."""
    name = column if column in _FIELDS or column in ALIASES else _BY_FOLDED.get(column.casefold())
    return None if name is None else ALIASES.get(name, name)


def _renames(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """Column -> field, as :func:`sample_from_record` applies them."""
    return {**ALIASES, **(mapping or {})}


def likely_column(field_name: str, columns: Iterable[str]) -> str | None:
    """The column of ``columns`` named like ``field_name`` or one of its :data:`ALIASES` (a misspelling), or None."""
    options = list(columns)
    aliases = [key for key, target in ALIASES.items() if target == field_name]
    close = (closest(name, options) for name in (field_name, *aliases))
    return next((name for name in close if name is not None), None)


def map_advice(column: str, field_name: str) -> str:
    """How to read ``column`` as ``field_name``, in both doors' words (the command line's and Python's)."""
    return f"--map {column}={field_name} on the command line, mapping={{{column!r}: {field_name!r}}} in Python"


def _assign(
    record: dict[str, Any], explicit: Mapping[str, str], error: Callable[[str], SampleError]
) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """(field -> value, field -> the column it came from, columns that are no field)."""
    claims: dict[str, list[str]] = {}
    extra: dict[str, Any] = {}
    for key, value in record.items():
        target = (
            explicit.get(key) or (LIST_ALIASES.get(key) if isinstance(value, list) else None) or ALIASES.get(key, key)
        )
        if target in _FIELDS:
            # A null cell is an absent one, and so is blank text: CSV cannot tell "" from null,
            # so every format reads both (and whitespace only) as the field not given.
            if value is not None and not (isinstance(value, str) and not value.strip()):
                claims.setdefault(target, []).append(key)
        else:
            extra[key] = value
    fields: dict[str, Any] = {}
    columns: dict[str, str] = {}
    for target, keys in claims.items():
        chosen = [key for key in keys if key in explicit] or keys
        if len(chosen) > 1:
            raise error(
                f"columns '{chosen[0]}' and '{chosen[1]}' both give the {target}; keep one, or choose it with "
                f"--map {chosen[0]}={target} (the other is then kept in metadata)"
            )
        columns[target] = chosen[0]
        fields[target] = record[chosen[0]]
        extra.update((key, record[key]) for key in keys if key != chosen[0])
    return fields, columns, extra


def trace_from_tools_called(
    fields: Mapping[str, Any], tools_called: Any, error: Callable[[str], SampleError]
) -> list[dict[str, Any]]:
    """DeepEval's ``tools_called`` as a trace: the input, the calls with their outputs, the output.

    Each call (``{"name", "input_parameters", "output"}``) becomes an assistant tool call
    followed by its result (``output`` as text; a call without an output has no result, so
    whether it succeeded is not known). The row's ``input`` opens the trace and its
    ``actual_output`` closes it.
    """
    from assay._messages import ToolCall

    if not isinstance(tools_called, list):
        raise error(f"field '{TOOLS_CALLED}': expected a list of tool calls, got {type(tools_called).__name__}")
    trace: list[dict[str, Any]] = []
    if isinstance(fields.get("question"), str) and fields["question"].strip():
        trace.append({"role": "user", "content": fields["question"]})
    for i, raw in enumerate(tools_called):
        try:
            call = ToolCall.model_validate(raw)
        except ValueError as exc:
            problem = str(exc).split("\n", 1)[-1].strip()
            raise error(f"field '{TOOLS_CALLED}[{i}]': {problem}") from None
        call_id = call.id or f"{TOOLS_CALLED}-{i + 1}"
        trace.append(
            {"role": "assistant", "tool_calls": [{"id": call_id, "name": call.name, "arguments": call.arguments}]}
        )
        output = raw.get("output") if isinstance(raw, Mapping) else None
        if output is not None:
            content = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
            trace.append({"role": "tool", "tool_call_id": call_id, "name": call.name, "content": content})
    if isinstance(fields.get("answer"), str) and fields["answer"].strip():
        trace.append({"role": "assistant", "content": fields["answer"]})
    return trace


def _metadata(given: Any, column: str, extra: Mapping[str, Any], error: Callable[[str], SampleError]) -> dict[str, Any]:
    """The row's ``metadata`` object with the columns that are no field added to it."""
    if given is not None and not isinstance(given, dict):
        raise error(f"field '{column}': expected a JSON object, got {type(given).__name__}; put the value under a key")
    metadata = dict(given or {})
    for key, value in extra.items():
        if key in metadata:
            raise error(f"column '{key}' and the metadata key '{key}' both given; rename one")
        metadata[key] = value
    return metadata
