"""Holistic agent goal accuracy (agent goal accuracy version 1, after Ragas), kept to reproduce old runs.

It asks the judge to summarise the goal and the end state from the formatted trace and then
one holistic question. On tau-bench airline it did no better than chance (balanced accuracy
0.31-0.38 on 16 trajectories); :class:`~assay.metrics.AgentGoalAccuracy` replaced it with
an end state read from the trace and the goal as atomic requirements
(``docs/design/agents.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from assay._samples import Sample
from assay._scores import JudgeCall, MetricSpec, Score, Verdict
from assay.metrics._common import (
    check_reference_mode,
    failed,
    missing_field,
    prompt_versions,
    reference_mode_name,
)
from assay.metrics._faithfulness import StatementJudgement
from assay.metrics._spec import spec_from_fields
from assay.metrics._trace import TraceFormatter
from assay.models._protocol import GenerateConfig, JudgeModel
from assay.prompts import JudgePrompt, ask

__all__ = [
    "GOAL_PROMPT",
    "OUTCOME_PROMPT",
    "GoalAndEndState",
    "HolisticGoalAccuracy",
    "OutcomeCheck",
    "TraceToRead",
]


class TraceToRead(BaseModel):
    """Input of the goal-and-end-state prompt: a trace flattened by a :class:`TraceFormatter`."""

    trace: str


class GoalAndEndState(BaseModel):
    """What the user wanted, and what was actually done by the end of the conversation."""

    user_goal: str = Field(description="what the user wanted to get done, in one or two sentences")
    end_state: str = Field(description="what had actually been done when the conversation ended")


GOAL_PROMPT: JudgePrompt[TraceToRead, GoalAndEndState] = JudgePrompt(
    name="agent_goal.infer",
    version="1",
    instruction=(
        "You read a conversation between a user and an AI agent that can call tools. Lines "
        "marked ASSISTANT CALLS are the agent's tool calls and lines marked TOOL RESULT are "
        "what the tools returned. Describe (1) the user's goal: everything the user wanted "
        "to get done over the whole conversation, with the specifics they gave (names, "
        "dates, amounts, choices); and (2) the end state: what had actually been done when "
        "the conversation ended, judged from the tool calls and their results (an action "
        "counts only if a tool performed it, not if the agent merely said it would), "
        "including anything done that the user did not ask for. Be factual and specific."
    ),
    input_model=TraceToRead,
    output_model=GoalAndEndState,
    question="State the user's goal and the end state of the conversation in <trace>.",
)


class OutcomeCheck(BaseModel):
    """Input of the outcome verdict prompt (the goal first, the end state last)."""

    goal: str
    end_state: str


OUTCOME_PROMPT: JudgePrompt[OutcomeCheck, StatementJudgement] = JudgePrompt(
    name="agent_goal.verdict",
    version="1",
    instruction=(
        "You check whether an AI agent achieved a user's goal. Verdict 1 means the end state "
        "achieves every part of the goal that the agent could act on. Verdict 0 means some "
        "required part is missing, done differently from what the goal asks (another date, "
        "amount, item, payment or option), or something was done that the goal rules out: "
        "when in doubt, 0. Judge only from the end state as written, never from what the "
        "agent might have done."
    ),
    input_model=OutcomeCheck,
    output_model=StatementJudgement,
    question=(
        "Does the end state in <end_state> achieve the goal in <goal>? Give verdict 1 or 0, then a one-sentence reason."
    ),
)


@dataclass(frozen=True)
class HolisticGoalAccuracy:
    """Whether an agent's conversation ended in a state that achieves the user's goal (1 or 0), holistically.

    Agent goal accuracy as it was until version 2 (same prompts, same scores), under its own
    names so that both can run side by side. Prefer :class:`~assay.metrics.AgentGoalAccuracy`.

    Two judge calls, after Ragas: the judge reads the trace (flattened by ``formatter``)
    and writes the user's goal and the end state (one structured call); then it answers
    one binary question: does the end state achieve the goal? The goal compared against is
    the sample's ``reference`` (with reference) or the goal the judge inferred (without).
    The second call sees only the goal and the end state, as in Ragas.

    Args:
        reference: ``True``: compare with ``sample.reference`` (required);
            ``False``: compare with the inferred goal; ``None``: use the reference when the
            sample has one, else the inferred goal.
        formatter: How the trace becomes text; its version and options are in the spec.
        config: Decoding settings for both calls.

    The metric's name says which goal it compares with: ``agent_goal_accuracy_holistic``
    (``reference=None``), ``agent_goal_accuracy_holistic_with_reference``,
    ``agent_goal_accuracy_holistic_without_reference``.
    """

    reference: bool | None = None
    formatter: TraceFormatter = field(default_factory=TraceFormatter)
    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=512))
    version: str = field(default="1", init=False)

    def __post_init__(self) -> None:
        check_reference_mode("agent goal accuracy", self.reference)

    @property
    def name(self) -> str:
        """``agent_goal_accuracy_holistic`` plus ``_with_reference`` / ``_without_reference`` when fixed."""
        return reference_mode_name("agent_goal_accuracy_holistic", self.reference)

    @property
    def required_fields(self) -> tuple[str, ...]:
        """The trace; the reference too when ``reference=True``."""
        return ("trace", "reference") if self.reference else ("trace",)

    def spec(self) -> MetricSpec:
        """Name, version, the reference mode, the formatter and the prompt versions."""
        return spec_from_fields(self, prompts=prompt_versions(GOAL_PROMPT, OUTCOME_PROMPT))

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Infer the goal and end state from the trace, then judge the end state against the goal."""
        spec = self.spec()
        if self.reference and not sample.reference:
            return missing_field(self.name, "sample has no reference", spec)
        text = self.formatter.format(sample.trace)
        if not text:
            return missing_field(self.name, "sample has no trace (or only system messages)", spec)
        calls: list[JudgeCall] = []
        inferred = await ask(judge, GOAL_PROMPT, TraceToRead(trace=text), config=self.config)
        calls.extend(inferred.calls)
        if inferred.output is None:
            return failed(self.name, inferred.failure, spec, during="goal inference", calls=calls)
        user_goal = inferred.output.user_goal.strip()
        end_state = inferred.output.end_state.strip()
        use_reference = self.reference if self.reference is not None else bool(sample.reference)
        goal = sample.reference.strip() if use_reference and sample.reference else user_goal
        judged = await ask(judge, OUTCOME_PROMPT, OutcomeCheck(goal=goal, end_state=end_state), config=self.config)
        calls.extend(judged.calls)
        if judged.output is None:
            assert judged.failure is not None
            detail = (
                f"outcome verdict: {judged.failure.detail}; inferred user goal: {user_goal}; end state: {end_state}"
            )
            return Score.unscored(self.name, judged.failure.reason, detail, calls=calls, spec=spec)
        verdict = Verdict(subject=goal, value=judged.output.verdict, reason=judged.output.reason)
        source = "reference goal" if use_reference else "inferred goal"
        explanation = (
            f"compared with the {source}; inferred user goal: {user_goal}; end state: {end_state}; "
            f"verdict {verdict.value}: {verdict.reason}"
        )
        return Score.scored(
            self.name, float(verdict.value == 1), verdicts=[verdict], explanation=explanation, calls=calls, spec=spec
        )
