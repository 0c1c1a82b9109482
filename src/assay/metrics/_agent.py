"""Agent goal accuracy: the goal as atomic requirements, each checked against what the tools did.

Two kinds of judge call, after Ragas' agent goal accuracy made atomic:

1. **Requirements** (one call): the reference goal, or without one the user's own turns
   (never the agent's), becomes a short list of atomic requirements the agent could act on:
   an action with its specifics, an action it must not take, a fact it must tell the user.
2. **One yes/no per requirement**: met, not met, or cannot tell, judged against the end
   state read from the trace without a model (:func:`~assay.metrics.read_end_state`: every
   tool call, numbered, with its result and whether it changed state or failed), the
   agent's final reply, and the agent's policy (the system message) when the trace has one.
   The verdict cites the calls it rests on.

The score is 1 when every requirement is met, 0 when one is not; a requirement the judge
cannot decide leaves the score unscored (``undecided``) unless another one failed. The
record keeps the end state, each requirement's verdict, reason and cited calls, and the
fraction met.

Prompt layout for prefix reuse: the requirement prompt's blocks are the policy (the same
for every trajectory of one agent), the calls and the final reply (the same for every
requirement of one trajectory), then the requirement.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from assay._samples import Sample
from assay._scores import JudgeCall, MetricSpec, Score, UnscoredReason, Verdict
from assay.metrics._common import check_reference_mode, failed, missing_field, reference_mode_name
from assay.metrics._endstate import EndState, StateChanges, read_end_state
from assay.metrics._spec import spec_from_fields
from assay.models._protocol import GenerateConfig, JudgeModel
from assay.prompts import Example, JudgePrompt, ask

__all__ = [
    "REQUIREMENTS_PROMPT",
    "REQUIREMENT_PROMPT",
    "USER_REQUIREMENTS_PROMPT",
    "AgentGoalAccuracy",
    "GoalToSplit",
    "RequirementCheck",
    "RequirementJudgement",
    "Requirements",
    "UserTurnsToSplit",
    "render_actions",
]

MAX_REQUIREMENTS = 8


class GoalToSplit(BaseModel):
    """Input of the requirements prompt with a reference: the goal as written."""

    goal: str


class UserTurnsToSplit(BaseModel):
    """Input of the requirements prompt without a reference: what the user said, turn by turn."""

    user_turns: str


class Requirements(BaseModel):
    """The goal as atomic requirements on the outcome."""

    requirements: list[str] = Field(max_length=MAX_REQUIREMENTS)


_SPLIT_RULES = (
    "Each requirement is one thing that must be true when the conversation ends, with the "
    "specifics given (ids, names, dates, places, class, counts, payment method, amounts): an "
    "action the agent must take with its tools (book, cancel, change, refund, send...), an "
    "action the agent must not take, or a fact the agent must tell the user. Split a wish "
    "with several parts into several requirements. Keep a condition with the requirement it "
    "governs ('if the flight cannot be changed, cancel the reservation'). Leave out who the "
    "user is, how the user talks or behaves, what the user does or does not remember, and "
    "steps that are only a way to get there (looking things up, confirming). At most "
    f"{MAX_REQUIREMENTS} requirements, each one short sentence addressed to the agent "
    "('Cancel reservation X1'). No requirement: an empty list."
)

REQUIREMENTS_PROMPT: JudgePrompt[GoalToSplit, Requirements] = JudgePrompt(
    name="agent_goal.requirements",
    version="1",
    instruction=(
        "You turn a description of what a user wants from an AI agent that acts with tools into a "
        f"checklist of atomic requirements on the outcome. {_SPLIT_RULES}"
    ),
    input_model=GoalToSplit,
    output_model=Requirements,
    question="List the requirements of the goal in <goal>.",
    examples=(
        Example(
            GoalToSplit(
                goal=(
                    "You are lee_83. You want to return the blue kettle from order #W12 and get the refund on "
                    "your gift card. If the kettle cannot be returned, exchange it for the red one. You do not "
                    "want to cancel the lamp from the same order. You want to know your gift card balance. You "
                    "are polite but impatient."
                )
            ),
            Requirements(
                requirements=[
                    "Return the blue kettle from order #W12, refunded to the gift card",
                    "If the kettle cannot be returned, exchange it for the red kettle",
                    "Do not cancel the lamp in order #W12",
                    "Tell the user their gift card balance",
                ]
            ),
        ),
    ),
)

USER_REQUIREMENTS_PROMPT: JudgePrompt[UserTurnsToSplit, Requirements] = JudgePrompt(
    name="agent_goal.user_requirements",
    version="1",
    instruction=(
        "You read what a user said to an AI agent that acts with tools, turn by turn, and write what "
        "the user finally wanted as a checklist of atomic requirements on the outcome. A later turn "
        "that changes or withdraws a wish replaces the earlier one. "
        f"{_SPLIT_RULES}"
    ),
    input_model=UserTurnsToSplit,
    output_model=Requirements,
    question="List the requirements of what the user asked for in <user_turns>.",
)


WINDOW_MARGIN_TOKENS = 96
"""The chat template's tokens and a safety margin, on top of the prompt and the answer."""


