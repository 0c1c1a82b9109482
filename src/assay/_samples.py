"""The items assay judges."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from assay._messages import Message, ToolCall
from assay._traces import load_trace
from assay.errors import TraceFormatError

__all__ = ["Message", "Sample", "ToolCall"]


class Sample(BaseModel):
    """One item to judge.

    Every text field is *untrusted*: prompts quote it as delimited data and never let it
    change the judge's instructions.

    Attributes:
        id: A stable identifier (the dataset's ``id`` field, else ``line-N``).
        question: The user input (``input`` is accepted as an alias).
        answer: The output being judged (``output``, ``response`` and ``actual_output``
            are aliases); may be empty (the system answered nothing).
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
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    id: str
    question: str | None = None
    answer: str | None = None
    contexts: tuple[str, ...] = ()
    reference: str | None = None
    trace: tuple[Message, ...] = ()
    reference_tool_calls: tuple[ToolCall, ...] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

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
    def _one_context(cls, value: object) -> object:
        # A single string is one context, not a sequence of characters.
        if isinstance(value, str):
            return (value,)
        return value

    def field_present(self, name: str) -> bool:
        """Whether the field ``name`` holds a usable value.

        Empty text and empty lists count as absent, except the answer and the reference
        tool calls: an empty answer (``""`` or only whitespace) is what the system under test
        said, so it is present and metrics score it (faithfulness: unscored
        ``no_statements``); an empty list of reference tool calls says the agent should call
        nothing.
        """
        value = getattr(self, name)
        if value is None:
            return False
        if name in ("answer", "reference_tool_calls"):
            return True
        if isinstance(value, str | tuple):
            return len(value) > 0
        return True
