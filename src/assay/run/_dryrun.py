"""``--dry-run``: how many calls and tokens a run would take, before spending anything.

The real metrics run against :class:`EstimatingJudge`, which answers every prompt with a
plausible, schema-valid answer without calling a model: statements are the answer's
sentences, verdict lists have one item per statement, reasons are of typical length. What
it counts is therefore what the metrics would really ask, prompt by prompt.

:func:`estimate` runs them with a progress of its own: what a dry run counts is estimated
calls, tokens and cost, and nothing is scored, so its progress never says ``scored 20``
(the runner's own progress, which counts scores, stays off).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from assay._safety import printable
from assay._schema import schema_of
from assay._scores import Usage
from assay.errors import SampleError
from assay.grounding._sentences import _segmenter
from assay.models._confidence import Confidence, one_word_prompt
from assay.models._protocol import ChatMessage, ChoiceProbabilities, GenerateConfig, JudgeModel, JudgeResponse
from assay.models._wrapper import JudgeWrapper
from assay.run._cost import PriceTable
from assay.run._progress import ProgressMode, make_reporter
from assay.testing._openai_server import minimal_instance

if TYPE_CHECKING:
    from assay.run._outcome import EvalResult
    from assay.run._results import SampleResult

__all__ = ["DRY_RUN_PROGRESS", "EstimatingJudge", "estimate"]

DRY_RUN_PROGRESS = "estimating (dry run: nothing is called or scored)"
"""What a dry run's progress line is about."""

_TYPICAL_REASON = "The context states this explicitly in its second sentence, so it is supported."
_BLOCK = re.compile(r"<(\w+)>\n(.*?)\n</\1>", re.DOTALL)


def _fill(value: Any, blocks: dict[str, str]) -> Any:
    if isinstance(value, dict):
        filled = {k: _fill(v, blocks) for k, v in value.items()}
        for key in ("reason", "reasoning"):
            if key in filled:
                filled[key] = _TYPICAL_REASON
        return filled
    if isinstance(value, list):
        return [_fill(v, blocks) for v in value]
    return value


class EstimatingJudge(JudgeModel):
    """Answers plausibly without a model, counting calls and estimated tokens (4 chars a token)."""

    def __init__(self, model_id: str, *, per_statement: bool, concurrency: int = 64) -> None:
        self._model_id = model_id
        self._per_statement = per_statement
        self._concurrency = concurrency
        self.calls = 0
        self.usage = Usage()
        self.on_call: Callable[[], None] | None = None
        """Called after each estimated call (a dry run's progress moves with it)."""

    @property
    def model_id(self) -> str:
        """The judge being estimated."""
        return self._model_id

    @property
    def max_concurrency(self) -> int:
        """High: nothing is called."""
        return self._concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """As the estimated judge would."""
        return self._per_statement

    def _answer(self, messages: Sequence[ChatMessage], schema: type[BaseModel] | None) -> str:
        if schema is None:
            return "yes"
        blocks = dict(_BLOCK.findall(messages[-1]["content"]))
        instance = minimal_instance(schema_of(schema))
        instance = _fill(instance, blocks)
        if isinstance(instance, dict) and "statements" in instance and "answer" in blocks:
            sentences = [s.strip() for s in _segmenter("en").segment(blocks["answer"]) if s.strip()]
            instance["statements"] = sentences or ["x"]
        if isinstance(instance, dict) and "verdicts" in instance and "statements" in blocks:
            n = len([line for line in blocks["statements"].splitlines() if line.startswith("[")])
            item = instance["verdicts"][0] if instance["verdicts"] else {}
            instance["verdicts"] = [item] * max(n, 1)
        return json.dumps(instance)

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """A plausible answer; counts the call and its estimated tokens."""
        text = self._answer(messages, schema)
        usage = Usage(
            prompt_tokens=sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages),
            completion_tokens=len(text) // 4 + 1,
        )
        self.calls += 1
        self.usage = self.usage + usage
        if self.on_call is not None:
            self.on_call()
        return JudgeResponse(text=text, model=self._model_id, usage=usage, finish_reason="stop")

    def describe(self, prices: PriceTable) -> str:
        """The estimate so far, for a progress line: ``~25 judge calls · ~11,738 tok · ~$0.0021 · estimated``."""
        usd = prices.cost(self._model_id, self.usage)
        cost = "cost unknown (no price)" if usd is None else f"~${usd:.4f}"
        calls = f"~{self.calls:,} judge call{'s' if self.calls != 1 else ''}"
        return f"{calls} · ~{self.usage.total_tokens:,} tok · {cost} · estimated, none made"


class _EstimatedConfidence(JudgeWrapper):
    """The calls a judge with a confidence makes for each P (1 with log-probabilities, K samples), counted.

    Every P it gives is a sure 1 (the first choice): what the metrics ask next does not
    depend on it for a judge that writes no reasons by threshold (an API judge).
    """

    def __init__(self, inner: EstimatingJudge, confidence: Confidence) -> None:
        super().__init__(inner)
        self.confidence = confidence

    async def choice_probabilities(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> ChoiceProbabilities:
        asked = one_word_prompt(messages, prefix, choices)
        for _ in range(self.confidence.calls):
            await self.inner.generate(asked, config=GenerateConfig(max_tokens=3))
        return ChoiceProbabilities({choice: float(i == 0) for i, choice in enumerate(choices)})


def estimate(
    data: Any,
    metrics: Any,
    estimator: EstimatingJudge,
    *,
    progress: ProgressMode | bool | None = "auto",
    prices: PriceTable | None = None,
    confidence: Confidence | None = None,
    **options: Any,
) -> EvalResult:
    """Evaluate ``data`` against ``estimator``, with a progress that says it estimates.

    The line counts samples gone through and the estimated calls, tokens and cost, never
    scores (nothing is judged); invalid rows and notes are said as in a run.

    Args:
        data: What :func:`~assay.evaluate` takes.
        metrics: The metrics a run would use.
        estimator: The judge that answers without a model and counts.
        progress: How to show progress (as :func:`~assay.evaluate`'s).
        prices: The prices for the estimated cost (default: the built-in table).
        confidence: The estimated judge's confidence (``+logprobs``, ``+samples:K``), whose
            calls for each P are counted too: K samples are K calls a question.
        **options: Passed on to :func:`~assay.evaluate` (``mapping``, ``repeats``...).
    """
    from assay.run._evaluate import evaluate

    table = prices or PriceTable()
    reporter = make_reporter(progress)
    estimator.on_call = lambda: reporter.advance(0, estimator.describe(table))

    def done(result: SampleResult) -> None:
        reporter.advance(1, estimator.describe(table))

    def skipped(error: SampleError) -> None:
        reporter.note(f"skipped {printable(str(error), markup=False)}")

    reporter.start(DRY_RUN_PROGRESS, None, 0)
    try:
        judge: JudgeModel = estimator if confidence is None else _EstimatedConfidence(estimator, confidence)
        outcome = evaluate(data, metrics, judge, progress="none", on_result=done, on_error=skipped, **options)
        for note in outcome.notes:
            reporter.note(f"note: {printable(note, markup=False)}")
    finally:
        estimator.on_call = None
        reporter.close()
    return outcome
