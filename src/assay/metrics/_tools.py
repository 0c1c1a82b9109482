"""Tool-call accuracy: did the agent make the expected tool calls, with the expected arguments?"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay._samples import Message, Sample, ToolCall
from assay._scores import MetricSpec, Score, Verdict
from assay.metrics._common import missing_field
from assay.metrics._spec import spec_from_fields
from assay.metrics._trace import format_tool_call
from assay.models._protocol import JudgeModel

__all__ = ["ToolCallAccuracy", "actual_tool_calls"]


def actual_tool_calls(trace: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The tool calls of the assistant messages of ``trace``, in order."""
    return tuple(call for message in trace if message.role == "assistant" for call in message.tool_calls)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _same(a: Any, b: Any) -> bool:
    # Exact JSON equality: 1 == 1.0 as in JSON, but True is not 1 and "1" is not 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def _lcs_pairs(n: int, m: int, match: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """An order-preserving maximum matching (longest common subsequence); ties favour earlier expected calls."""
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if match(i, j):
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if match(i, j) and table[i][j] == table[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i += 1
            j += 1
        elif table[i][j + 1] >= table[i + 1][j]:  # on a tie, keep the earlier expected call in play
            j += 1
        else:
            i += 1
    return pairs


def _bipartite_pairs(n: int, m: int, match: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """A maximum matching ignoring order (Kuhn's augmenting paths; expected calls tried in order)."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j in range(m):
            if j in seen or not match(i, j):
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(n):
        place(i, set())
    return sorted((i, j) for j, i in owner.items())


@dataclass(frozen=True)
class ToolCallAccuracy:
    """Share of tool calls that match: expected calls vs the calls the agent made. No judge.

    Expected calls are ``sample.reference_tool_calls``; actual calls are the tool calls of
    the assistant messages of ``sample.trace``, in order. A pair matches when the names
    are equal and the arguments are equal as JSON values (``1 == 1.0``; ``"1" != 1``;
    ``True != 1``). Calls are paired by a maximum matching: order-preserving (a longest
    common subsequence) when ``strict_order``, else as multisets. Then::

        score = matched pairs / max(len(expected), len(actual))

    so a missing call and an extra call each cost as much as a wrong one. This is stricter
    than Ragas' ToolCallAccuracy, which averages per-argument matches over aligned calls
    and does not penalise extra calls unless they break the order.

    One verdict per expected call (subject ``name({...})``); a 0 says what differed (no
    call to that tool, which arguments were missing, extra or different, or that the
    matching call was out of order). Extra actual calls are listed in the explanation.

    Args:
        strict_order: Expected calls must appear in order (other calls may sit between them).
        ignore_extra_arguments: An actual call may pass arguments the expected call does not list.
    """

    strict_order: bool = True
    ignore_extra_arguments: bool = False
    name: str = field(default="tool_call_accuracy", init=False)
    version: str = field(default="1", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("trace", "reference_tool_calls")
    """The trace (where the actual calls are) and the expected calls."""

    def spec(self) -> MetricSpec:
        """Name, version and the matching options."""
        return spec_from_fields(self)

    def matches(self, expected: ToolCall, actual: ToolCall) -> bool:
        """Whether ``actual`` satisfies ``expected``: same name and (enough of) the same arguments."""
        if expected.name != actual.name:
            return False
        if self.ignore_extra_arguments:
            return all(k in actual.arguments and _same(v, actual.arguments[k]) for k, v in expected.arguments.items())
        return _same(expected.arguments, actual.arguments)

    def _difference(self, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
        parts = []
        missing = [k for k in expected if k not in actual]
        if missing:
            parts.append("missing arguments " + ", ".join(missing))
        if not self.ignore_extra_arguments:
            extra = [k for k in actual if k not in expected]
            if extra:
                parts.append("unexpected arguments " + ", ".join(extra))
        for k, v in expected.items():
            if k in actual and not _same(v, actual[k]):
                parts.append(f"{k}: expected {_json(v)}, got {_json(actual[k])}")
        return "; ".join(parts)

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Match expected calls to actual calls and count the matches (``judge`` is not used)."""
        spec = self.spec()
        if not sample.reference_tool_calls:
            return missing_field(self.name, "sample has no reference_tool_calls", spec)
        if not sample.trace:
            return missing_field(self.name, "sample has no trace", spec)
        expected = sample.reference_tool_calls
        actual = actual_tool_calls(sample.trace)
        pairing = _lcs_pairs if self.strict_order else _bipartite_pairs
        pairs = pairing(len(expected), len(actual), lambda i, j: self.matches(expected[i], actual[j]))
        matched = dict(pairs)
        used = set(matched.values())
        verdicts = []
        for i, call in enumerate(expected):
            if i in matched:
                reason = f"matched call {matched[i] + 1} of {len(actual)}"
            else:
                reason = self._why_not(call, i, actual, used, matched)
            verdicts.append(Verdict(subject=format_tool_call(call), value=1 if i in matched else 0, reason=reason))
        extra = [f"{j + 1}: {format_tool_call(c)}" for j, c in enumerate(actual) if j not in used]
        explanation = f"{len(pairs)} of {len(expected)} expected calls matched; {len(actual)} calls made"
        if extra:
            explanation += "; unmatched calls made: " + " | ".join(extra)
        value = len(pairs) / max(len(expected), len(actual))
        return Score.scored(self.name, value, verdicts=verdicts, explanation=explanation, spec=spec)

    def _why_not(
        self,
        call: ToolCall,
        i: int,
        actual: Sequence[ToolCall],
        used: set[int],
        matched: Mapping[int, int],
    ) -> str:
        """Why expected call ``i`` found no partner: the closest unmatched call, or none."""
        same_name = [j for j, c in enumerate(actual) if c.name == call.name]
        if not same_name:
            return f"no call to {call.name} was made"
        free = [j for j in same_name if j not in used]
        if free:
            # Where an order-preserving partner would have to sit: after the previous match, before the next.
            if self.strict_order:
                lo = max((j for k, j in matched.items() if k < i), default=-1)
                hi = min((j for k, j in matched.items() if k > i), default=len(actual))
                in_place = [j for j in free if lo < j < hi]
                if not in_place and any(self.matches(call, actual[j]) for j in free):
                    return f"a matching call to {call.name} was made, but out of order"
                free = in_place or free
            j = free[0]
            return f"call {j + 1} to {call.name} differs: {self._difference(call.arguments, actual[j].arguments)}"
        return f"every call to {call.name} was already matched to another expected call"
