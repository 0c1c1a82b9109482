"""Tool-call accuracy: did the agent make the expected tool calls, with the expected arguments?"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from assay._samples import Message, Sample, ToolCall
from assay._scores import MetricSpec, Score, Verdict
from assay.errors import ConfigError, counted
from assay.metrics._common import missing_field
from assay.metrics._endstate import Action, StateChanges, read_end_state
from assay.metrics._matching import ArgumentMatch, bipartite_pairs, lcs_pairs, same_json
from assay.metrics._spec import spec_from_fields
from assay.metrics._trace import format_tool_call
from assay.models._protocol import JudgeModel

__all__ = ["ToolCallAccuracy", "actual_tool_calls"]

Trajectory = Literal["score", "exact", "unordered", "in_order", "superset", "subset"]
CallScope = Literal["all", "ignore_extra_reads", "state_changing"]


def actual_tool_calls(trace: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The tool calls of the assistant messages of ``trace``, in order."""
    return tuple(call for message in trace if message.role == "assistant" for call in message.tool_calls)


def _shallow_difference(expected: ToolCall, actual: ToolCall) -> str | None:
    """Version 1's ``ignore_extra_arguments``: the expected keys at the top level, values exactly equal."""
    if expected.name != actual.name:
        return f"{actual.name} is not {expected.name}"
    parts = []
    missing = [k for k in expected.arguments if k not in actual.arguments]
    if missing:
        parts.append("missing arguments " + ", ".join(missing))
    for k, v in expected.arguments.items():
        if k in actual.arguments and not same_json(v, actual.arguments[k]):
            parts.append(f"{k}: expected {_json(v)}, got {_json(actual.arguments[k])}")
    return "; ".join(parts) or None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class ToolCallAccuracy:
    """Expected tool calls vs the calls the agent made. No judge.

    Expected calls are ``sample.reference_tool_calls`` (an empty list: the agent should call
    nothing); actual calls are the tool calls of the assistant messages of ``sample.trace``,
    in order. A pair matches when the names are equal and the arguments match as
    ``arguments`` says (default: exactly, as JSON values: ``1 == 1.0``, ``"1" != 1``,
    ``True != 1``). Calls are paired by a maximum matching: order-preserving (a longest
    common subsequence; other calls may sit between) or as multisets.

    ``trajectory`` says what is scored. ``"score"`` (the default) is a share::

        score = matched pairs / max(len(expected), len(actual charged))

    (1 when both are empty) so a missing call and an extra call each cost as much as a wrong
    one; pairing is order-preserving when ``strict_order``. The other modes are 1 or 0, as
    peers name them:

    =============  ===========================================  ==============================
    ``exact``      the same calls in the same order, no others  Vertex ``trajectory_exact_
                                                                match``, agentevals ``strict``
    ``unordered``  the same calls in any order, no others       agentevals ``unordered``
    ``in_order``   every expected call, in order; others may    Vertex ``trajectory_in_order_
                   sit between                                  match``
    ``superset``   every expected call, any order; others free  Vertex ``trajectory_any_order_
                                                                match``, agentevals ``superset``
    ``subset``     no call outside the expected ones; some      agentevals ``subset``
                   expected calls may be missing
    =============  ===========================================  ==============================

    ``calls`` chooses which calls count:

    - ``"all"``: every call, on both sides.
    - ``"ignore_extra_reads"``: a read-only call (see :class:`StateChanges`) that pairs with
      no expected call is not charged: looking things up is free, but expected reads must
      still be made.
    - ``"state_changing"``: only state-changing calls, on both sides (a reference that lists
      reads is compared on its state-changing calls only). Failed calls still count here (this
      metric is about the calls made); :class:`~assay.metrics.AgentStateMatch` compares
      what was *done*.

    One verdict per expected call (subject ``name({...})``); a 0 says what differed (no
    call to that tool, which arguments were missing, extra or different, or that the
    matching call was out of order). Extra calls are listed in the explanation. This is
    stricter than Ragas' ToolCallAccuracy, which averages per-argument matches over aligned
    calls and does not penalise extra calls unless they break the order.

    Args:
        strict_order: For ``trajectory="score"``: expected calls must appear in order.
            (``exact`` and ``in_order`` are ordered; ``unordered``, ``superset`` and
            ``subset`` are not, whatever this says.)
        ignore_extra_arguments: Version 1's option: an actual call may pass top-level
            arguments the expected call does not list (nested values compare exactly).
            ``arguments=ArgumentMatch(mode="expected_keys")`` does this at every depth.
        calls: Which calls count: ``all``, ``ignore_extra_reads`` or ``state_changing``.
        trajectory: ``score`` or a binary mode (above).
        arguments: How arguments are compared (:class:`ArgumentMatch`; by default exactly,
            strings not normalised, as in version 1).
        state: Which tools change state (for ``calls`` other than ``all``).
    """

    strict_order: bool = True
    ignore_extra_arguments: bool = False
    calls: CallScope = "all"
    trajectory: Trajectory = "score"
    arguments: ArgumentMatch = field(default_factory=lambda: ArgumentMatch(normalize=False))
    state: StateChanges = field(default_factory=StateChanges)
    name: str = field(default="tool_call_accuracy", init=False)
    version: str = field(default="1", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("trace", "reference_tool_calls")
    """The trace (where the actual calls are) and the expected calls."""

    def __post_init__(self) -> None:
        if self.calls not in ("all", "ignore_extra_reads", "state_changing"):
            raise ConfigError(
                f"tool_call_accuracy: calls must be all, ignore_extra_reads or state_changing, not {self.calls!r}"
            )
        if self.trajectory not in ("score", "exact", "unordered", "in_order", "superset", "subset"):
            raise ConfigError(
                "tool_call_accuracy: trajectory must be score, exact, unordered, in_order, superset or subset, "
                f"not {self.trajectory!r}"
            )
        if self.ignore_extra_arguments and self.arguments.mode != "exact":
            raise ConfigError(
                "tool_call_accuracy: give either ignore_extra_arguments or an arguments mode, not both "
                "(arguments=ArgumentMatch(mode='expected_keys') is the newer form)"
            )

    def spec(self) -> MetricSpec:
        """Name, version and the matching options."""
        return spec_from_fields(self)

    @property
    def ordered(self) -> bool:
        """Whether pairing keeps the order of the calls."""
        if self.trajectory == "score":
            return self.strict_order
        return self.trajectory in ("exact", "in_order")

    def difference(self, expected: ToolCall, actual: ToolCall) -> str | None:
        """``None`` when ``actual`` satisfies ``expected``, else what differs."""
        if self.ignore_extra_arguments:
            return _shallow_difference(expected, actual)
        return self.arguments.difference(expected, actual)

    def matches(self, expected: ToolCall, actual: ToolCall) -> bool:
        """Whether ``actual`` satisfies ``expected``: same name and (enough of) the same arguments."""
        return self.difference(expected, actual) is None

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Match expected calls to actual calls and count the matches (``judge`` is not used)."""
        spec = self.spec()
        if sample.reference_tool_calls is None:
            return missing_field(self.name, "sample has no reference_tool_calls", spec)
        if not sample.trace:
            return missing_field(self.name, "sample has no trace", spec)
        end = read_end_state(sample.trace, self.state, sample.metadata)
        n_calls = len(end.actions)
        expected = list(sample.reference_tool_calls)
        actual: list[Action] = list(end.actions)
        if self.calls == "state_changing":
            expected = self.state.changing(expected, sample.metadata)
            actual = [a for a in actual if a.state_changing]
        calls = [a.call for a in actual]
        pairing = lcs_pairs if self.ordered else bipartite_pairs
        pairs = pairing(len(expected), len(actual), lambda i, j: self.matches(expected[i], calls[j]))
        matched = dict(pairs)
        used = set(matched.values())
        free_reads = self.calls == "ignore_extra_reads"
        extra = [j for j in range(len(actual)) if j not in used and not (free_reads and not actual[j].state_changing)]
        verdicts = []
        for i, call in enumerate(expected):
            if i in matched:
                reason = f"matched call {actual[matched[i]].number} of {n_calls}"
            else:
                reason = self._why_not(call, i, actual, used, matched)
            verdicts.append(Verdict(subject=format_tool_call(call), value=1 if i in matched else 0, reason=reason))
        compared = {"all": "", "ignore_extra_reads": " (extra read calls not charged)", "state_changing": ""}[
            self.calls
        ]
        what = (
            f"expected state-changing call{'s' if len(expected) != 1 else ''}"
            if self.calls == "state_changing"
            else f"expected call{'s' if len(expected) != 1 else ''}"
        )
        made = (
            f"{counted(len(actual), 'state-changing call')} made"
            if self.calls == "state_changing"
            else f"{counted(n_calls, 'call')} made"
        )
        explanation = f"{len(pairs)} of {len(expected)} {what} matched; {made}{compared}"
        if extra:
            explanation += "; unmatched calls made: " + " | ".join(
                f"{actual[j].number}: {format_tool_call(calls[j])}" for j in extra
            )
        value = self._value(len(expected), len(pairs), len(extra))
        if self.trajectory != "score":
            explanation = f"{self.trajectory} match {'holds' if value else 'fails'}: {explanation}"
        return Score.scored(self.name, value, verdicts=verdicts, explanation=explanation, spec=spec)

    def _value(self, n_expected: int, n_matched: int, n_extra: int) -> float:
        missing = n_expected - n_matched
        if self.trajectory == "score":
            denominator = max(n_expected, n_matched + n_extra)
            return n_matched / denominator if denominator else 1.0
        if self.trajectory in ("exact", "unordered"):
            return float(missing == 0 and n_extra == 0)
        if self.trajectory in ("in_order", "superset"):
            return float(missing == 0)
        return float(n_extra == 0)  # subset

    def _why_not(
        self,
        call: ToolCall,
        i: int,
        actual: Sequence[Action],
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
            if self.ordered:
                lo = max((j for k, j in matched.items() if k < i), default=-1)
                hi = min((j for k, j in matched.items() if k > i), default=len(actual))
                in_place = [j for j in free if lo < j < hi]
                if not in_place and any(self.matches(call, actual[j].call) for j in free):
                    return f"a matching call to {call.name} was made, but out of order"
                free = in_place or free
            j = free[0]
            return f"call {actual[j].number} to {call.name} differs: {self.difference(call, actual[j].call)}"
        return f"every call to {call.name} was already matched to another expected call"
