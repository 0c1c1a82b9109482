"""The mapping: which field each column of a record gives, and the record turned into those fields.

One :class:`ColumnMapping` per read: fitted to the columns a source knows
(:class:`~assay.run._data._rows.Columns`: a header, a schema, the keys of the first JSON
lines), it turns each :class:`~assay.run._data._rows.Record` into :class:`Fields`, which the
validation (:mod:`~assay.run._data._validate`) makes a row. What is wrong with a record's
columns (two give one field, a cell that cannot be decoded, a ``metadata`` that is no object)
travels in the fields, and the validation says it, in its place among the row's other checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from assay._samples import Sample
from assay.errors import ConfigError, closest, did_you_mean
from assay.run._data._rows import Columns, Record, is_missing
from assay.run._data._text import contexts_from_text, parse_json, python_literal

__all__ = [
    "ALIASES",
    "IDEAL_CONTEXT_COLUMNS",
    "LIST_ALIASES",
    "TOOLS_CALLED",
    "ColumnMapping",
    "Fields",
    "check_mapped_columns",
    "column_field",
    "fit_mapping",
    "likely_column",
    "map_advice",
    "unmapped_problem",
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
columns that would fill one field in a row (``answer`` and ``response``, or ``Answer``
and ``response``: see :func:`fit_mapping`) are a row error.
A ``user_input`` that holds a list is Ragas' ``MultiTurnSample`` conversation and fills the
trace (see :data:`LIST_ALIASES`); DeepEval's ``tools_called`` becomes a trace when the row
has none (:func:`~assay.run._data._validate.trace_from_tools_called`).
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
    problem = unmapped_problem(mapping, columns)
    if problem is not None:
        raise ConfigError(f"{source}: {problem}" if source else problem)


def unmapped_problem(mapping: Mapping[str, str] | None, columns: Iterable[str]) -> str | None:
    """The first column a mapping renames that is not one of ``columns`` (with the closest there is), or ``None``."""
    present = list(dict.fromkeys(columns))
    for column, target in (mapping or {}).items():
        if column not in present:
            shown = ", ".join(present) or "none"
            hint = did_you_mean(column, present)
            return f"no column {column!r} (named in --map {column}={target}); columns are {shown}" + (
                f";{hint}" if hint else ""
            )
    return None


def fit_mapping(mapping: Mapping[str, str] | None, columns: Iterable[str], source: str | None) -> None:
    """Check ``mapping`` against the ``columns`` a source has, before its first record.

    Once a source's columns are known, :class:`ColumnMapping` also reads a column that
    differs from a field or an alias only in case (``Question``, ``Answer``,
    ``Retrieved_Contexts``) as that field, in each record by itself, as it reads an exact
    name or an alias: in a record where two columns that could give one field both hold a
    value (``Answer`` and ``response``, ``answer`` and ``Answer``), neither is chosen (the
    record is a row error naming both, see :func:`_assign`) unless the mapping names one;
    in a record where only one holds a value, it gives the field, whatever other records
    hold.

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


def column_field(column: str) -> str | None:
    """The field a column gives by its name (exactly, as an alias, or but for its case), or ``None``."""
    name = column if column in _FIELDS or column in ALIASES else _BY_FOLDED.get(column.casefold())
    return None if name is None else ALIASES.get(name, name)


def likely_column(field_name: str, columns: Iterable[str]) -> str | None:
    """The column of ``columns`` named like ``field_name`` or one of its :data:`ALIASES` (a misspelling), or None."""
    options = list(columns)
    aliases = [key for key, target in ALIASES.items() if target == field_name]
    close = (closest(name, options) for name in (field_name, *aliases))
    return next((name for name in close if name is not None), None)


def map_advice(column: str, field_name: str) -> str:
    """How to read ``column`` as ``field_name``, in both doors' words (the command line's and Python's)."""
    return f"--map {column}={field_name} on the command line, mapping={{{column!r}: {field_name!r}}} in Python"


_NOTHING: Mapping[str, Any] = MappingProxyType({})


