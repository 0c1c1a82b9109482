"""Flattening a multi-turn agent trace into text a judge can read.

The formatter is part of an agent metric's identity: the same trace rendered differently
is a different question to the judge, so the formatter's :attr:`TraceFormatter.version`
and options go into the metric's spec. Bump the version whenever the output changes.

Layout (version 1), one block per message, blocks separated by a blank line::

    [1] USER: I want to book a flight.
    [2] ASSISTANT: Your user id, please?
    [3] ASSISTANT CALLS get_user_details({"user_id": "mia_li_3668"})
    [4] TOOL RESULT get_user_details: {"name": "Mia Li", ... … [truncated 1200 characters] … "dob": "1990-04-05"}

A tool result whose tool failed (``Message.is_error``) reads ``TOOL ERROR name: ...``.

The number is the message's position in the trace (1-based, counted before the system
prompt is dropped), so elided stretches are visible as gaps as well as by the marker.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay._samples import Message, ToolCall
from assay.errors import ConfigError
from assay.metrics._spec import fields_json

__all__ = ["TraceFormatter", "format_tool_call"]

_SEPARATOR = "\n\n"
# Room kept for the elision marker when a trace is cut to its budget.
_MARKER_ROOM = 100


def format_tool_call(call: ToolCall) -> str:
    """``name({"arg": value, ...})`` with the arguments as compact JSON in their given order."""
    arguments = json.dumps(call.arguments, ensure_ascii=False, separators=(", ", ": "), default=str)
    return f"{call.name}({arguments})"


@dataclass(frozen=True)
class TraceFormatter:
    """Renders a trace of :class:`~assay.Message` as numbered text blocks (see the module docstring).

    Args:
        include_system: Keep system messages (default: drop them; an agent's system prompt
            is usually a long policy that says nothing about what happened).
        max_tool_result_chars: Cap on each tool result's text; longer results keep their
            start and end with a ``… [truncated N characters]`` marker. ``None``: no cap.
        max_chars: Budget for the whole text. A longer trace keeps whole messages from the
            start (``head_share`` of the budget) and from the end (the rest) and replaces
            the middle with a visible marker saying how many messages and characters were
            left out. ``None``: no budget. The default, 8,000 characters (about 2,600
            tokens of tool-call JSON and prose), fits the local judge's default 4,096-token
            window with the prompt and the answer.
        head_share: The share of ``max_chars`` given to the start of the trace.
    """

    include_system: bool = False
    max_tool_result_chars: int | None = 1500
    max_chars: int | None = 8000
    head_share: float = 0.4
    version: str = field(default="1", init=False)

    def __post_init__(self) -> None:
        if self.max_tool_result_chars is not None and self.max_tool_result_chars < 20:
            raise ConfigError(f"max_tool_result_chars must be at least 20, got {self.max_tool_result_chars}")
        if self.max_chars is not None and self.max_chars < 2 * _MARKER_ROOM:
            raise ConfigError(f"max_chars must be at least {2 * _MARKER_ROOM}, got {self.max_chars}")
        if not 0.0 < self.head_share < 1.0:
            raise ConfigError(f"head_share must be strictly between 0 and 1, got {self.head_share}")

    def params(self) -> dict[str, Any]:
        """The version and every option, for a metric's spec."""
        return fields_json(self)

    def blocks(self, trace: Sequence[Message]) -> list[str]:
        """One text block per kept message (before the total budget is applied)."""
        out: list[str] = []
        for number, message in enumerate(trace, start=1):
            if message.role == "system" and not self.include_system:
                continue
            block = self._block(number, message)
            if block:
                out.append(block)
        return out

    def format(self, trace: Sequence[Message]) -> str:
        """The whole trace as text, within ``max_chars`` if set."""
        blocks = self.blocks(trace)
        text = _SEPARATOR.join(blocks)
        if self.max_chars is None or len(text) <= self.max_chars:
            return text
        return self._elide(blocks, self.max_chars)

    def _block(self, number: int, message: Message) -> str:
        content = (message.content or "").strip()
        if message.role == "tool":
            kind = "TOOL ERROR" if message.is_error else "TOOL RESULT"
            label = f"{kind} {message.name}" if message.name else kind
            return f"[{number}] {label}: {self._cap(content)}"
        if message.role == "assistant":
            lines = [f"[{number}] ASSISTANT: {content}"] if content else []
            lines.extend(f"[{number}] ASSISTANT CALLS {format_tool_call(call)}" for call in message.tool_calls)
            return "\n".join(lines)
        if not content:
            return ""
        return f"[{number}] {message.role.upper()}: {content}"

    def _cap(self, text: str) -> str:
        cap = self.max_tool_result_chars
        if cap is None or len(text) <= cap:
            return text
        head = text[: cap - cap // 4]
        tail = text[len(text) - cap // 4 :]
        return f"{head} … [truncated {len(text) - len(head) - len(tail)} characters] … {tail}"

    def _elide(self, blocks: list[str], budget: int) -> str:
        room = budget - _MARKER_ROOM
        head_room = int(room * self.head_share)
        tail_room = room - head_room
        head: list[str] = []
        used = 0
        for block in blocks:
            if used + len(block) + len(_SEPARATOR) > head_room:
                break
            head.append(block)
            used += len(block) + len(_SEPARATOR)
        if not head:  # the first message alone is over the head budget: keep its start
            head = [blocks[0][: head_room - len(_SEPARATOR) - 2] + " …"]
        n_head = len(head)
        tail: list[str] = []
        used = 0
        for block in reversed(blocks[n_head:]):
            if used + len(block) + len(_SEPARATOR) > tail_room:
                break
            tail.insert(0, block)
            used += len(block) + len(_SEPARATOR)
        if not tail and len(blocks) > n_head:  # the last message alone is over the tail budget: keep its end
            last = blocks[-1]
            tail = ["… " + last[len(last) - (tail_room - len(_SEPARATOR) - 2) :]]
        omitted = blocks[n_head : len(blocks) - len(tail)]
        omitted_chars = sum(len(b) for b in omitted)
        if head[0] != blocks[0]:
            omitted_chars += len(blocks[0]) - len(head[0]) + 2
        if tail and tail[-1] != blocks[-1]:
            omitted_chars += len(blocks[-1]) - len(tail[-1]) + 2
        marker = f"[… {len(omitted)} messages and {omitted_chars} characters omitted to fit the budget …]"
        return _SEPARATOR.join([*head, marker, *tail])
