"""Reading samples: JSONL streamed line by line, every bad row reported with its line.

One path builds every sample, whatever the reader: :func:`sample_from_record`. It maps
column names to fields (:data:`ALIASES`, then the caller's ``mapping``), refuses text that
would break later (lone surrogates, nesting deeper than :data:`MAX_NESTING`, text above the
:class:`SizeLimits`), refuses two columns for one field and a reused id, and checks the
required fields, each as a :class:`~assay.errors.SampleError` naming the row. What it
takes on trust (``contexts`` given as one string) it says, as a note on the row
(:data:`NOTES`). ``docs/design/input.md`` explains the choices.
"""

from __future__ import annotations

import ast
import codecs
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from assay._samples import Sample
from assay.errors import ConfigError, DatasetError, SampleError, closest, did_you_mean, json_message

__all__ = [
    "ALIASES",
    "DATASET_SUFFIXES",
    "DEFAULT_MAX_FIELD_CHARS",
    "DEFAULT_MAX_ROW_CHARS",
    "IDEAL_CONTEXT_COLUMNS",
    "LIST_ALIASES",
    "MAX_NESTING",
    "NOTES",
    "MappedColumns",
    "Row",
    "SizeLimits",
    "blank_contexts_problem",
    "check_data_file",
    "check_mapped_columns",
    "contexts_from_text",
    "count_rows",
    "likely_column",
    "map_advice",
    "missing_problem",
    "python_literal",
    "read_jsonl",
    "required_fields",
    "rows_from_items",
    "sample_from_record",
    "size_problem",
]


class Row(NamedTuple):
    """A sample with the line (or item, or row) it was read from.

    ``notes`` name what the reader took on trust in this row (keys of :data:`NOTES`);
    :func:`~assay.run.open_dataset` counts them and the run says each once.
    """

    sample: Sample
    line: int
    notes: tuple[str, ...] = ()


NOTES: Mapping[str, str] = {
    "contexts_string": "contexts was one string, not a list, in {rows}; each was taken as one context "
    "(give a list to pass several)",
    "contexts_list_text": "contexts was a list written as text in {rows}; each was read as the list it holds "
    "(give the list itself to avoid the guess)",
}
"""Row note -> what the run says once about the rows that have it (``{rows}``: "12 rows of data.jsonl").

A CSV cell can only hold text, so a list in it is the normal form and no note; a JSON
string holding a list is a guess, and said.
"""

