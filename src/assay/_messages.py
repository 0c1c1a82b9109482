"""The turns of a multi-turn trace: assay's one message shape, below samples and trace readers alike."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.errors import json_message

__all__ = ["INVALID_ARGUMENTS", "Message", "ToolCall"]


class ToolCall(BaseModel):
    r"""One tool call: the tool's name and its arguments (a JSON object).

    Accepted as people keep them:

    - assay's shape, ``{"name", "arguments": {...}, "id"}``;
    - arguments as a JSON string (``"arguments": "{\"order\": 7}"``), as OpenAI sends them;
    - OpenAI's shape, ``{"id", "type": "function", "function": {"name", "arguments"}}``;
    - Ragas' ``ToolCall``, ``{"name", "args": {...}}``;
    - DeepEval's ``ToolCall``, ``{"name", "input_parameters": {...}}`` (its ``description``
      and ``reasoning`` are dropped; its ``output``, the tool's result, is not part of a call
      and is dropped too: calls are matched on name and arguments);
    - Inspect's ``ToolCall``, ``{"id", "function": "name", "arguments": {...}}``;
    - tau-bench's ``Action``, ``{"name", "kwargs": {...}}`` (its tasks' expected actions);
    - Anthropic's ``tool_use`` block, ``{"type": "tool_use", "id", "name", "input": {...}}``.

    Any other key is an error that names it and the keys accepted.

    Arguments that are not a JSON object (a string that does not parse, a list) are an
    error naming the call: a reference call is the dataset's, and a guess would change what
    it asks for. An agent's call with unreadable arguments is kept by the trace readers,
    with the raw text under :data:`INVALID_ARGUMENTS` (the agent did call the tool, badly).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _other_shapes(cls, value: object) -> object:
        if not isinstance(value, dict):
            return value
        data = dict(value)
        function = data.get("function")
        if isinstance(function, dict):  # OpenAI
            data = {"name": function.get("name"), "arguments": function.get("arguments"), "id": data.get("id")}
        elif isinstance(function, str) and "name" not in data:  # Inspect (its parse_error and view are dropped)
            data = {"name": function, "arguments": data.get("arguments"), "id": data.get("id")}
        for key in _ARGUMENT_KEYS:
            if key in data and "arguments" not in data:
                data["arguments"] = data.pop(key)
        for key in ("description", "reasoning", "output", "type"):  # DeepEval's and OpenAI's annotations
            data.pop(key, None)
        unknown = sorted(set(data) - {"name", "arguments", "id"})
        if unknown:
            raise ValueError(
                f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} in a tool call: "
                "give 'name' and the arguments as 'arguments' (or "
                + ", ".join(repr(k) for k in _ARGUMENT_KEYS)
                + "), or OpenAI's {'function': {'name', 'arguments'}}"
            )
        data["arguments"] = _arguments_object(data.get("arguments"))
        return data


_ARGUMENT_KEYS = ("args", "input_parameters", "kwargs", "input")
"""Other names of a tool call's arguments: Ragas', DeepEval's, tau-bench's, Anthropic's."""


INVALID_ARGUMENTS = "__invalid_arguments__"
"""The argument key under which a trace keeps an agent's call whose arguments did not parse."""


def _arguments_object(arguments: object) -> object:
    """A JSON-string argument list parsed to its object; ``None`` or ``""`` is no arguments."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"tool call arguments are not valid JSON ({json_message(exc)} at column {exc.colno}): "
                f"{arguments[:80]!r}"
            ) from None
        if not isinstance(parsed, dict):
            raise ValueError(f"tool call arguments must be a JSON object, got {type(parsed).__name__}")
        return parsed
    return arguments


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
