"""The validation: a record's fields become a :class:`Row`, or the located :class:`~assay.errors.SampleError`.

Its checks, in the order a row with several problems reports them: a table cell that
cannot be decoded, a record that is no object, the size limits and valid text of the record
as given, two columns for one field, contexts written as text, DeepEval's ``tools_called``
as a trace, a trace's OpenTelemetry ids, ``metadata``, the field types, the required fields,
a reused id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

from pydantic import ValidationError

from assay._samples import Sample
from assay._traces import trace_ids
from assay.errors import SampleError
from assay.run._data._mapping import IDEAL_CONTEXT_COLUMNS, TOOLS_CALLED, Fields, likely_column, map_advice
from assay.run._data._rows import _DEFAULT_LIMITS, MAX_NESTING, Row, SizeLimits
from assay.run._data._text import contexts_from_text

__all__ = [
    "checked_row",
    "missing_problem",
    "required_fields",
    "row_from_fields",
    "sample_from_fields",
    "size_problem",
    "text_problem",
    "trace_from_tools_called",
]


def sample_from_fields(
    fields: Fields,
    *,
    source: str | None = None,
    required: Iterable[str] = (),
    seen_ids: MutableMapping[str, int] | None = None,
    limits: SizeLimits | None = None,
    notes: list[str] | None = None,
) -> Sample:
    """Build a :class:`Sample` from a record's fields, naming the row in any error.

    Args:
        fields: The record turned into fields by the mapping (its place: line, unit, label).
        source: The file the row came from, for errors.
        required: Fields that must be present and not blank (empty or only whitespace text, an
            empty list or a list of blank contexts is absent; see :func:`missing_problem`).
        seen_ids: Id -> number of the row that used it, shared by all rows of one read; a
            row reusing an id is an error, and a good row's id is added.
        limits: How much text the row may hold (default: :class:`SizeLimits`'s defaults).
        notes: Where to add what was taken on trust (keys of :data:`NOTES`): ``contexts``
            given as one string is one context, or the list a JSON or Python list literal
            in it holds.

    Raises:
        SampleError: the row is not an object, holds a text longer than
            ``limits.max_field_chars`` or more text than ``limits.max_row_chars``, holds
            text that is not valid Unicode or is nested too deep, gives one field in two
            columns, has a field of the wrong type, lacks a required field, or reuses an id.
    """
    place = fields.record
    line, unit, label = place.line, place.unit, place.label

    def error(message: str) -> SampleError:
        return SampleError(message, source=source, line=line, unit=unit, label=label)

    if fields.cell_problem is not None:
        raise error(fields.cell_problem)
    if fields.values is None:
        raise error(f"expected a JSON object, got {type(fields.value).__name__}")
    problem = size_problem(fields.value, limits or _DEFAULT_LIMITS) or text_problem(fields.value)
    if problem is not None:
        raise error(problem)
    if fields.problem is not None:
        raise error(fields.problem)
    values, columns = dict(fields.values), dict(fields.columns)
    if isinstance(values.get("contexts"), str):
        try:
            contexts = contexts_from_text(values["contexts"])
        except ValueError as exc:
            raise error(f"field '{columns['contexts']}': {exc}") from None
        if notes is not None:
            notes.append("contexts_list_text" if isinstance(contexts, list) else "contexts_string")
        values["contexts"] = contexts if isinstance(contexts, list) else [contexts]
    if notes is not None and _missing_as_text(values):
        notes.append("missing_as_text")
    if fields.tools_called is not None:
        values["trace"] = trace_from_tools_called(values, fields.tools_called, error)
    if values.get("trace") is not None:
        _keep_trace_ids(values, columns, error, notes)
    if fields.metadata_problem is not None:
        raise error(fields.metadata_problem)
    named = not (values.get("id") is None or (isinstance(values["id"], str) and not values["id"].strip()))
    if not named:
        values["id"] = f"line-{line}" if line is not None else None
    values["metadata"] = dict(fields.metadata)
    try:
        sample = Sample.model_validate(values)
    except ValidationError as exc:
        raise error("; ".join(_describe(err, columns) for err in exc.errors()[:3])) from None
    problem = missing_problem(sample, required, fields.value)
    if problem is not None:
        raise error(problem)
    if seen_ids is not None and line is not None:
        first = seen_ids.setdefault(sample.id, line)
        if first != line:
            earlier = f"{unit} {first}" if label is None else f"row {first} (counted from 1)"
            if not named:  # the id this row was given, not one it holds
                raise error(
                    f"the row has no id, and the one it would be given, {sample.id!r}, is used on {earlier}; "
                    "give it an id"
                )
            raise error(f"id {sample.id!r} already used on {earlier}; ids must be unique")
    return sample


def row_from_fields(fields: Fields, **checks: Any) -> Row | SampleError:
    """One input row as a :class:`Row` (with what was taken on trust), or its :class:`SampleError`.

    ``checks`` are :func:`sample_from_fields`'s keyword arguments (source, required,
    seen_ids, limits): every source's records and ``evaluate``'s own items become rows here.
    """
    notes: list[str] = []
    try:
        sample = sample_from_fields(fields, notes=notes, **checks)
    except SampleError as exc:
        return exc
    line = fields.record.line
    assert line is not None, "every source numbers its records"
    return Row(sample, line, tuple(notes))


def checked_row(row: Row, required: Iterable[str], source: str | None) -> Row | SampleError:
    """A row read before (handed over in a list) checked for the fields ``required`` now."""
    problem = missing_problem(row.sample, required)
    return row if problem is None else SampleError(problem, source=source, line=row.line)


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


def _keep_trace_ids(
    fields: dict[str, Any], columns: Mapping[str, str], error: Callable[[str], SampleError], notes: list[str] | None
) -> None:
    """Fill ``trace_id``, ``span_id`` and ``response_id`` from a trace given as an OTLP export.

    A column wins for the span and the response (a row may point at its LLM span rather
    than the root); a ``trace_id`` column naming another trace than the spans' is a row
    error, since the scores would land on the wrong trace.
    """
    ids = trace_ids(fields["trace"])
    if ids is None:
        return
    if ids.n_traces > 1:
        if notes is not None:
            notes.append("trace_ids_several")
        return
    given = fields.get("trace_id")
    if isinstance(given, str) and ids.trace_id is not None and given.lower() != ids.trace_id:
        raise error(
            f"field '{columns['trace_id']}' is {given!r}, but the spans in field '{columns['trace']}' are in trace "
            f"{ids.trace_id}; give the row's own trace id, or leave the column out to keep the spans' id"
        )
    for name, value in (("trace_id", ids.trace_id), ("span_id", ids.span_id), ("response_id", ids.response_id)):
        if value is not None and fields.get(name) is None:
            fields[name] = value


def missing_problem(sample: Sample, required: Iterable[str], record: Mapping[str, Any] | None = None) -> str | None:
    """What makes ``sample`` unjudgeable for lack of a field (``missing or empty field 'contexts'``), or ``None``.

    The one wording of a row that lacks a required field, whatever door it came in by.
    ``record`` (the row as given) lets the message name an ideal-context column. Blank text
    is no text (:meth:`~assay.Sample.field_present`): an answer of ``""`` or only whitespace
    is a missing answer, and contexts that are all blank (``[""]``) are no contexts. Required
    contexts that mix blank and real passages are refused too: a retrieved passage with no
    text cannot be judged, and dropping it would move every later passage up a rank, which
    changes what context precision scores (an average over ranks) without a word. The user
    removes it, or fixes the retriever that returned it.
    """
    missing = [name for name in required if not sample.field_present(name)]
    if not missing:
        if "contexts" not in required:
            return None
        blank = [i for i, text in enumerate(sample.contexts) if not text.strip()]
        return _blank_contexts_problem(blank, len(sample.contexts)) if blank else None
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


def _blank_contexts_problem(blank: list[int], n_contexts: int) -> str:
    """The contexts at ``blank`` are empty or only whitespace, among ``n_contexts`` that are not all blank."""
    shown = ", ".join(f"'contexts[{i}]'" for i in blank[:_BLANK_SHOWN])
    more = f" and {len(blank) - _BLANK_SHOWN} more" if len(blank) > _BLANK_SHOWN else ""
    one = len(blank) == 1
    return (
        f"field{'' if one else 's'} {shown}{more} {'is' if one else 'are'} empty or only whitespace "
        f"({len(blank)} of the row's {n_contexts} contexts); remove blank contexts from the list: assay "
        "does not drop them itself, since the later ones would move up a rank and change context precision"
    )


_BLANK_SHOWN = 3


def required_fields(metrics: Iterable[Any]) -> tuple[str, ...]:
    """The fields a row must have to be judged by every one of ``metrics`` (their ``required_fields``), sorted."""
    return tuple(sorted({name for metric in metrics for name in metric.required_fields}))


def _describe(err: Any, columns: Mapping[str, str]) -> str:
    """One pydantic error as ``field 'column[0]': message``, naming the column as written."""
    loc = list(err["loc"])
    head = str(loc[0]) if loc else ""
    path = columns.get(head, head) + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"field '{path}': {message}"


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


_MISSING_WORDS = frozenset({"nan", "none", "null"})
"""What a missing value becomes when written as text: pandas' ``nan``, Python's ``None``, JSON's ``null``."""


def _missing_as_text(values: Mapping[str, Any]) -> bool:
    """Whether a text field (or a context) is the whole text of a missing value, e.g. a CSV cell ``nan``."""
    texts = [values.get(name) for name in ("question", "answer", "reference")]
    contexts = values.get("contexts")
    if isinstance(contexts, list):
        texts.extend(contexts)
    return any(isinstance(text, str) and text.strip().casefold() in _MISSING_WORDS for text in texts)
