"""assay metrics as Inspect scorers (extra ``inspect``: ``pip install 'assay[inspect]'``).

```python
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from assay.integrations.inspect import assay_scorer
from assay.metrics import Faithfulness

task = Task(
    dataset=[Sample(input="Capital of France?", target="Paris",
                    metadata={"contexts": ["Paris is the capital of France."]})],
    scorer=assay_scorer(Faithfulness(), judge="openai:gpt-4o-mini"),
)
eval(task, model="openai/gpt-4o-mini")
```

Each Inspect sample becomes an :class:`assay.Sample`: the input is the question, the
model's completion the answer, the sample's ``metadata["contexts"]`` (or
``retrieved_contexts``; see ``contexts_key``) the contexts, ``metadata["reference_tool_calls"]``
the expected tool calls (for ``tool_call_accuracy`` and ``agent_state_match``) and the
target the reference.
The Inspect :class:`~inspect_ai.scorer.Score` carries the value, the explanation and, in
its metadata, every verdict (subject, value, reason), the metric's spec, the judge and its
token counts. An unscored assay result (the judge refused, its answer did not parse, the
answer had no statement to check...) becomes :meth:`Score.unscored
<inspect_ai.scorer.Score.unscored>`: NaN, which Inspect's metrics skip and count as
unscored, never a 0. See ``docs/design/integrations.md``.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from assay._messages import INVALID_ARGUMENTS
from assay._samples import Message, Sample, ToolCall
from assay._scores import Score, UnscoredReason
from assay.errors import ConfigError, MissingExtraError, SampleError
from assay.metrics import Metric, metrics_from, score_safely
from assay.models import JudgeModel, get_judge
from assay.run import JudgeCache, Limits, build_judge_stack
from assay.run._data import sample_from_record

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage as InspectMessage
    from inspect_ai.scorer import Score as InspectScore
    from inspect_ai.scorer import Scorer, Target
    from inspect_ai.solver import TaskState

__all__ = ["CONTEXTS_KEYS", "REFERENCE_TOOL_CALLS_KEY", "assay_scorer", "inspect_score", "to_sample"]

CONTEXTS_KEYS: tuple[str, ...] = ("contexts", "retrieved_contexts")
"""The sample metadata keys read for contexts by default, first present wins."""

REFERENCE_TOOL_CALLS_KEY = "reference_tool_calls"
"""The sample metadata key read for the expected tool calls (agent metrics)."""

# assay's reason -> Inspect's coarse reason (``inspect_ai.scorer.ScoreReason``). The
# exact assay reason stays in the score's metadata under ``unscored``.
_JUDGE_FAILED = "grader_failed"
_INSPECT_REASON: dict[UnscoredReason, str] = {
    UnscoredReason.PARSE_FAILURE: _JUDGE_FAILED,
    UnscoredReason.REFUSAL: _JUDGE_FAILED,
    UnscoredReason.EMPTY_OUTPUT: _JUDGE_FAILED,
    UnscoredReason.TRUNCATED_OUTPUT: _JUDGE_FAILED,
    UnscoredReason.VERDICT_COUNT_MISMATCH: _JUDGE_FAILED,
    UnscoredReason.JUDGE_ERROR: _JUDGE_FAILED,
    UnscoredReason.METRIC_ERROR: "scoring_failed",
    UnscoredReason.MISSING_FIELD: "scoring_failed",
    # Neither the model nor the judge failed: assay's own words say it best.
    UnscoredReason.NO_STATEMENTS: UnscoredReason.NO_STATEMENTS.value,
    UnscoredReason.NOT_APPLICABLE: UnscoredReason.NOT_APPLICABLE.value,
    UnscoredReason.UNDECIDED: UnscoredReason.UNDECIDED.value,
}


def assay_scorer(
    metric: Metric | str,
    judge: JudgeModel | str | None = None,
    *,
    contexts_key: str | Sequence[str] = CONTEXTS_KEYS,
    trace: bool = False,
    keep_calls: bool = False,
    limits: Limits | None = None,
    cache: JudgeCache | None = None,
    name: str | None = None,
    base_url: str | None = None,
) -> Scorer:
    """An Inspect scorer that scores each sample with an assay metric.

    Its metrics are Inspect's ``mean()`` and ``stderr()``, over scored samples only:
    unscored samples are counted by Inspect, not averaged in.

    Args:
        metric: An assay metric, or a registry name (``"faithfulness"``; see ``assay metrics``).
        judge: A judge model or string (``"local"``, ``"openai:gpt-4o-mini"``); ``None``:
            ``$ASSAY_JUDGE``, else the local judge. Built once, shared by every sample.
        contexts_key: The sample metadata key(s) holding the contexts (a string or a list
            of strings); with several, the first present is used.
        trace: Pass the conversation (``state.messages``) as the sample's trace, for
            agent metrics; graders then grade the whole conversation.
        keep_calls: Also keep every judge call (prompt and raw output) in the metadata.
        limits: Retries, timeouts and rate budgets of the judge calls (shared by every
            sample of the eval).
        cache: A judge-call cache; an Inspect epoch is an assay repeat, so epochs are
            judged afresh, not answered from the cache.
        name: The scorer's name in Inspect (default: the metric's name).
        base_url: The server of a judge string such as ``"openai:MODEL"`` (a vLLM, Ollama
            or llama.cpp server; default ``$OPENAI_BASE_URL``), as ``assay run --base-url``.

    Raises:
        MissingExtraError: inspect_ai is not installed.
        ConfigError: an unknown metric name or judge string.
    """
    try:
        from inspect_ai.scorer import mean, scorer, stderr
    except ImportError as exc:
        raise MissingExtraError("inspect-ai", "inspect", "assay.integrations.inspect") from exc

    (chosen,) = metrics_from([metric])
    keys = (contexts_key,) if isinstance(contexts_key, str) else tuple(contexts_key)
    if base_url is not None and isinstance(judge, JudgeModel):
        raise ConfigError('base_url applies to a judge string ("openai:MODEL"); this judge is already built')
    built = judge if isinstance(judge, JudgeModel) else get_judge(judge, base_url=base_url)
    bridge = _Bridge(chosen, built, limits, cache)

    @scorer(metrics=[mean(), stderr()], name=name or chosen.name, assay_spec=chosen.spec().model_dump(mode="json"))
    def assay_metric() -> Scorer:
        async def score(state: TaskState, target: Target) -> InspectScore:
            sample = to_sample(state, target, contexts_key=keys, trace=trace, required=chosen.required_fields)
            result = await bridge.score(sample, state.epoch - 1)
            answered = bool(sample.answer)
            return inspect_score(result, judge=bridge.judge.model_id, keep_calls=keep_calls, answered=answered)

        return score

    return assay_metric()


class _Bridge:
    """One metric and one judge stack per event loop, shared by every sample of an eval."""

    def __init__(self, metric: Metric, judge: JudgeModel, limits: Limits | None, cache: JudgeCache | None) -> None:
        self.metric = metric
        self.judge = judge
        self.limits = limits or Limits()
        self.cache = cache
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._stack: JudgeModel | None = None

    def _stacked(self) -> JudgeModel:
        # The rate limiter's condition belongs to one loop; a second eval() runs in another.
        loop = asyncio.get_running_loop()
        if self._stack is None or self._loop is None or self._loop() is not loop:
            self._stack = build_judge_stack(self.judge, limits=self.limits, cache=self.cache)
            self._loop = weakref.ref(loop)
        return self._stack

    async def score(self, sample: Sample, repeat: int) -> Score:
        from assay.models._stack import _REPEAT

        token = _REPEAT.set(repeat)
        try:
            return await score_safely(self.metric, sample, self._stacked())
        finally:
            _REPEAT.reset(token)


def to_sample(
    state: TaskState,
    target: Target,
    *,
    contexts_key: str | Sequence[str] = CONTEXTS_KEYS,
    trace: bool = False,
    required: Iterable[str] = (),
) -> Sample:
    """The assay :class:`~assay.Sample` for an Inspect task state and target.

    The sample is checked as ``assay run`` checks a row (:func:`~assay.run.sample_from_record`):
    contexts given as a string holding a list are that list, text above the size limits
    and a field ``required`` lacks are errors, in the same words.

    Args:
        state: The sample's state after the solver ran.
        target: The sample's target; several targets become one reference, one per line.
        contexts_key: The metadata key(s) holding the contexts (first present wins).
        trace: Also convert ``state.messages`` into the sample's trace.
        required: Fields the sample must have (the metric's ``required_fields``).

    Raises:
        SampleError: the sample is invalid as a row of ``assay run`` would be (the contexts
            are not a string or a list of strings, a required field is missing or empty,
            a text is too long...), naming the Inspect sample: Inspect records it as the
            sample's error, as ``assay run`` reports an invalid row.
    """
    keys = (contexts_key,) if isinstance(contexts_key, str) else tuple(contexts_key)
    metadata = dict(state.metadata or {})
    where = f"inspect sample {state.sample_id!r}"
    targets = [t for t in target.target if t]
    reference_calls = metadata.pop(REFERENCE_TOOL_CALLS_KEY, None)
    record: dict[str, Any] = {
        "id": str(state.sample_id),
        "question": state.input_text or None,
        "answer": state.output.completion,
        "reference": "\n".join(targets) or None,
        "trace": _trace(state.messages) if trace else None,
        "reference_tool_calls": _reference_calls(reference_calls, where),
    }
    mapping: dict[str, str] = {}
    for key in keys:
        if metadata.get(key) is not None:
            column = f"metadata.{key}"  # how errors name it: field 'metadata.contexts': expected ...
            record[column], mapping[column] = metadata.pop(key), "contexts"
            break
    record["metadata"] = metadata
    return sample_from_record(record, source=where, required=required, mapping=mapping)


def _reference_calls(value: object, where: str) -> tuple[ToolCall, ...] | None:
    """``metadata["reference_tool_calls"]`` as calls (assay's, OpenAI's, Ragas', DeepEval's or Inspect's shape)."""
    if value is None:
        return None
    if not isinstance(value, Sequence) or isinstance(value, str):
        kind = type(value).__name__
        raise SampleError(
            f"metadata[{REFERENCE_TOOL_CALLS_KEY!r}] must be a list of tool calls, got {kind}", source=where
        )
    calls = []
    for i, item in enumerate(value):
        raw = item.model_dump() if hasattr(item, "model_dump") else item  # an inspect_ai ToolCall object
        try:
            calls.append(ToolCall.model_validate(raw))
        except ValueError as exc:
            raise SampleError(f"metadata[{REFERENCE_TOOL_CALLS_KEY!r}][{i}]: {exc}", source=where) from None
    return tuple(calls)


def _trace(messages: Sequence[InspectMessage]) -> tuple[Message, ...]:
    turns = []
    for message in messages:
        calls = getattr(message, "tool_calls", None) or ()
        tool = message.role == "tool"
        turns.append(
            Message(
                role=message.role,
                content=message.text or None,
                tool_calls=tuple(_inspect_call(c) for c in calls),
                tool_call_id=getattr(message, "tool_call_id", None) if tool else None,
                name=getattr(message, "function", None) if tool else None,
                is_error=tool and getattr(message, "error", None) is not None,
            )
        )
    return tuple(turns)


def _inspect_call(call: Any) -> ToolCall:
    """An Inspect tool call; arguments that did not parse (``parse_error``) are kept as the agent's raw text."""
    error = getattr(call, "parse_error", None)
    arguments = {INVALID_ARGUMENTS: error} if error else dict(call.arguments or {})
    return ToolCall(name=call.function, arguments=arguments, id=call.id)


def _evidence(score: Score, keep_calls: bool) -> dict[str, Any]:
    """A score's evidence as JSON-ready data: verdicts, spec, tokens, parts (and calls)."""
    usage = score.usage
    evidence: dict[str, Any] = {
        "metric": score.metric,
        "value": score.value if score.is_scored else None,
        "verdicts": [v.model_dump(mode="json") for v in score.verdicts],
        "spec": score.spec.model_dump(mode="json") if score.spec is not None else None,
        "usage": {
            "judge_calls": len(score.all_calls),
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        },
    }
    if score.unscored_reason is not None:
        evidence["unscored"] = {"reason": score.unscored_reason.value, "detail": score.detail}
    if score.details is not None:
        evidence["details"] = score.details
    if score.parts:
        evidence["parts"] = [_evidence(part, keep_calls) for part in score.parts]
    if keep_calls:
        evidence["calls"] = [c.model_dump(mode="json") for c in score.calls]
    return evidence


def inspect_score(
    score: Score, *, judge: str | None = None, keep_calls: bool = False, answered: bool = True
) -> InspectScore:
    """An assay :class:`~assay.Score` as an Inspect score, with its evidence in the metadata.

    Metadata keys: ``metric``, ``value``, ``verdicts`` (each ``subject``, ``value``,
    ``reason``), ``spec``, ``usage``, ``judge``, and when relevant ``unscored`` (assay's
    ``reason`` and ``detail``), ``details`` (an agent metric's end state), ``parts`` (a
    combined score's parts) and ``calls``.

    An unscored result is ``Score.unscored`` (NaN: Inspect's metrics skip it) with
    Inspect's coarse reason: ``grader_failed`` when the judge failed, ``no_response`` when
    the model under test answered nothing (``answered=False``), ``scoring_failed`` for
    another missing field or a metric error, else assay's own reason.
    """
    from inspect_ai.scorer import Score as InspectScore

    metadata = _evidence(score, keep_calls)
    metadata["judge"] = judge
    if score.unscored_reason is None:
        return InspectScore(value=score.value, explanation=score.explanation, metadata=metadata)
    reason = _INSPECT_REASON.get(score.unscored_reason, score.unscored_reason.value)
    if score.unscored_reason is UnscoredReason.MISSING_FIELD and not answered:
        reason = "no_response"
    explanation = f"unscored ({score.unscored_reason.value}): {score.detail or 'no detail'}"
    return InspectScore.unscored(reason=reason, explanation=explanation, metadata=metadata)