class RequirementCheck(BaseModel):
    """Input of the requirement prompt: the shared evidence first, the requirement last."""

    policy: str
    calls: str
    final_reply: str
    requirement: str


class RequirementJudgement(BaseModel):
    """One requirement's verdict, the calls it rests on, and why (verdict first)."""

    verdict: Literal["met", "not met", "cannot tell"]
    calls: list[int] = Field(max_length=12, description="numbers of the calls the verdict rests on")
    reason: str


REQUIREMENT_PROMPT: JudgePrompt[RequirementCheck, RequirementJudgement] = JudgePrompt(
    name="agent_goal.requirement",
    version="1",
    instruction=(
        "You check one requirement of a user's goal against what an AI agent actually did. <calls> "
        "lists every tool call the agent made, numbered, with its result. A call marked CHANGE changed "
        "something only if it succeeded; a FAILED call changed nothing; a read call changes nothing. What "
        "the agent says in <final_reply> is not an action, but it is where the agent tells the user "
        "things. <policy> holds the rules the agent had to follow, when there are any.\n"
        "Answer 'met' when the calls (or, for something the agent must tell the user, the final reply) "
        "show that the requirement holds, with the details it asks for. Answer 'not met' when a required "
        "action is missing or failed, was done with other details (another id, date, flight, class, "
        "count, payment method or amount), or a forbidden action was done. A requirement with a "
        "condition is met when the condition did not hold. An action the policy forbids in this "
        "situation is met by not doing it. Answer 'cannot tell' only when the calls shown cannot decide "
        "it. List the numbers of the calls your verdict rests on (none if it rests on their absence), "
        "then give a one-sentence reason."
    ),
    input_model=RequirementCheck,
    output_model=RequirementJudgement,
    question="Is the requirement in <requirement> met by what the agent did? Verdict, cited calls, reason.",
)

_VALUES: dict[str, int | Literal["NA"]] = {"met": 1, "not met": 0, "cannot tell": "NA"}

POLICY_REQUIREMENT = "Call {number} ({name}) is allowed by the policy in <policy>, given what the calls before it show"
"""The requirement added for each performed change when ``policy_checks`` is on."""
POLICY_FLAG = "policy_check"
"""The flag of a verdict that checks a performed change against the policy (not a requirement of the goal)."""