class Fields(NamedTuple):
    """A record turned into fields by the mapping: what the validation makes a :class:`~assay.Sample` of.

    Attributes:
        record: The record as the source gave it (its place names the row in errors).
        value: The record the row's limits are checked on: the source's, with a table's
            cells decoded (empty cells dropped, a list in a ``contexts`` cell read).
        values: Field -> value (``None``: the record is no object).
        columns: Field -> the column that gave it, for errors.
        metadata: The row's ``metadata`` with the columns that are no field added.
        tools_called: DeepEval's ``tools_called``, to be read as the trace (the row has none).
        cell_problem: A table cell that cannot be decoded (said before anything else).
        problem: Two columns give one field (said after the row's limits).
        metadata_problem: ``metadata`` is no object, or a column shares a name with one of its keys.
    """

    record: Record
    value: Any
    values: Mapping[str, Any] | None = None
    columns: Mapping[str, str] = _NOTHING
    metadata: Mapping[str, Any] = _NOTHING
    tools_called: Any = None
    cell_problem: str | None = None
    problem: str | None = None
    metadata_problem: str | None = None


class ColumnMapping:
    """The mapping of one read: given (``--map``, ``mapping=``), fitted to the source's columns, checked.

    Without :class:`~assay.run._data._rows.Columns` from the source (a list of dicts, a
    streamed dataset), the mapping is used as given and checked when the read ends over
    every record's keys; so it is after JSON's columns, which are only its first records'.
    """

    def __init__(self, mapping: Mapping[str, str] | None) -> None:
        self._at_end = True
        self._seen: dict[str, None] = {}
        self._fold = False
        self.mapping = dict(mapping or {})
        self._unknown = sorted(target for target in self.mapping.values() if target not in _FIELDS)

    def fit(self, columns: Columns, source: str | None) -> None:
        """Fit the mapping to a source's columns (see :func:`fit_mapping`); a complete set is checked at once.

        A source whose columns fit (``columns.fit``: a file or a table, not records assay
        built) has its columns named but for their case read as their fields, record by record.

        Raises:
            ConfigError: the mapping is written FIELD=COLUMN, or (``columns.complete``) names
                a column that is not there.
        """
        if columns.fit:
            fit_mapping(self.mapping, columns.names, source)
            self._fold = True
        if columns.complete and columns.checked:
            check_mapped_columns(self.mapping, columns.names, source)
        self._at_end = columns.checked and not columns.complete

    def is_column(self, key: str) -> bool:
        """Whether the mapping reads ``key`` as a field: mapped, a field, an alias, or either but for its case."""
        return key in self.mapping or column_field(key) is not None

    def fields(self, record: Record) -> Fields:
        """The fields of ``record``: which column gives which field, the rest kept as metadata.

        Raises:
            ConfigError: the mapping names a target that is not a sample field.
        """
        value = record.value
        if self._at_end and self.mapping and isinstance(value, Mapping):
            for key in value:
                self._seen.setdefault(str(key), None)
        if record.cells:
            try:
                value = _decoded_cells(value, self.mapping, self._fold)
            except _CellError as exc:
                return Fields(record, value, cell_problem=str(exc))
        if not isinstance(value, dict):
            return Fields(record, value)
        if self._unknown:  # said at the first record that is an object, as every row of it would say it
            raise ConfigError(
                f"--map target {self._unknown[0]!r} is not a sample field; use one of {', '.join(sorted(_FIELDS))}"
            )
        values, columns, extra, problem = _assign(value, self.mapping, self._fold)
        if problem is not None:
            return Fields(record, value, values, columns, problem=problem)
        tools_called = None
        if extra.get(TOOLS_CALLED) is not None and "trace" not in values:
            tools_called = extra.pop(TOOLS_CALLED)
            columns["trace"] = TOOLS_CALLED
        metadata, metadata_problem = _metadata(values.pop("metadata", None), columns.get("metadata", "metadata"), extra)
        return Fields(record, value, values, columns, metadata, tools_called, metadata_problem=metadata_problem)

    def unseen(self, n_records: int) -> str | None:
        """At the read's end: the mapped column that was in none of ``n_records`` records, said; or ``None``.

        The road raises it as a :class:`ConfigError` naming the source; a header was checked at once.
        """
        if self._at_end and self.mapping and n_records:
            return unmapped_problem(self.mapping, self._seen)
        return None


def _target(key: str, value: Any, explicit: Mapping[str, str], fold: bool) -> str:
    """The field a column gives in a record, or the column's own name when it gives none.

    Mapped, a list alias holding a list, a field, an alias, or (``fold``) either but for its case.
    """
    mapped = explicit.get(key) or (LIST_ALIASES.get(key) if isinstance(value, list) else None)
    if mapped:
        return mapped
    if fold:
        return column_field(key) or key
    return ALIASES.get(key, key)


