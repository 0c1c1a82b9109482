"""Public test doubles: judges that never touch a model or the network.

Use them to test code built on assay (and assay itself) deterministically::

    judge = ScriptedJudge(['{"statements": ["Paris is in France."]}',
                           '{"verdict": 1, "reason": "stated in context"}'])
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from assay._scores import Usage
from assay.errors import JudgeError
from assay.models._protocol import ChatMessage, ChoiceProbabilities, GenerateConfig, JudgeModel, JudgeResponse

__all__ = ["FunctionJudge", "JudgeRequest", "ProbabilityJudge", "ScriptExhaustedError", "ScriptedJudge"]


@dataclass(frozen=True)
class JudgeRequest:
    """One request a test double received."""

    messages: tuple[ChatMessage, ...]
    schema: type[BaseModel] | None
    config: GenerateConfig


class ScriptExhaustedError(AssertionError):
    """A :class:`ScriptedJudge` was asked more often than it had answers for."""


def _estimate_usage(messages: Sequence[ChatMessage], text: str) -> Usage:
    # A rough, deterministic token count (4 characters a token) so cost plumbing is testable.
    prompt_chars = sum(len(m["content"]) for m in messages)
    return Usage(prompt_tokens=prompt_chars // 4 + 1, completion_tokens=len(text) // 4 + 1)


class ScriptedJudge(JudgeModel):
    """Answers with a fixed script, in order.

    Each script item is the raw text to return, a :class:`JudgeResponse`, or an exception
    to raise (e.g. ``JudgeError("timeout")``). Every request is recorded in ``requests``
    unless ``record=False`` (for long streaming runs, where the record would grow unbounded).
    """

    def __init__(
        self,
        script: Iterable[str | JudgeResponse | BaseException],
        *,
        model_id: str = "scripted",
        per_statement: bool = True,
        record: bool = True,
    ) -> None:
        self._script = list(script)
        self._model_id = model_id
        self._per_statement = per_statement
        self._record = record
        self._calls = 0
        self.requests: list[JudgeRequest] = []

    @property
    def model_id(self) -> str:
        """The name given at construction."""
        return self._model_id

    @property
    def max_concurrency(self) -> int:
        """One: a script is consumed in order."""
        return 1

    @property
    def prefers_per_statement(self) -> bool:
        """As configured (default True)."""
        return self._per_statement

    @property
    def remaining(self) -> int:
        """Answers not yet used."""
        return len(self._script)

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Return the next scripted answer (or raise the next scripted exception)."""
        self._calls += 1
        if self._record:
            self.requests.append(JudgeRequest(tuple(messages), schema, config or GenerateConfig()))
        if not self._script:
            raise ScriptExhaustedError(f"ScriptedJudge ran out of answers after {self._calls - 1} calls")
        item = self._script.pop(0)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, JudgeResponse):
            return item
        return JudgeResponse(
            text=item,
            model=self._model_id,
            usage=_estimate_usage(messages, item),
            finish_reason="stop",
        )


JudgeFunction = Callable[[Sequence[ChatMessage], JudgeRequest], "str | JudgeResponse | Awaitable[str | JudgeResponse]"]


@dataclass
class FunctionJudge(JudgeModel):
    """Answers by calling ``fn(messages, request)``; sync or async, returns text or a response.

    Good for judges whose answer depends on the prompt, e.g. a fake that marks a
    statement supported when its words appear in the context. Requests are kept in
    ``requests`` unless ``record=False``.
    """

    fn: JudgeFunction
    name: str = "function"
    concurrency: int = 8
    per_statement: bool = True
    record: bool = True
    requests: list[JudgeRequest] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        """The name given at construction."""
        return self.name

    @property
    def max_concurrency(self) -> int:
        """As configured (default 8)."""
        return self.concurrency

    @property
    def prefers_per_statement(self) -> bool:
        """As configured (default True)."""
        return self.per_statement

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Call the function; wrap a text answer in a :class:`JudgeResponse`."""
        request = JudgeRequest(tuple(messages), schema, config or GenerateConfig())
        if self.record:
            self.requests.append(request)
        result = self.fn(messages, request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, JudgeResponse):
            return result
        if not isinstance(result, str):
            raise JudgeError(f"FunctionJudge function returned {type(result).__name__}, not str")
        return JudgeResponse(
            text=result,
            model=self.name,
            usage=_estimate_usage(messages, result),
            finish_reason="stop",
        )


ProbabilityFunction = Callable[[str, str], float]
"""``fn(statement, context) -> P(1)``: what a :class:`ProbabilityJudge` reads from its "logits"."""


class ProbabilityJudge(FunctionJudge):
    """A judge with probabilities (a :class:`~assay.models.ChoiceScorer`) and known confidences.

    ``p1(statement, context)`` gives P(1) for a verdict question (the statement verifier's
    prompt: its ``<statement>`` and ``<context>`` blocks), ``p1(conversation, "")`` P(PASS)
    for a binary grader's label (its ``<conversation>`` block). Other questions (splitting an
    answer) are answered by ``fn`` as a :class:`FunctionJudge` does (default: none, a
    :class:`~assay.errors.JudgeError`; faithfulness with ``decomposer="sentences"`` asks
    none). The verifier reads its verdicts by threshold from it, and a cascade keeps or
    escalates them by those P, so a cascade test knows exactly which verdicts must go on.
    Every probability question's statement is kept in ``asked``.
    """

    def __init__(
        self,
        p1: ProbabilityFunction,
        *,
        name: str = "probability",
        fn: JudgeFunction | None = None,
    ) -> None:
        def answer(messages: Sequence[ChatMessage], request: JudgeRequest) -> str:
            raise JudgeError(f"ProbabilityJudge {name!r} was asked to generate; give it fn= for that")

        super().__init__(fn or answer, name=name, concurrency=1)
        self.p1 = p1
        self.asked: list[str] = []

    async def choice_probabilities(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> dict[str, float]:
        """P(1) from ``p1`` for the statement and context in the last message; renormalised over 1/0."""
        user = messages[-1]["content"]
        statement = _block(user, "statement")
        context = _block(user, "context")
        if statement is not None and context is not None and sorted(choices) == ["0", "1"]:
            self.asked.append(statement)
            p = float(self.p1(statement, context))
            return ChoiceProbabilities({"1": p, "0": 1.0 - p}, _estimate_usage(messages, "1"))
        if list(choices[:2]) == ["PASS", "FAIL"]:  # a grader's label: p1(conversation, "")
            conversation = _block(user, "conversation") or user
            self.asked.append(conversation)
            p = float(self.p1(conversation, ""))
            rest = dict.fromkeys(choices[2:], 0.0)
            return ChoiceProbabilities({"PASS": p, "FAIL": 1.0 - p, **rest}, _estimate_usage(messages, "P"))
        raise JudgeError(f"ProbabilityJudge reads statement verdicts and grader labels, not choices {list(choices)}")


def _block(text: str, tag: str) -> str | None:
    start, end = f"<{tag}>\n", f"\n</{tag}>"
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0]
