"""The judge-model protocol every backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypedDict, runtime_checkable

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from assay._scores import JudgeCall, Usage

__all__ = [
    "ChatMessage",
    "ChoiceProbabilities",
    "ChoiceScorer",
    "GenerateConfig",
    "JudgeModel",
    "JudgeResponse",
    "TokenLogprobs",
    "calls_made",
    "close_judge",
]


class ChatMessage(TypedDict):
    """One chat message sent to a judge."""

    role: Literal["system", "user", "assistant"]
    content: str


class GenerateConfig(BaseModel):
    """Decoding settings for one judge call.

    ``repeat`` is the repeat index of a deliberate repeat run: it is part of cache keys so
    that repeats are real repeats, and it is mixed into the seed of local models.

    ``top_logprobs`` (0: none) asks a judge that gives log-probabilities (an
    OpenAI-compatible one: ``gives_logprobs``) for that many most likely tokens at each generated
    position (:attr:`JudgeResponse.logprobs`). It is serialized only when asked for, so the
    cache keys and settings fingerprints of every other call are what they were before it.
    """

    model_config = ConfigDict(frozen=True)

    temperature: float = 0.0
    max_tokens: int = 512
    seed: int = 0
    repeat: int = 0
    top_logprobs: int = 0

    @model_serializer(mode="wrap")
    def _without_unasked_logprobs(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        dumped: dict[str, object] = handler(self)
        if not self.top_logprobs:
            dumped.pop("top_logprobs", None)
        return dumped


class TokenLogprobs(BaseModel):
    """One generated token, its log-probability, and the most likely tokens at its place (``top``)."""

    model_config = ConfigDict(frozen=True)

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


class JudgeResponse(BaseModel):
    """What a judge said, with its cost.

    ``finish_reason`` is ``"stop"``, ``"length"`` (truncated), ``"refusal"`` or whatever the
    backend reports; ``text`` is the raw output, kept verbatim for the record.
    ``attempts`` counts transport tries (retries after 429/5xx/timeouts); ``cached`` says
    the answer came from the judge-call cache without calling the model. ``logprobs``: per
    generated token, what the server gave when asked (``GenerateConfig.top_logprobs``);
    ``None`` when not asked.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    model: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    finish_reason: str | None = None
    attempts: int = 1
    cached: bool = False
    logprobs: tuple[TokenLogprobs, ...] | None = None


@runtime_checkable
class JudgeModel(Protocol):
    """A model that answers judge prompts.

    ``schema`` is the pydantic model the answer must validate against; a backend enforces
    it as strongly as it can (a grammar for local models, a JSON schema for APIs) but the
    caller still validates: the backend returns text, never a trusted object.

    Backends raise :class:`assay.errors.JudgeError` when no output could be had at all;
    callers turn that into an unscored result with reason ``judge_error``.

    Subclass it (``class MyJudge(JudgeModel): ...``) to inherit the defaults of the
    optional capabilities (:attr:`identity`, :attr:`components`, :attr:`batched_calls`,
    :attr:`interruptible`); a class that only matches it structurally must define them itself.
    """

    @property
    def model_id(self) -> str:
        """A stable identifier, e.g. ``local:qwen2.5-coder-1.5b-instruct-q4_k_m``."""
        ...

    @property
    def max_concurrency(self) -> int:
        """How many calls are worth sending at once (1 for an in-process model)."""
        ...

    @property
    def prefers_per_statement(self) -> bool:
        """Whether one constrained call per statement beats one call for all statements."""
        ...

    @property
    def identity(self) -> str:
        """Who answers, for cache keys: provider, endpoint and model (default: ``model_id``).

        Two judges whose answers may differ must differ here, even when their
        ``model_id`` is the same (one model name served by two servers, two GGUF files
        with one file name), so one's cached answers are never served for the other.
        Never holds credentials (URLs go through :func:`assay._safety.redact_url`).
        """
        return self.model_id

    @property
    def components(self) -> dict[str, str]:
        """What answers beyond :attr:`model_id`, for the run record (default: nothing more).

        Keys a backend may give: ``weights`` (the file and its layout), ``adapter``,
        ``build`` (the llama.cpp build and its kernels). A run stores them with the judge's
        :attr:`identity` (:class:`assay.run.JudgeRecord`); ``resume`` refuses a judge whose
        components differ and a comparison of two runs names the difference first. Never
        holds credentials.
        """
        return {}

    @property
    def batched_calls(self) -> int:
        """Calls one worker may keep in flight because the judge decodes them together (default 1).

        The local judge decodes the greedy calls a metric makes at once as one batch
        (:attr:`~assay.models.LocalJudge.sequences`); the runner's request slots are its
        workers times this, or the calls would reach it one at a time.
        """
        return 1

    @property
    def interruptible(self) -> bool:
        """Whether a call may be timed out and abandoned (default True).

        False for an in-process model: its call runs to completion in a thread, so a
        timeout would only orphan that thread; the runner then sets no timeout.
        """
        return True

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: type[BaseModel] | None = None,
        config: GenerateConfig | None = None,
    ) -> JudgeResponse:
        """Answer ``messages``; constrain the answer to ``schema`` where possible."""
        ...


class ChoiceProbabilities(dict[str, float]):
    """P(choice) per choice, plus the tokens the call cost (a plain ``dict`` otherwise).

    ``how`` says how P was read where it was not from the judge's own logits
    (``logprobs: top 20`` or ``samples: 5 at temperature 1 (1 x4, 0 x1)``; empty for the
    local judge), for the verdict's record. ``exchanges``: the model calls it took, each as
    sent and answered (its tokens, whether it was cached), with an empty ``purpose`` for the
    caller to name; empty when the backend read P in one pass of its own (the local judge),
    and the caller records one call with ``usage`` and ``cached`` (read from the judge-call
    cache, no model call made).
    """

    def __init__(
        self,
        probabilities: dict[str, float],
        usage: Usage | None = None,
        *,
        how: str = "",
        exchanges: Sequence[JudgeCall] = (),
        cached: bool = False,
    ) -> None:
        super().__init__(probabilities)
        self.usage = usage or Usage()
        self.how = how
        self.exchanges = tuple(exchanges)
        self.cached = cached


def calls_made(answer: object, purpose: str) -> tuple[JudgeCall, ...]:
    """The model calls a probability took, named for ``purpose``: ``answer``'s ``exchanges``.

    ``answer`` is a :class:`ChoiceProbabilities` or the error raised instead of one (an API
    judge whose answers gave no P still spent its calls). Empty when it records none (a judge
    that reads its logits in one pass): the caller then records its one call itself.
    """
    return tuple(call.model_copy(update={"purpose": purpose}) for call in getattr(answer, "exchanges", ()))


@runtime_checkable
class ChoiceScorer(Protocol):
    """A judge that can read the probability of each of a few answers from its logits.

    Used to turn a binary verdict into P(1) (and threshold it on dev data), and to take an
    expected value over a rating scale instead of the argmax.
    """

    async def choice_probabilities(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> dict[str, float]:
        """P(choice) for the next text after the assistant starts its answer with ``prefix``.

        Probabilities are renormalised over ``choices`` (they sum to 1). Each choice must
        begin with a distinct token. Backends that count tokens return a
        :class:`ChoiceProbabilities`, whose ``usage`` callers record.
        """
        ...


async def close_judge(judge: JudgeModel) -> None:
    """Release what a judge holds in the running event loop (HTTP clients), if anything.

    Backends with network clients define ``async aclose()``; others need nothing.
    """
    aclose = getattr(judge, "aclose", None)
    if aclose is not None:
        await aclose()
