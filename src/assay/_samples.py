"""The items assay judges."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from assay._messages import Message, ToolCall
from assay._traces import load_trace
from assay.errors import TraceFormatError

__all__ = ["Message", "Sample", "ToolCall", "context_text"]

_LOWER_HEX = re.compile(r"[0-9a-f]+")


def context_text(item: object) -> str | None:
    """The text of one context: a string, or a LangChain ``Document`` as an object or serialized; else ``None``.

    Retrievers built on LangChain return ``Document`` objects (``page_content`` and
    ``metadata``); their ``.dict()`` / JSON form is ``{"page_content": ..., "metadata": ...}``
    and LangChain's ``dumpd`` wraps it as ``{"kwargs": {"page_content": ...}}``. The text
    is judged; the metadata is not. Duck-typed: assay never imports LangChain.
    """
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        inner = item.get("kwargs") if isinstance(item.get("kwargs"), Mapping) else item
        content = inner.get("page_content") if isinstance(inner, Mapping) else None
        return content if isinstance(content, str) else None
    content = getattr(item, "page_content", None)
    return content if isinstance(content, str) else None


def _one_context(item: object) -> str:
    text = context_text(item)
    if text is None:
        raise PydanticCustomError(
            "context_type", "expected a string (or a LangChain Document), got {kind}", {"kind": _kind(item)}
        )
    return text


_Context = Annotated[str, BeforeValidator(_one_context)]
"""One context: a string, or a LangChain ``Document`` (its ``page_content``)."""


def _kind(value: object) -> str:
    """What a value is, in JSON's words where it has one (for row errors)."""
    names = {dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number"}
    if value is None:
        return "null"
    name = next((text for kind, text in names.items() if type(value) is kind), None)
    return f"{name} ({type(value).__name__})" if name else f"a {type(value).__name__}"


class Sample(BaseModel):
    """One item to judge.

    Every text field is *untrusted*: prompts quote it as delimited data and never let it
    change the judge's instructions.

    Attributes:
        id: A stable identifier (the dataset's ``id`` field, else ``line-N``).
        question: The user input (``input`` is accepted as an alias).
        answer: The output being judged (``output``, ``response`` and ``actual_output``
            are aliases). Empty or only whitespace counts as no answer (:meth:`field_present`).
        contexts: Retrieved passages the answer should be grounded in.
        reference: A reference answer or goal, where the metric uses one.
        trace: A multi-turn conversation, for agent metrics. Given in any format
            :func:`assay.load_trace` reads (OpenAI chat or Responses, Anthropic,
            LangChain, OpenInference spans), it is converted to :class:`Message`.
        reference_tool_calls: The tool calls an agent was expected to make, in order.
            ``None`` when the sample gives none; an empty list means the agent should call
            nothing, and is judged as such. Calls are read in OpenAI's, Ragas', DeepEval's
            and Inspect's shapes, arguments as an object or a JSON string (:class:`ToolCall`).
        metadata: Anything else from the row, kept and passed through to results.
        trace_id: The OpenTelemetry trace the row came from (32 lowercase hex digits):
            given as a column, or kept from a ``trace`` that is an OTLP export.
            ``assay export`` writes the row's scores into this trace.
        span_id: The span that was judged (16 lowercase hex digits; from an OTLP
            trace, its root span).
        response_id: The model response judged (``gen_ai.response.id``), where known.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    id: str
    question: str | None = None
    answer: str | None = None
    contexts: tuple[_Context, ...] = ()
    reference: str | None = None
    trace: tuple[Message, ...] = ()
    reference_tool_calls: tuple[ToolCall, ...] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    trace_id: str | None = None
    span_id: str | None = None
    response_id: str | None = None

    @field_validator("trace_id", "span_id", mode="before")
    @classmethod
    def _otel_id(cls, value: object, info: ValidationInfo) -> object:
        # Lowercase hex, as OpenTelemetry writes ids (W3C traceparent): an id in another
        # shape would put the scores on no span, or on the wrong one, without a word.
        if value is None:
            return None
        digits = 32 if info.field_name == "trace_id" else 16
        what = "trace" if digits == 32 else "span"
        if not isinstance(value, str) or not _LOWER_HEX.fullmatch(value) or len(value) != digits:
            shown = repr(value) if isinstance(value, str) else _kind(value)
            raise PydanticCustomError(
                "otel_id",
                "expected an OpenTelemetry {what} id, {digits} lowercase hex digits, got {shown}",
                {"what": what, "digits": digits, "shown": shown[:80]},
            )
        if not value.strip("0"):
            raise PydanticCustomError("otel_id", "an all-zero {what} id is OpenTelemetry's invalid id", {"what": what})
        return value

    @field_validator("id", mode="before")
    @classmethod
    def _id_to_str(cls, value: object) -> object:
        # Ids are text. Whole numbers are common (JSONL ids, and a pandas id column with a
        # gap is float64), so 17 and 17.0 both become "17"; anything else would be a guess.
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is a boolean, not an id; give ids as text or whole numbers")
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            if value.is_integer():
                return str(int(value))
            raise ValueError(f'{value!r} is not a whole number; write the id as text ("{value}")')
        return value

    @field_validator("trace", mode="before")
    @classmethod
    def _any_trace_format(cls, value: object) -> object:
        try:
            return load_trace(value)
        except TraceFormatError as exc:  # the located message as is, not "Value error, ..."
            raise PydanticCustomError("trace_format", "{message}", {"message": str(exc)}) from None

    @field_validator("contexts", mode="before")
    @classmethod
    def _contexts(cls, value: object) -> object:
        # A single string (or Document) is one context, not a sequence of characters.
        single = context_text(value)
        if single is not None:
            return (single,)
        if not isinstance(value, Sequence) or isinstance(value, bytes | bytearray):
            raise PydanticCustomError(
                "contexts_type",
                "expected a list of strings (or one string), got {kind}",
                {"kind": _kind(value)},
            )
        return value  # each item: _one_context, which names the item's place and type

    def field_present(self, name: str) -> bool:
        """Whether the field ``name`` holds a usable value.

        Text that is empty or only whitespace is absent, the answer's too: a null answer,
        an empty CSV cell, ``""`` and ``"  "`` are one thing in every format (CSV cannot
        tell null from empty), and a row that needs the field is an invalid row, never a
        score. ``contexts`` are absent when the list is empty or every context in it is
        blank (``[""]`` is ``[]``); a list mixing blank and real contexts is refused when
        a row is read (:func:`~assay.run._data._validate.missing_problem`). An empty list of
        reference tool calls is present: it says the agent should call nothing.
        """
        value = getattr(self, name)
        if value is None:
            return False
        if name == "reference_tool_calls":
            return True
        if isinstance(value, str):
            return bool(value.strip())
        if name == "contexts":
            return any(text.strip() for text in value)
        if isinstance(value, tuple):
            return len(value) > 0
        return True