def _assign(
    record: dict[str, Any], explicit: Mapping[str, str], fold: bool
) -> tuple[dict[str, Any], dict[str, str], dict[str, Any], str | None]:
    """(field -> value, field -> the column it came from, columns that are no field, two columns for one field).

    Decided in this record alone: of the columns that could give a field (its exact name, an
    alias, and with ``fold`` either but for its case), the one that holds a value gives it;
    two that hold one are the record's problem, unless the mapping names one of them.
    """
    claims: dict[str, list[str]] = {}
    extra: dict[str, Any] = {}
    for key, value in record.items():
        target = _target(key, value, explicit, fold)
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
            both = f"columns '{chosen[0]}' and '{chosen[1]}' both give the {target}"
            if all(key in explicit for key in chosen[:2]):  # the mapping named both: naming one again is no way out
                problem = (
                    f"{both}, and the mapping names both (--map {chosen[0]}={target} --map {chosen[1]}={target}: "
                    "for files whose rows fill one or the other); this row fills both: keep one of the --map, or "
                    "empty one of the columns"
                )
            else:
                problem = (
                    f"{both}; keep one, or choose it with --map {chosen[0]}={target} (the other is then kept in "
                    "metadata)"
                )
            return fields, columns, extra, problem
        columns[target] = chosen[0]
        fields[target] = record[chosen[0]]
        extra.update((key, record[key]) for key in keys if key != chosen[0])
    return fields, columns, extra, None


def _metadata(given: Any, column: str, extra: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The row's ``metadata`` object with the columns that are no field added to it, or what is wrong with it."""
    if given is not None and not isinstance(given, dict):
        return {}, f"field '{column}': expected a JSON object, got {type(given).__name__}; put the value under a key"
    metadata = dict(given or {})
    for key, value in extra.items():
        if key in metadata:
            return metadata, f"column '{key}' and the metadata key '{key}' both given; rename one"
        metadata[key] = value
    return metadata, None


_JSON_FIELDS = frozenset({"trace", "reference_tool_calls", "metadata"})


class _CellError(ValueError):
    """A cell that cannot be decoded (reported as the row's error)."""


def _decoded_cells(record: Mapping[str, Any], explicit: Mapping[str, str], fold: bool) -> dict[str, Any]:
    """A table's row with its empty cells dropped and text decoded by the field its column gives (:func:`_target`).

    A ``contexts`` cell holding a list written as text is the list; a ``trace``,
    ``reference_tool_calls`` or ``metadata`` cell holding JSON (or a Python literal, as
    pandas writes a list or dict to CSV) is its value.
    """
    cleaned: dict[str, Any] = {}
    for key, value in record.items():
        name = str(key)
        target = _target(name, value, explicit, fold)
        if isinstance(value, str):
            if not value:
                continue
            if target == "contexts":
                value = _contexts(name, value)
            elif target in _JSON_FIELDS:
                value = _json_cell(name, value, want_object=target == "metadata")
        elif is_missing(value):
            continue
        cleaned[name] = value
    return cleaned


def _contexts(column: str, cell: str) -> Any:
    """The contexts in one text cell (:func:`~assay.run._data._text.contexts_from_text`)."""
    try:
        return contexts_from_text(cell)
    except ValueError as exc:
        raise _CellError(f"column '{column}': {exc}") from None


def _json_cell(column: str, cell: str, *, want_object: bool) -> Any:
    """A JSON cell, or a Python literal as pandas writes a list or dict to CSV (``[{'role': 'user', ...}]``).

    The literal is read as contexts are (:func:`~assay.run._data._text.contexts_from_text`):
    with :func:`ast.literal_eval`, which builds only literals (strings, numbers, lists,
    dicts, ``None``, ``True``), never runs code.
    """
    try:
        value = parse_json(cell, strict=False)
    except ValueError as exc:
        literal = python_literal(cell)
        if literal is None:
            raise _CellError(f"column '{column}': {exc}") from None
        value = literal
    if want_object and not isinstance(value, dict):
        raise _CellError(f"column '{column}': expected a JSON object, got {type(value).__name__}")
    return value