def _excerpt(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    if not text:
        return "(empty)"
    return text if len(text) <= limit else f"{text[: limit - 1]}… [{len(text) - limit + 1} more characters]"


def render_actions(end: EndState, *, result_chars: int = 400, max_chars: int | None = 6000) -> str:
    """Every tool call of ``end``, numbered, with its kind, outcome and result (capped).

    A summary line first (the changes made and the ones that failed). When the text is over
    ``max_chars``, read results are shortened to 80 characters, then left out; the
    state-changing calls keep theirs.
    """
    if not end.actions:
        return "(the agent made no tool call)"
    for read_chars in (result_chars, 80, 0):
        text = _render(end, result_chars, read_chars)
        if max_chars is None or len(text) <= max_chars:
            return text
    return text


def _render(end: EndState, result_chars: int, read_chars: int) -> str:
    changed = [f"call {a.number} {a.name}" for a in end.performed]
    failed_calls = [f"call {a.number} {a.name}" for a in end.state_changes if a.succeeded is False]
    lines = ["Changes made: " + (", ".join(changed) if changed else "none")]
    if failed_calls:
        lines.append("Failed attempts (changed nothing): " + ", ".join(failed_calls))
    for a in end.actions:
        if a.state_changing:
            kind = {True: "CHANGE, succeeded", False: "CHANGE FAILED", None: "CHANGE, no result shown"}[a.succeeded]
            limit = result_chars
        else:
            kind = "read, failed" if a.succeeded is False else "read"
            limit = read_chars
        line = f"[call {a.number}] {kind}: {a.signature()}"
        if a.result is not None and limit > 0:
            line += f"\n  result: {_excerpt(a.result, limit)}"
        lines.append(line)
    return "\n".join(lines)


def user_turns(sample: Sample) -> str:
    """The user's messages, numbered as in the trace; nothing the agent said."""
    turns = [
        f"[{i}] {m.content.strip()}"
        for i, m in enumerate(sample.trace, start=1)
        if m.role == "user" and m.content and m.content.strip()
    ]
    return "\n".join(turns)


@dataclass(frozen=True)
class AgentGoalAccuracy:
    """1 when every atomic requirement of the user's goal is met by what the agent's tools did.

    The end state is read from the trace without a model (``state`` says which tools change
    state). The goal (``sample.reference``) or, without one, the user's own turns are split
    into atomic requirements by one judge call; each requirement then gets one verdict (met,
    not met, cannot tell) against the numbered tool calls with their results, the final
    reply and the agent's policy (the trace's system message), citing the calls it rests on.

    Score: 0 when a requirement is not met (whatever the others say); else unscored
    ``undecided`` when the judge could not decide one from the evidence; else 1. A judge
    failure on a requirement leaves the score unscored with that failure, unless another
    requirement is not met. No requirement at all is unscored ``no_statements``.

    Verdicts: one per requirement (subject: the requirement; value 1, 0 or ``"NA"``;
    ``details["calls"]``: the cited call numbers, and their signatures). ``details``: the
    end state, the requirements' source, each requirement with its verdict and cited calls,
    and the fraction met.

    Args:
        reference: ``True``: split ``sample.reference`` (required); ``False``: split the
            user's turns; ``None``: the reference when the sample has one.
        state: Which tools change state and which results are failures.
        include_policy: Show the agent's system message to the requirement judge.
        policy_checks: Also ask, for each change the agent performed, whether the policy
            allows it in the situation the calls show (one more check per change, flagged
            ``policy_check``; only when the trace has a policy and ``include_policy``).
        policy_chars: Cap on the policy text (its start is kept); ``None``: no cap.
        calls_chars: Budget for the calls text (read results are shortened first).
        result_chars: Cap on each shown result.
        reply_chars: Cap on the final reply.
        config: Decoding settings of both kinds of call.
        split_prompt: The prompt that splits a reference goal (its input and output models fixed).
        user_split_prompt: The prompt that splits the user's turns.
        check_prompt: The prompt that judges one requirement.

    Names: ``agent_goal_accuracy`` (``reference=None``), ``agent_goal_accuracy_with_reference``,
    ``agent_goal_accuracy_without_reference``.
    """

    reference: bool | None = None
    state: StateChanges = field(default_factory=StateChanges)
    include_policy: bool = True
    policy_checks: bool = False
    policy_chars: int | None = 8000
    calls_chars: int | None = 6000
    result_chars: int = 400
    reply_chars: int = 1500
    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=400))
    split_prompt: JudgePrompt[GoalToSplit, Requirements] = REQUIREMENTS_PROMPT
    user_split_prompt: JudgePrompt[UserTurnsToSplit, Requirements] = USER_REQUIREMENTS_PROMPT
    check_prompt: JudgePrompt[RequirementCheck, RequirementJudgement] = REQUIREMENT_PROMPT
    version: str = field(default="2", init=False)

    def __post_init__(self) -> None:
        check_reference_mode("agent goal accuracy", self.reference)

    @property
    def name(self) -> str:
        """``agent_goal_accuracy`` plus ``_with_reference`` / ``_without_reference`` when fixed."""
        return reference_mode_name("agent_goal_accuracy", self.reference)

    @property
    def required_fields(self) -> tuple[str, ...]:
        """The trace; the reference too when ``reference=True``."""
        return ("trace", "reference") if self.reference else ("trace",)

    def spec(self) -> MetricSpec:
        """Name, version, the options and the prompt versions."""
        return spec_from_fields(self)

    async def score(self, sample: Sample, judge: JudgeModel) -> Score:
        """Split the goal into requirements, then judge each against the end state."""
        spec = self.spec()
        if self.reference and not sample.reference:
            return missing_field(self.name, "sample has no reference", spec)
        if not sample.trace:
            return missing_field(self.name, "sample has no trace", spec)
        end = read_end_state(sample.trace, self.state, sample.metadata)
        use_reference = self.reference if self.reference is not None else bool(sample.reference)
        details: dict[str, Any] = {"end_state": end.record(result_chars=self.result_chars)}
        calls: list[JudgeCall] = []
        if use_reference:
            assert sample.reference is not None
            details["requirements_from"] = "reference goal"
            split = await ask(judge, self.split_prompt, GoalToSplit(goal=sample.reference.strip()), config=self.config)
        else:
            turns = user_turns(sample)
            if not turns:
                return missing_field(self.name, "the trace has no user turn to read the goal from", spec)
            details["requirements_from"] = "user turns"
            split = await ask(judge, self.user_split_prompt, UserTurnsToSplit(user_turns=turns), config=self.config)
        calls.extend(split.calls)
        if split.output is None:
            return failed(self.name, split.failure, spec, during="requirement extraction", calls=calls).model_copy(
                update={"details": details}
            )
        requirements = list(dict.fromkeys(r.strip() for r in split.output.requirements if r.strip()))
        if not requirements:
            return Score.unscored(
                self.name,
                UnscoredReason.NO_STATEMENTS,
                f"the {details['requirements_from']} state no requirement the agent could act on",
                calls=calls,
                spec=spec,
                details=details,
            )
        evidence = RequirementCheck(
            policy=self._policy(end),
            calls=render_actions(end, result_chars=self.result_chars, max_chars=self.calls_chars),
            final_reply=_excerpt(end.final_reply, self.reply_chars) if end.final_reply else "(no reply)",
            requirement="",
        )
        evidence, fitted = self._fit_window(evidence, end, judge, max(300, *map(len, requirements)))
        if fitted:
            details["fitted_to_window"] = fitted
        numbers = {a.number: a for a in end.actions}
        verdicts: list[Verdict] = []
        failures: list[str] = []
        first_failure: UnscoredReason | None = None
        checks: list[tuple[str, tuple[str, ...]]] = [(r, ()) for r in requirements]
        if self.policy_checks and end.policy and self.include_policy:
            checks.extend(
                (POLICY_REQUIREMENT.format(number=a.number, name=a.name), (POLICY_FLAG,)) for a in end.performed
            )
        # Asked together: they share the evidence, and the local judge decodes them in one batch.
        answers = await asyncio.gather(
            *(
                ask(judge, self.check_prompt, evidence.model_copy(update={"requirement": r}), config=self.config)
                for r, _ in checks
            )
        )
        for (requirement, flags), judged in zip(checks, answers, strict=True):
            calls.extend(judged.calls)
            if judged.output is None:
                assert judged.failure is not None
                failures.append(f"{requirement!r}: {judged.failure.detail}")
                first_failure = first_failure or judged.failure.reason
                continue
            verdict = self._verdict(requirement, judged.output, numbers)
            verdicts.append(verdict.model_copy(update={"flags": (*verdict.flags, *flags)}) if flags else verdict)
        requirements = [requirement for requirement, _ in checks]
        met = sum(1 for v in verdicts if v.value == 1)
        details["requirements"] = [
            {
                "requirement": v.subject,
                "verdict": v.value,
                "reason": v.reason,
                "calls": (v.details or {}).get("calls", []),
                **({"kind": "policy check"} if POLICY_FLAG in v.flags else {}),
            }
            for v in verdicts
        ]
        details["fraction_met"] = met / len(requirements)
        unmet = [v for v in verdicts if v.value == 0]
        undecided = [v for v in verdicts if v.value == "NA"]
        summary = f"{met} of {len(requirements)} requirements met ({details['requirements_from']}); {end.summary()}"
        if fitted:
            summary += f"; {fitted}"
        if unmet:
            explanation = summary + "; not met: " + " | ".join(v.subject for v in unmet)
            if failures:
                explanation += f"; {len(failures)} requirement(s) not judged"
            return Score.scored(
                self.name, 0.0, verdicts=verdicts, explanation=explanation, calls=calls, spec=spec, details=details
            )
        if first_failure is not None:
            detail = "requirement check failed: " + "; ".join(failures)
            return Score.unscored(
                self.name, first_failure, detail, verdicts=verdicts, calls=calls, spec=spec, details=details
            )
        if undecided:
            detail = "the judge could not decide from the evidence: " + " | ".join(
                f"{v.subject} ({v.reason})" for v in undecided
            )
            return Score.unscored(
                self.name, UnscoredReason.UNDECIDED, detail, verdicts=verdicts, calls=calls, spec=spec, details=details
            )
        return Score.scored(
            self.name, 1.0, verdicts=verdicts, explanation=summary, calls=calls, spec=spec, details=details
        )

    def _fit_window(
        self, evidence: RequirementCheck, end: EndState, judge: JudgeModel, requirement_chars: int
    ) -> tuple[RequirementCheck, str | None]:
        """``evidence`` cut to fit a judge with a fixed context window, and what was cut.

        A judge that says its window (``n_ctx``) and counts tokens (the local judge) would
        refuse a longer prompt, every requirement unscored. The policy gives way first (its
        end is cut), then the read calls' results. Other judges get ``evidence`` as it is.
        """
        window, count = getattr(judge, "n_ctx", None), getattr(judge, "count_tokens", None)
        if not isinstance(window, int) or not callable(count):
            return evidence, None
        budget = window - self.config.max_tokens - WINDOW_MARGIN_TOKENS

        def tokens(value: RequirementCheck) -> int:
            probe = value.model_copy(update={"requirement": "x" * requirement_chars})
            return int(count("\n".join(m["content"] for m in self.check_prompt.render(probe))))

        over = tokens(evidence) - budget
        if over <= 0:
            return evidence, None
        cut: list[str] = []
        policy = evidence.policy
        if self.include_policy and end.policy:
            for _ in range(4):  # characters per token vary: measure again after each cut
                keep = max(0, len(policy) - over * 4 - 200)
                left_out = len(end.policy.strip()) - keep
                note = f" … [{left_out} characters of policy left out to fit the judge's window]"
                policy = end.policy.strip()[:keep] + note
                evidence = evidence.model_copy(update={"policy": policy})
                over = tokens(evidence) - budget
                if over <= 0 or keep == 0:
                    break
            cut.append(f"policy cut to {keep} of {len(end.policy.strip())} characters")
        if over > 0:
            for chars in (3000, 1500, 600):
                evidence = evidence.model_copy(
                    update={"calls": render_actions(end, result_chars=min(self.result_chars, 120), max_chars=chars)}
                )
                over = tokens(evidence) - budget
                if over <= 0:
                    break
            cut.append("tool results shortened")
        note = f"{' and '.join(cut)} to fit the judge's {window}-token window"
        if over > 0:
            note += f" (still {over} tokens over: the judge will refuse)"
        return evidence, note

    def _policy(self, end: EndState) -> str:
        if not self.include_policy or not end.policy:
            return "(no policy given)"
        text = end.policy.strip()
        if self.policy_chars is not None and len(text) > self.policy_chars:
            text = text[: self.policy_chars] + f" … [{len(text) - self.policy_chars} characters of policy left out]"
        return text

    @staticmethod
    def _verdict(requirement: str, output: RequirementJudgement, numbers: dict[int, Any]) -> Verdict:
        cited = [n for n in dict.fromkeys(output.calls) if n in numbers]
        unknown = [n for n in output.calls if n not in numbers]
        reason = output.reason.strip()
        if unknown:
            reason += f" [cited calls that do not exist, dropped: {', '.join(map(str, unknown))}]"
        flags: tuple[str, ...] = ()
        if output.verdict == "met" and cited and all(numbers[n].succeeded is False for n in cited):
            flags = ("rests_on_failed_calls",)
        return Verdict(
            subject=requirement,
            value=_VALUES[output.verdict],
            reason=reason,
            flags=flags,
            details={"calls": cited, "cited": [f"call {n}: {numbers[n].signature()}" for n in cited]},
        )
