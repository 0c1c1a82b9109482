"""Agent state match: did the agent make exactly the expected changes? No judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from assay._samples import Sample, ToolCall
from assay._scores import MetricSpec, Score, Verdict
from assay.metrics._common import missing_field
from assay.metrics._endstate import Action, StateChanges, read_end_state
from assay.metrics._matching import ArgumentMatch, bipartite_pairs, lcs_pairs
from assay.metrics._spec import spec_from_fields
from assay.metrics._trace import format_tool_call
from assay.models._protocol import JudgeModel

__all__ = ["AgentStateMatch"]


@dataclass(frozen=True)
class AgentStateMatch:
    """1 when the state-changing calls the agent performed are exactly the expected ones, else 0.

    Reads the end state from the trace (:func:`~assay.metrics.read_end_state`, no model):
    the *performed* changes are the state-changing calls whose result is not a failure (a
    failed attempt changed nothing; a call with no result in the trace counts, marked so).
    The *expected* changes are the state-changing calls of ``sample.reference_tool_calls``
    (the reference's read calls are not compared: looking something up changes nothing).
    The two are compared as multisets (or in order with ``strict_order``), each pair by
    ``arguments``; the score is 1 when every expected change was performed and no other
    change was. An empty reference (``[]``) expects no change at all.

    This is the check an environment makes when it compares its database with the expected
    one: on 100 tau-bench airline trajectories it agrees with the environment's reward at
    balanced accuracy 0.98 (``benchmarks/goal_accuracy.py``).

    Verdicts: one per expected change (``book({...})``: performed by call N, or why not:
    never called, only failed attempts, or the closest call and what differed) and one per
    performed change nobody expected (``unexpected: cancel({...})``, 0). ``details`` holds
    the end state (every state-changing call, succeeded or not) and the pairing.

    Args:
        state: Which tools change state and which results are failures (default: inferred
            from tool names, or the sample's ``metadata["state_changing_tools"]``).
        arguments: How arguments are compared (default: exactly, strings normalised).
        strict_order: The expected changes must be performed in their order.
    """

    state: StateChanges = field(default_factory=StateChanges)
    arguments: ArgumentMatch = field(default_factory=ArgumentMatch)
    strict_order: bool = False
    name: str = field(default="agent_state_match", init=False)
    version: str = field(default="1", init=False)
    required_fields: ClassVar[tuple[str, ...]] = ("trace", "reference_tool_calls")
    """The trace (what was done) and the expected calls."""

    def spec(self) -> MetricSpec:
        """Name, version, the state-change declaration and the matching options."""
        return spec_from_fields(self)

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Compare the performed changes with the expected ones (``judge`` is not used)."""
        spec = self.spec()
        if sample.reference_tool_calls is None:
            return missing_field(self.name, "sample has no reference_tool_calls", spec)
        if not sample.trace:
            return missing_field(self.name, "sample has no trace", spec)
        end = read_end_state(sample.trace, self.state, sample.metadata)
        expected = self.state.changing(sample.reference_tool_calls, sample.metadata)
        skipped = len(sample.reference_tool_calls) - len(expected)
        done = list(end.performed)
        pairing = lcs_pairs if self.strict_order else bipartite_pairs
        pairs = pairing(len(expected), len(done), lambda i, j: self.arguments.matches(expected[i], done[j].call))
        matched = dict(pairs)
        used = set(matched.values())
        verdicts = [
            Verdict(
                subject=format_tool_call(call),
                value=1 if i in matched else 0,
                reason=f"performed by call {done[matched[i]].number}"
                if i in matched
                else self._why_not(call, end.state_changes, done, used),
            )
            for i, call in enumerate(expected)
        ]
        extra = [a for j, a in enumerate(done) if j not in used]
        verdicts.extend(
            Verdict(
                subject=f"unexpected: {a.signature()}",
                value=0,
                reason=f"call {a.number} changed state ({a.outcome}) and no expected call asks for it",
            )
            for a in extra
        )
        value = float(len(pairs) == len(expected) and not extra)
        explanation = (
            f"{len(pairs)} of {len(expected)} expected changes performed; {len(extra)} unexpected; " + end.summary()
        )
        if skipped:
            explanation += f"; {skipped} read calls in the reference not compared"
        details = {
            "end_state": end.record(),
            "pairs": [{"expected": i + 1, "call": done[j].number} for i, j in pairs],
        }
        return Score.scored(self.name, value, verdicts=verdicts, explanation=explanation, spec=spec, details=details)

    def _why_not(self, call: ToolCall, attempts: tuple[Action, ...], done: list[Action], used: set[int]) -> str:
        """Why an expected change has no performed partner."""
        same = [a for a in attempts if a.name == call.name]
        if not same:
            return f"no call to {call.name} was made"
        free = [a for j, a in enumerate(done) if j not in used and a.name == call.name]
        if free:
            a = free[0]
            return f"call {a.number} to {call.name} differs: {self.arguments.difference(call, a.call)}"
        failed = [a for a in same if a.succeeded is False]
        if len(failed) == len(same):
            first = failed[0]
            result = " ".join((first.result or "").split())[:160]
            return f"every call to {call.name} failed (call {first.number}: {result})"
        if self.strict_order and any(self.arguments.matches(call, a.call) for a in done):
            return f"a matching call to {call.name} was performed, but out of order"
        return f"every performed call to {call.name} was already paired with another expected change"