DATASET_SUFFIXES: Mapping[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
"""File suffix (lower case) -> the reader :func:`~assay.run.read_dataset` uses for it."""

DEFAULT_MAX_FIELD_CHARS = 200_000
"""Longest text one field of a row may hold (characters), unless raised.

About 50,000 tokens: far above a retrieved chunk (typically 500-4,000 characters), a whole
long article or report given as one context, and any answer a model writes (16,000 output
tokens, the most common ceiling, are about 64,000 characters). Above it, the text is
almost always a mistake (a file pasted into a cell, a log, a base64 blob) that would be
split, judged and stored at a cost nobody asked for.
"""

DEFAULT_MAX_ROW_CHARS = 1_000_000
"""Most text one row may hold in all (characters, every string counted, keys and metadata too).

About 250,000 tokens: more than the whole window of any judge (128,000-200,000 tokens),
so twenty long contexts of 50,000 characters still fit, while one row can no longer fill
the run store with hundreds of megabytes.
"""


@dataclass(frozen=True)
class SizeLimits:
    """How much text a row may hold before it is a row error (``assay run --max-field-chars``, ``--max-row-chars``).

    Attributes:
        max_field_chars: Longest single text (an answer, a question, one context, a
            trace message, a metadata value), in characters.
        max_row_chars: Most text of the whole row, every string counted.
    """

    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS
    max_row_chars: int = DEFAULT_MAX_ROW_CHARS

    def __post_init__(self) -> None:
        for name in ("max_field_chars", "max_row_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a whole number of characters, at least 1, not {value!r}")


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

MAX_NESTING = 100
"""Deepest nesting of lists and objects a row may have (deeper cannot be stored later)."""

_FIELDS = frozenset(Sample.model_fields)


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


def sample_from_record(
    record: Any,
    *,
    line: int | None = None,
    source: str | None = None,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    unit: str = "line",
    seen_ids: MutableMapping[str, int] | None = None,
    limits: SizeLimits | None = None,
    notes: list[str] | None = None,
    label: str | None = None,
) -> Sample:
    """Build a :class:`Sample` from one dict, naming the row in any error.

    Args:
        record: The row (a JSON object).
        line: The row's 1-based line (or item, or row) number, for errors and the default
            id ``line-N``.
        source: The file the row came from, for errors.
        required: Fields that must be present and not blank (empty or only whitespace text, an
            empty list or a list of blank contexts is absent; see :func:`missing_problem`).
        mapping: Explicit column renames (``{"my_col": "answer"}``); they win over
            :data:`ALIASES`.
        unit: What ``line`` counts (``line``, ``item`` or ``row``), for errors.
        seen_ids: Id -> number of the row that used it, shared by all rows of one read; a
            row reusing an id is an error, and a good row's id is added.
        limits: How much text the row may hold (default: :class:`SizeLimits`'s defaults).
        notes: Where to add what was taken on trust (keys of :data:`NOTES`): ``contexts``
            given as one string is one context, or the list a JSON or Python list literal
            in it holds.
        label: How errors name the row in place of its number (a DataFrame's index label).

    Raises:
        SampleError: the row is not an object, holds a text longer than
            ``limits.max_field_chars`` or more text than ``limits.max_row_chars``, holds
            text that is not valid Unicode or is nested too deep, gives one field in two
            columns, has a field of the wrong type, lacks a required field, or reuses an id.
        ConfigError: ``mapping`` names a target that is not a sample field.
    """

    def error(message: str) -> SampleError:
        return SampleError(message, source=source, line=line, unit=unit, label=label)

    if not isinstance(record, dict):
        raise error(f"expected a JSON object, got {type(record).__name__}")
    explicit = dict(mapping or {})
    unknown = sorted(target for target in explicit.values() if target not in _FIELDS)
    if unknown:
        raise ConfigError(f"--map target {unknown[0]!r} is not a sample field; use one of {', '.join(sorted(_FIELDS))}")
    problem = size_problem(record, limits or _DEFAULT_LIMITS) or text_problem(record)
    if problem is not None:
        raise error(problem)
    fields, columns, extra = _assign(record, explicit, error)
    if isinstance(fields.get("contexts"), str):
        try:
            contexts = contexts_from_text(fields["contexts"])
        except ValueError as exc:
            raise error(f"field '{columns['contexts']}': {exc}") from None
        if notes is not None:
            notes.append("contexts_list_text" if isinstance(contexts, list) else "contexts_string")
        fields["contexts"] = contexts if isinstance(contexts, list) else [contexts]
    if extra.get(TOOLS_CALLED) is not None and "trace" not in fields:
        fields["trace"] = trace_from_tools_called(fields, extra.pop(TOOLS_CALLED), error)
        columns["trace"] = TOOLS_CALLED
    metadata = _metadata(fields.pop("metadata", None), columns.get("metadata", "metadata"), extra, error)
    if fields.get("id") is None or (isinstance(fields["id"], str) and not fields["id"].strip()):
        fields["id"] = f"line-{line}" if line is not None else None
    fields["metadata"] = metadata
    try:
        sample = Sample.model_validate(fields)
    except ValidationError as exc:
        raise error("; ".join(_describe(err, columns) for err in exc.errors()[:3])) from None
    problem = missing_problem(sample, required, record)
    if problem is not None:
        raise error(problem)
    if seen_ids is not None and line is not None:
        first = seen_ids.setdefault(sample.id, line)
        if first != line:
            earlier = f"{unit} {first}" if label is None else f"row {first} (counted from 1)"
            raise error(f"id {sample.id!r} already used on {earlier}; ids must be unique")
    return sample


def row_from_record(record: Any, *, line: int, **checks: Any) -> Row | SampleError:
    """One input row as a :class:`Row` (with what was taken on trust), or its :class:`SampleError`.

    ``checks`` are :func:`sample_from_record`'s keyword arguments (source, required,
    mapping, unit, seen_ids, limits): every reader and ``evaluate``'s own items build rows here.
    """
    notes: list[str] = []
    try:
        sample = sample_from_record(record, line=line, notes=notes, **checks)
    except SampleError as exc:
        return exc
    return Row(sample, line, tuple(notes))


def missing_problem(sample: Sample, required: Iterable[str], record: Mapping[str, Any] | None = None) -> str | None:
    """What makes ``sample`` unjudgeable for lack of a field (``missing or empty field 'contexts'``), or ``None``.

    The one wording of a row that lacks a required field, whatever door it came in by.
    ``record`` (the row as given) lets the message name an ideal-context column. Blank text
    is no text (:meth:`~assay.Sample.field_present`): an answer of ``""`` or only whitespace
    is a missing answer, and contexts that are all blank (``[""]``) are no contexts. Required
    contexts that mix blank and real passages are refused too (:func:`blank_contexts_problem`).
    """
    missing = [name for name in required if not sample.field_present(name)]
    if not missing:
        return blank_contexts_problem(sample) if "contexts" in required else None
    names = ", ".join(f"'{m}'" for m in missing)
    hint = ""
    ideal = [name for name in IDEAL_CONTEXT_COLUMNS if name in (record or sample.metadata)]
    if "contexts" in missing and ideal:
        # Never "--map context=contexts" here: one row cannot tell whether other rows
        # carry retrieved contexts, and the mapping would judge those rows against
        # their ideal context. When no row has any, the dataset-level check offers it.
        hint = (
            f" (the column '{ideal[0]}' is {IDEAL_CONTEXT_COLUMNS[ideal[0]]}, not the retrieved passages, "
            "so it is kept in metadata and never judged against; give this row what was retrieved, as "
            "'retrieval_context' (DeepEval), 'retrieved_contexts' (Ragas) or 'contexts')"
        )
    else:
        # A key of the row named like the field (a misspelt 'answr', a 'retrieved_context')
        # is the likely one: said here as the dataset-level check says it (one wording).
        kept = [key for key in sample.metadata if key not in IDEAL_CONTEXT_COLUMNS]
        for name in missing:
            column = likely_column(name, kept)
            if column is not None:
                hint = (
                    f" (the row has '{column}', kept as metadata; if it holds the {name}: {map_advice(column, name)})"
                )
                break
    return f"missing or empty field {names}{hint}"


def blank_contexts_problem(sample: Sample) -> str | None:
    """What is wrong with contexts that mix blank passages (``""``, only whitespace) and real ones, or ``None``.

    Refused rather than dropped: a retrieved passage with no text cannot be judged, and
    dropping it would move every later passage up a rank, which changes what context
    precision scores (an average over ranks) without a word. The user removes it, or fixes
    the retriever that returned it.
    """
    blank = [i for i, text in enumerate(sample.contexts) if not text.strip()]
    if not blank:
        return None
    shown = ", ".join(f"'contexts[{i}]'" for i in blank[:_BLANK_SHOWN])
    more = f" and {len(blank) - _BLANK_SHOWN} more" if len(blank) > _BLANK_SHOWN else ""
    one = len(blank) == 1
    return (
        f"field{'' if one else 's'} {shown}{more} {'is' if one else 'are'} empty or only whitespace "
        f"({len(blank)} of the row's {len(sample.contexts)} contexts); remove blank contexts from the list: assay "
        "does not drop them itself, since the later ones would move up a rank and change context precision"
    )


_BLANK_SHOWN = 3


def likely_column(field_name: str, columns: Iterable[str]) -> str | None:
    """The column of ``columns`` named like ``field_name`` or one of its :data:`ALIASES` (a misspelling), or None."""
    options = list(columns)
    aliases = [key for key, target in ALIASES.items() if target == field_name]
    close = (closest(name, options) for name in (field_name, *aliases))
    return next((name for name in close if name is not None), None)


def map_advice(column: str, field_name: str) -> str:
    """How to read ``column`` as ``field_name``, in both doors' words (the command line's and Python's)."""
    return f"--map {column}={field_name} on the command line, mapping={{{column!r}: {field_name!r}}} in Python"


def required_fields(metrics: Iterable[Any]) -> tuple[str, ...]:
    """The fields a row must have to be judged by every one of ``metrics`` (their ``required_fields``), sorted."""
    return tuple(sorted({name for metric in metrics for name in metric.required_fields}))


def rows_from_items(
    items: Iterable[Any],
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
    source: str | None = "<samples>",
) -> Iterator[Row | SampleError]:
    """Rows from in-memory items: :class:`Sample` objects, dicts, or rows a reader already made.

    Every item goes through :func:`sample_from_record` (a ``Sample`` as its fields), so a
    list given to :func:`~assay.evaluate`, a sample given to the pytest plugin and a row of
    a file are checked alike; a :class:`Row` is checked for ``required`` and a
    :class:`~assay.errors.SampleError` passes through. Items are numbered from 1 (the
    ``line`` of errors and of the default id ``line-N``); ids must be unique. A column
    ``mapping`` names and no item has is a :class:`~assay.errors.ConfigError` once the
    items are read.
    """
    required = tuple(required)
    seen: dict[str, int] = {}  # ids must be unique here too: resume, gates and comparisons key on them
    columns = MappedColumns(mapping, source)
    index = 0
    for index, item in enumerate(items, start=1):
        if isinstance(item, SampleError):
            yield item
            continue
        if isinstance(item, Row):
            problem = missing_problem(item.sample, required)
            yield item if problem is None else SampleError(problem, source=source, line=item.line)
            continue
        record = item.model_dump(mode="python", exclude_defaults=True) if isinstance(item, Sample) else item
        columns.see(record)
        yield row_from_record(
            dict(record) if isinstance(record, Mapping) else record,
            line=index,
            source=source,
            required=required,
            mapping=mapping,
            seen_ids=seen,
            limits=limits,
        )
    columns.check(index)


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


def _describe(err: Any, columns: Mapping[str, str]) -> str:
    """One pydantic error as ``field 'column[0]': message``, naming the column as written."""
    loc = list(err["loc"])
    head = str(loc[0]) if loc else ""
    path = columns.get(head, head) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"field '{path}': {message}"


_DEFAULT_LIMITS = SizeLimits()


def size_problem(record: Any, limits: SizeLimits) -> str | None:
    """What makes ``record`` too big to judge, or ``None``: a text above either limit.

    Every string counts (keys, metadata and trace messages too): a field is one string,
    the row all of them. The first text above ``max_field_chars`` in row order is named by
    its place (``contexts[2]``, ``metadata.blob``); a row above ``max_row_chars`` names its
    largest columns. Iterative, so no input can exhaust the stack.
    """
    total = 0
    per_column: dict[str, int] = {}
    stack: list[tuple[Any, tuple[Any, ...]]] = [(record, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            size = len(item)
            if size > limits.max_field_chars:
                return (
                    f"field '{_path(path) or 'the row'}' is {size:,} characters, above the limit of "
                    f"{limits.max_field_chars:,} per field (raise it with --max-field-chars, or max_field_chars= "
                    "in Python)"
                )
        elif isinstance(item, dict):
            size = sum(len(key) for key in item if isinstance(key, str))
            stack.extend((value, (*path, key)) for key, value in reversed(item.items()))
        elif isinstance(item, list | tuple):
            size = 0
            stack.extend((value, (*path, i)) for i, value in reversed(list(enumerate(item))))
        else:
            continue
        total += size
        if path:
            per_column[str(path[0])] = per_column.get(str(path[0]), 0) + size
    if total > limits.max_row_chars:
        largest = sorted(per_column.items(), key=lambda kv: -kv[1])[:3]
        shown = ", ".join(f"{name} {size:,}" for name, size in largest)
        return (
            f"the row holds {total:,} characters of text, above the limit of {limits.max_row_chars:,} per row "
            f"(largest: {shown}; raise it with --max-row-chars, or max_row_chars= in Python)"
        )
    return None


def contexts_from_text(text: str) -> str | list[Any]:
    """The contexts one text holds: a list written as JSON or as a Python literal, else the text itself.

    A JSON list (raw newlines allowed) or a Python list literal (``['a', 'b']``, as pandas
    writes lists to CSV) is the list; any other text is one context, except text that
    starts and ends like a list of strings but is neither.

    Raises:
        ValueError: the text looks like a list of strings but parses as neither, or is
            nested too deep.
    """
    stripped = text.strip()
    if not stripped.startswith("["):
        return text
    try:
        value = parse_json(stripped, strict=False)
    except ValueError as exc:
        if "nested too deep" in str(exc):
            raise
        if not (stripped[1:].lstrip().startswith(("'", '"')) and stripped.endswith("]")):
            return text  # "[1] A citation-style passage": text, not a list
        value = python_literal(stripped)
        if value is None:
            raise ValueError(f"looks like a list but is neither JSON nor a Python list ({exc})") from None
    return value if isinstance(value, list) else text


def python_literal(text: str) -> list[Any] | dict[str, Any] | None:
    """The list or dict a Python literal writes (``[{'name': 'x', 'ok': True, 'n': None}]``), or ``None``.

    pandas writes a cell holding a list or dict to CSV as its ``repr``: single quotes,
    ``None``, ``True``. Read with :func:`ast.literal_eval`, which builds literals only and
    runs no code; any other text, or a literal that is no list or dict, is ``None``.
    """
    stripped = text.strip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, list | dict) else None


def text_problem(value: Any) -> str | None:
    r"""What makes ``value`` unusable as row data, or ``None``.

    Checks every string (keys included) for lone surrogates, which JSON escapes such as
    ``\ud800`` produce and which no UTF-8 store accepts, and the nesting depth against
    :data:`MAX_NESTING`. Iterative, so no input can exhaust the stack.
    """
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            where = _surrogate(item)
            if where is not None:
                return f"field '{_path(path)}': {where}; it is not valid Unicode (a broken \\u escape?): fix the text"
            continue
        if not isinstance(item, dict | list | tuple):
            continue
        if len(path) >= MAX_NESTING:
            return f"field '{_path(path)}': nested deeper than {MAX_NESTING} levels"
        entries = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in entries:
            if isinstance(key, str) and (where := _surrogate(key)) is not None:
                return f"a key in '{_path(path) or 'the row'}': {where}; it is not valid Unicode"
            if isinstance(child, dict | list | tuple) or (isinstance(child, str) and not child.isascii()):
                stack.append((child, (*path, key)))
    return None


def _surrogate(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start + 1}"
    return None


def _path(parts: tuple[Any, ...]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def parse_json(text: str, *, strict: bool = True) -> Any:
    """Parse JSON row data; a problem raises ``ValueError`` with a message for a row error.

    Unlike :func:`json.loads`, a key given twice in one object is an error (not the last
    one silently), and nesting too deep to parse is an error (not a ``RecursionError``).
    ``strict=False`` allows raw control characters (a newline) inside strings.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, strict=strict)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {json_message(exc)} at line {exc.lineno} column {exc.colno}") from None
    except _DuplicateKeyError as exc:
        raise ValueError(f"invalid JSON: the key {exc.args[0]!r} appears twice in one object") from None
    except RecursionError:
        raise ValueError(f"invalid JSON: nested too deep (at most {MAX_NESTING} levels)") from None


def require_rows(items: Iterator[Row | SampleError], empty: str) -> Iterator[Row | SampleError]:
    """Pass ``items`` through; raise ``DatasetError(empty)`` when there were none at all.

    A file with no rows and no row errors (empty, blank lines, a header only) is not an
    evaluation of nothing: the caller is told, and ``assay run`` exits 1.
    """
    produced = False
    for item in items:
        produced = True
        yield item
    if not produced:
        raise DatasetError(empty)


_SCAN_ENTRIES = 2000
_SHOWN_FILES = 5


def check_data_file(path: Path) -> None:
    """Raise unless ``path`` is an existing file: said before anything is opened or created.

    A directory is answered with the data files in it (and in its subfolders, one level
    down), so ``assay run data/`` says which file to give rather than "cannot tell the
    format"; the scan stops after a few thousand entries, so a huge folder costs nothing.

    Raises:
        DatasetError: ``"X: no such file"`` or ``"X: is a directory; give a file (...)"``.
    """
    if path.is_dir():
        known = ", ".join(DATASET_SUFFIXES)
        found = _data_files_in(path)
        listed = ""
        if found:
            more = f" and {len(found) - _SHOWN_FILES} more" if len(found) > _SHOWN_FILES else ""
            listed = "; it holds " + ", ".join(str(f) for f in found[:_SHOWN_FILES]) + more
        raise DatasetError(f"{path}: is a directory; give a data file ({known}){listed}")
    if not path.exists():
        raise DatasetError(f"{path}: no such file")


def _data_files_in(folder: Path) -> list[Path]:
    """Files with a data suffix in ``folder`` and its immediate subfolders, sorted (a bounded scan)."""
    found: list[Path] = []
    scanned = 0
    pending = [(folder, 0)]
    while pending and scanned < _SCAN_ENTRIES:
        current, depth = pending.pop(0)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            scanned += 1
            if scanned > _SCAN_ENTRIES:
                break
            try:
                if entry.is_file() and Path(entry.name).suffix.lower() in DATASET_SUFFIXES:
                    found.append(Path(entry.path))
                elif entry.is_dir() and depth == 0 and not entry.name.startswith("."):
                    pending.append((Path(entry.path), 1))
            except OSError:
                continue
    return found


def _open(path: Path) -> Any:
    check_data_file(path)
    try:
        return path.open("rb")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from exc


def read_jsonl(
    path: str | Path,
    *,
    required: Iterable[str] = (),
    mapping: Mapping[str, str] | None = None,
    limits: SizeLimits | None = None,
) -> Iterator[Row | SampleError]:
    """Stream samples from a JSONL file; a bad row yields a :class:`SampleError`, not a stop.

    Blank lines are skipped and a UTF-8 byte-order mark is allowed. Memory stays bounded:
    one line at a time (plus the set of ids seen, to refuse a reused one). A row with more
    text than ``limits`` allows (default :class:`SizeLimits`) is a row error.

    Raises:
        DatasetError: the file does not exist or cannot be opened, or it holds no rows
            and no row errors (``"...: no rows ..."``, raised when iteration ends).
    """
    path = Path(path)
    return require_rows(
        _jsonl_rows(path, tuple(required), mapping, limits),
        f"{path}: no rows (the file is empty or holds only blank lines)",
    )


def json_lines(path: Path) -> Iterator[tuple[int, Any] | SampleError]:
    """(line number, parsed value) for each non-blank line of a JSONL file, or a located error.

    The one JSON-lines reader (``assay run``, ``assay calibrate``): a UTF-8 byte-order mark
    is allowed, bytes that are not UTF-8, invalid JSON, a key given twice and nesting too
    deep are row errors naming the line, and the lines after them are still read.

    Raises:
        DatasetError: the file does not exist or cannot be opened.
    """
    source = str(path)
    with _open(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield SampleError(f"not UTF-8 (byte {exc.start + 1} of the line)", source=source, line=number)
                continue
            if not text.strip():
                continue
            try:
                yield number, parse_json(text)
            except ValueError as exc:
                yield SampleError(str(exc), source=source, line=number)


def _jsonl_rows(
    path: Path, required: tuple[str, ...], mapping: Mapping[str, str] | None, limits: SizeLimits | None = None
) -> Iterator[Row | SampleError]:
    source = str(path)
    seen: dict[str, int] = {}
    columns = MappedColumns(mapping, source)
    n_rows = 0
    for item in json_lines(path):
        if isinstance(item, SampleError):
            yield item
            continue
        number, record = item
        columns.see(record)
        n_rows += 1
        yield row_from_record(
            record, line=number, source=source, required=required, mapping=mapping, seen_ids=seen, limits=limits
        )
    columns.check(n_rows)


def count_rows(path: str | Path) -> int:
    """Non-blank lines in a file: the rows of a JSONL file (a fast pre-scan for progress bars).

    For other formats it is only an estimate (a CSV header and multi-line cells count);
    :func:`~assay.run.open_dataset` counts the rows of every format.
    """
    with _open(Path(path)) as handle:
        return sum(1 for raw in handle if raw.strip())
