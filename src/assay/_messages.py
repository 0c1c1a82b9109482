"""The turns of a multi-turn trace: assay's one message shape, below samples and trace readers alike."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Message", "ToolCall"]


class ToolCall(BaseModel):
    """One tool call made by an assistant turn.

    Also accepts OpenAI's shape, ``{"id", "type": "function", "function": {"name",
    "arguments": "<JSON string>"}}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _openai_shape(cls, value: object) -> object:
        if isinstance(value, dict) and isinstance(value.get("function"), dict):
            function = value["function"]
            arguments = function.get("arguments") or {}
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments) if arguments.strip() else {}
                except json.JSONDecodeError as exc:
                    raise ValueError(f"tool call arguments are not valid JSON: {exc.msg}") from None
            return {"name": function.get("name"), "arguments": arguments, "id": value.get("id")}
        return value


class Message(BaseModel):
    """One turn of a multi-turn trace (agents): assay's one trace shape.

    Traces in other formats (OpenAI Responses, Anthropic, LangChain, OpenInference) are
    converted to it by :func:`assay.load_trace`. A ``tool`` message is a tool's result:
    ``name`` is the tool, ``tool_call_id`` the call it answers, ``is_error`` whether the
    tool failed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
