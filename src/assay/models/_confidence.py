"""A confidence for a judge that generates its verdicts: read from log-probabilities, or from samples.

The local judge reads P(choice) from its logits (:class:`~assay.models.ChoiceScorer`). An API
judge generates text, so it has no probability unless asked for one. :class:`ConfidentJudge`
gives it one, by one of two kinds (:class:`Confidence`), chosen by the user, never by default:

- ``logprobs`` (``openai:MODEL+logprobs``; an OpenAI-compatible server that returns them):
  one short call at temperature 0 asking for the next word only, with ``logprobs: true`` and
  ``top_logprobs: N`` (default 20, OpenAI's most). P(choice) is the summed probability of the
  most likely tokens at the answer's first word (after the answer's start, where the judge
  writes that out again: ``{"verdict": 1``) that begin that choice (``" 1"`` and ``"1"``,
  ``"Yes"`` and ``" yes"``; case, spaces and quotes aside), renormalised over the choices. A
  choice absent from the ``N`` listed tokens counts as the most an unlisted token can hold
  (the smallest listed probability, or the mass not listed if less), not as 0: its verdict's
  confidence is never overstated by the cut. The generated token must itself be a choice.
- ``samples:K`` (any judge: ``anthropic:MODEL+samples:5``): ``K`` such calls at temperature
  1, each with its own seed; P(choice) is the share of answers giving it. ``K`` calls per
  question, every one counted in the tokens and cost recorded; an answer that is none of the
  choices fails the question (no share is counted from part of the answers).

No made-up probability: a server that returns no log-probabilities, an answer that is none of
the choices, a refusal, each raises :class:`~assay.errors.JudgeError`, which the verifier
turns into an unscored result with the reason and a cascade into a question not kept.

The kind is part of the judge's :attr:`~ConfidentJudge.identity` (a calibration with
log-probabilities is never used for the same model read by samples, nor for the plain judge)
and of its :attr:`~ConfidentJudge.components` (the run record says it). Only
:meth:`~ConfidentJudge.choice_probabilities` changes: ``generate`` is the inner judge's, so a
metric's generated verdicts are what the plain judge gives.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from assay._scores import JudgeCall, Usage
from assay.errors import ConfigError, JudgeError
from assay.models._protocol import (
    ChatMessage,
    ChoiceProbabilities,
    ChoiceScorer,
    GenerateConfig,
    JudgeModel,
    JudgeResponse,
    TokenLogprobs,
)
from assay.models._wrapper import JudgeWrapper

__all__ = [
    "CONFIDENCE_FORMS",
    "Confidence",
    "ConfidentJudge",
    "UnreadProbabilityError",
    "judge_name",
    "judge_string",
    "one_word_prompt",
]

CONFIDENCE_FORMS = "+logprobs, +logprobs:N (top N tokens, 1-20), +samples:K (K answers, 2-50)"
"""How a judge string asks for a confidence (after the model: ``openai:gpt-4o-mini+logprobs``)."""

_TOP_DEFAULT = 20
_TOP_MAX = 20
_SAMPLES_DEFAULT = 5
_SAMPLES_MAX = 50
SAMPLE_TEMPERATURE = 1.0
"""The temperature of each ``samples`` answer."""
_SEED_STRIDE = 1000  # sample i of repeat r sends seed 1000 * i + r: no two share one
_STRIP = " \t\r\n\"'`*.,:;()[]{}"
_MAX_TOKENS = 16  # the word, or the word after a restated start ('{"verdict": 1' is 5 tokens)
_WORD = re.compile(r"[^\W_]+|_", re.UNICODE)
_TAG = "answer-start"


@dataclass(frozen=True)
class Confidence:
    """How a judge without logits gives P(choice): its kind and size.

    Attributes:
        kind: ``logprobs`` (the answer token's log-probabilities) or ``samples`` (agreement
            over ``samples`` answers at temperature 1).
        top: ``logprobs``: how many most likely tokens the server lists (1-20).
        samples: ``samples``: answers per question (2-50), each a call.
    """

    kind: Literal["logprobs", "samples"]
    top: int = _TOP_DEFAULT
    samples: int = _SAMPLES_DEFAULT

    def __post_init__(self) -> None:
        if self.kind not in ("logprobs", "samples"):
            raise ConfigError(f"a confidence is logprobs or samples, not {self.kind!r} ({CONFIDENCE_FORMS})")
        if not 1 <= self.top <= _TOP_MAX:
            raise ConfigError(f"logprobs:N lists 1 to {_TOP_MAX} tokens, got {self.top}")
        if not 2 <= self.samples <= _SAMPLES_MAX:
            raise ConfigError(f"samples:K takes 2 to {_SAMPLES_MAX} answers, got {self.samples}")

    @classmethod
    def parse(cls, text: str) -> Confidence:
        """``logprobs``, ``logprobs:N``, ``samples`` or ``samples:K``.

        Raises:
            ConfigError: another kind, or a size that is not a whole number in range.
        """
        kind, colon, size = text.strip().partition(":")
        if kind not in ("logprobs", "samples"):
            raise ConfigError(f"unknown confidence {text!r}: use {CONFIDENCE_FORMS}")
        if colon and not size.strip().isdigit():
            raise ConfigError(f"confidence {text!r}: the number after ':' must be a whole number ({CONFIDENCE_FORMS})")
        if kind == "logprobs":
            return cls("logprobs", top=int(size) if colon else _TOP_DEFAULT)
        return cls("samples", samples=int(size) if colon else _SAMPLES_DEFAULT)

    @property
    def spec(self) -> str:
        """The string form, size included: ``logprobs:20``, ``samples:5``."""
        return f"logprobs:{self.top}" if self.kind == "logprobs" else f"samples:{self.samples}"

    @property
    def calls(self) -> int:
        """Model calls per question: 1 with log-probabilities, ``samples`` by samples."""
        return 1 if self.kind == "logprobs" else self.samples

    def describe(self) -> str:
        """What it is and what it costs, for the run record and ``assay model info``."""
        if self.kind == "logprobs":
            return f"log-probabilities of the answer's first token (top {self.top}), one short call per question"
        return (
            f"agreement over {self.samples} answers at temperature {SAMPLE_TEMPERATURE:g}, "
            f"{self.samples} calls per question"
        )


class ConfidentJudge(JudgeWrapper):
    """A judge that generates its verdicts, given P(choice) by log-probabilities or by samples.

    ``ConfidentJudge(OpenAIJudge("gpt-4o-mini"), "logprobs")`` (or the judge string
    ``openai:gpt-4o-mini+logprobs``) is a :class:`~assay.models.ChoiceScorer`: the statement
    verifier reads its verdicts by threshold and a cascade can keep the ones it is sure of
    (see the module docstring for how P is read).

    Args:
        inner: The judge (an OpenAI-compatible one for ``logprobs``; any for ``samples``).
        confidence: A :class:`Confidence` or its string (``logprobs``, ``samples:5``).

    Raises:
        ConfigError: ``logprobs`` for a judge whose server cannot return them (Anthropic, a
            plugin), or a judge that already reads probabilities from its logits.
    """

    def __init__(self, inner: JudgeModel, confidence: Confidence | str) -> None:
        super().__init__(inner)
        self.confidence = Confidence.parse(confidence) if isinstance(confidence, str) else confidence
        if isinstance(inner, ChoiceScorer):
            raise ConfigError(
                f"judge {inner.model_id} reads its probabilities from its own logits already: "
                f"+{self.confidence.kind} is for judges that generate their verdicts (API judges)"
            )
        if self.confidence.kind == "logprobs" and getattr(inner, "gives_logprobs", False) is not True:
            raise ConfigError(
                f"judge {inner.model_id} cannot return log-probabilities (only an OpenAI-compatible server can): "
                f"use +samples:K instead of +logprobs (agreement over K answers, K calls per question)"
            )
        self._repeat: Callable[[], int] | None = None

    def over(self, inner: JudgeModel, *, repeat: Callable[[], int] | None = None) -> ConfidentJudge:
        """The same confidence over ``inner`` (the inner judge's stack: cache, retries, limits).

        ``repeat`` gives the current repeat index (the stack's), so samples of a repeat run
        are new samples.
        """
        made = ConfidentJudge.__new__(ConfidentJudge)
        JudgeWrapper.__init__(made, inner)
        made.confidence = self.confidence
        made._repeat = repeat
        return made

    def __repr__(self) -> str:
        return f"ConfidentJudge({self.inner!r}, {self.confidence.spec!r})"

    @property
    def prefers_per_statement(self) -> bool:
        """True: a confidence is read per verdict, so each statement is its own question.

        (An API judge alone answers all of a sample's statements in one call; faithfulness
        then generates its verdicts in one batch, with no probability to read.)
        """
        return True

    @property
    def identity(self) -> str:
        """``<confidence>+<inner identity>``, e.g. ``logprobs:20+openai:gpt-4o-mini@https://api.openai.com/v1``.

        Another kind or size is another judge: calibrations and cached answers key on it.
        """
        return f"{self.confidence.spec}+{self.inner.identity}"

    @property
    def components(self) -> dict[str, str]:
        """The inner judge's, and ``confidence``: how P is read and what it costs."""
        return {**self.inner.components, "confidence": self.confidence.describe()}

    async def choice_probabilities(
        self,
        messages: Sequence[ChatMessage],
        *,
        prefix: str,
        choices: Sequence[str],
        config: GenerateConfig | None = None,
    ) -> ChoiceProbabilities:
        """P(choice) for the answer's next word after ``prefix``, renormalised over ``choices``.

        Raises:
            ConfigError: fewer than two choices, or one that begins another.
            JudgeError: no probability can be read (no log-probabilities, a refusal, an
                answer that is none of the choices); the message says which.
        """
        _check_choices(choices)
        config = config or GenerateConfig()
        repeat = self._repeat() if self._repeat is not None else config.repeat
        asked = one_word_prompt(messages, prefix, choices)
        model = self.inner.model_id
        if self.confidence.kind == "logprobs":
            top = self.confidence.top
            ask = GenerateConfig(
                temperature=0.0, max_tokens=_MAX_TOKENS, seed=config.seed, repeat=repeat, top_logprobs=top
            )
            response = await self.inner.generate(asked, config=ask)
            try:
                if response.finish_reason == "refusal":
                    raise JudgeError(
                        f"the judge refused to answer with one of {list(choices)}: {response.text[:200]!r}"
                    )
                probabilities, how = _from_logprobs(response.logprobs, response.text, choices, top, prefix)
            except JudgeError as exc:
                raise UnreadProbabilityError(str(exc), [_exchange(model, asked, response, error=str(exc))]) from None
            shown = json.dumps({"answer": response.text, "p": probabilities}, ensure_ascii=False)
            exchange = _exchange(model, asked, response, raw=shown)
            return ChoiceProbabilities(probabilities, response.usage, how=how, exchanges=[exchange])
        k = self.confidence.samples
        configs = [
            GenerateConfig(
                temperature=SAMPLE_TEMPERATURE,
                max_tokens=_MAX_TOKENS,
                seed=config.seed + _SEED_STRIDE * i,
                repeat=repeat,
            )
            for i in range(k)
        ]
        responses = await asyncio.gather(*(self.inner.generate(asked, config=c) for c in configs))
        said = [
            None if r.finish_reason == "refusal" else _read_choice(_after(r.text, prefix), choices) for r in responses
        ]
        failed = next((i for i, choice in enumerate(said) if choice is None), None)
        if failed is not None:
            what = "refused" if responses[failed].finish_reason == "refusal" else "answered"
            message = (
                f"answer {failed + 1} of {k} {what} {responses[failed].text[:200]!r}, not one of {list(choices)}: "
                "no share is counted from part of the answers"
            )
            made = [_exchange(model, asked, r, error=message if i == failed else None) for i, r in enumerate(responses)]
            raise UnreadProbabilityError(message, made)
        counts = Counter(said)
        shares = {c: counts[c] / k for c in choices}
        tally = ", ".join(f"{c} x{counts[c]}" for c in choices if counts[c])
        how = f"samples: {k} at temperature {SAMPLE_TEMPERATURE:g} ({tally})"
        usage = sum((r.usage for r in responses), Usage())
        exchanges = [_exchange(model, asked, r) for r in responses]
        return ChoiceProbabilities(shares, usage, how=how, exchanges=exchanges)


class UnreadProbabilityError(JudgeError):
    """No probability could be read from what the judge answered; ``exchanges``: the calls it made (tokens count)."""

    def __init__(self, message: str, exchanges: Sequence[JudgeCall]) -> None:
        super().__init__(message)
        self.exchanges = tuple(exchanges)


_CONFIDENCE_IN_IDENTITY = re.compile(r"^((?:logprobs|samples):\d+)\+")


def judge_string(model_id: str, identity: str) -> str:
    """The judge string that rebuilds a judge of this identity's kind: ``openai:m+logprobs:20`` (else ``model_id``).

    For messages that tell a user what to run (``assay calibrate --judge ...``): the plain
    model id of a judge with a confidence names another judge.
    """
    found = _CONFIDENCE_IN_IDENTITY.match(identity)
    return f"{model_id}+{found.group(1)}" if found else model_id


def judge_name(judge: str | JudgeModel) -> str:
    """What a judge is called where a run names it (a bench column, a stored run, a cascade level).

    A judge string as given; a judge object by the string that rebuilds its kind, so an
    ``openai:m`` asked for log-probabilities is ``openai:m+logprobs:20``, not the plain judge.
    """
    return judge if isinstance(judge, str) else judge_string(judge.model_id, judge.identity)


def _exchange(
    model: str,
    sent: Sequence[ChatMessage],
    response: JudgeResponse,
    *,
    raw: str | None = None,
    error: str | None = None,
) -> JudgeCall:
    """One call made for a probability, as the caller records it (it names the purpose); ``raw``: else the text."""
    return JudgeCall(
        model=model,
        purpose="",
        messages=tuple(dict(m) for m in sent),
        raw_output=response.text if raw is None else raw,
        usage=response.usage,
        latency_s=response.latency_s,
        error=error,
        attempts=response.attempts,
        cached=response.cached,
    )


def _check_choices(choices: Sequence[str]) -> None:
    folded = [c.strip().casefold() for c in choices]
    if len(folded) < 2 or len(set(folded)) != len(folded) or not all(folded):
        raise ConfigError(f"choices {list(choices)} must be at least two distinct answers")
    for a in folded:
        for b in folded:
            if a != b and b.startswith(a):
                raise ConfigError(f"choices {list(choices)}: {a!r} begins {b!r}, so a token cannot tell them apart")


def one_word_prompt(messages: Sequence[ChatMessage], prefix: str, choices: Sequence[str]) -> list[ChatMessage]:
    """``messages`` with the last user turn asking for the next word of the answer only."""
    listed = ", ".join(choices)
    if prefix.strip():
        shown = re.sub(rf"<(/?)\s*{_TAG}\b", rf"‹\1{_TAG}", prefix, flags=re.IGNORECASE)
        ask = (
            f"Answer with one word. Your answer begins with the text in <{_TAG}>; reply with only the word "
            f"that comes next, exactly one of: {listed}. Nothing else.\n<{_TAG}>\n{shown}\n</{_TAG}>"
        )
    else:
        ask = f"Answer with one word: exactly one of {listed}. Nothing else."
    out = [ChatMessage(role=m["role"], content=m["content"]) for m in messages]
    if out and out[-1]["role"] == "user":
        out[-1] = ChatMessage(role="user", content=f"{out[-1]['content']}\n\n{ask}")
    else:
        out.append(ChatMessage(role="user", content=ask))
    return out


def _match(token: str, choices: Sequence[str]) -> str | None:
    """The choice a token begins (case, spaces and quotes aside), or ``None`` (none, or more than one)."""
    text = token.strip(_STRIP).casefold()
    if not text:
        return None
    exact = [c for c in choices if c.strip().casefold() == text]
    if exact:
        return exact[0]
    begun = [c for c in choices if c.strip().casefold().startswith(text)]
    return begun[0] if len(begun) == 1 else None


def _read_choice(text: str, choices: Sequence[str]) -> str | None:
    """The choice an answer gives: all of it, or its first word (case and quotes aside)."""
    whole = text.strip(_STRIP).casefold()
    for choice in choices:
        if whole == choice.strip().casefold():
            return choice
    first = _WORD.search(text)
    if first is None:
        return None
    word = first.group(0).casefold()
    return next((c for c in choices if c.strip().casefold() == word), None)


def _after(text: str, prefix: str) -> str:
    """``text`` past ``prefix`` where the judge wrote its answer's start out again (whitespace aside), else ``text``.

    Told to give only the next word, a judge may still write ``{"verdict": 1``.
    """
    want = "".join(prefix.split())
    matched = 0
    for i, char in enumerate(text):
        if char.isspace():
            continue
        if matched >= len(want) or char != want[matched]:
            return text
        matched += 1
        if matched == len(want):
            return text[i + 1 :]
    return text


def _restated(tokens: Sequence[str], prefix: str) -> int:
    """The index of the first token past ``prefix`` where the answer writes it out again, else 0.

    Only a prefix that ends between two tokens counts: a token that straddles it is no
    choice's first token.
    """
    want = "".join(prefix.split())
    seen = ""
    for i, token in enumerate(tokens):
        seen += "".join(token.split())
        if not want or not want.startswith(seen):
            return 0
        if seen == want:
            return i + 1
    return 0


def _from_logprobs(
    logprobs: Sequence[TokenLogprobs] | None, text: str, choices: Sequence[str], top: int, prefix: str = ""
) -> tuple[dict[str, float], str]:
    """P(choice) from the first answer token with content (see the module docstring), and how it was read."""
    tokens = list(logprobs or ())
    if not tokens:
        raise JudgeError(f"the judge's answer {text[:200]!r} came with no log-probabilities: no P can be read")
    start = _restated([t.token for t in tokens], prefix)
    at = next((t for t in tokens[start:] if t.token.strip(_STRIP)), None)
    if at is None or _match(at.token, choices) is None:
        raise JudgeError(
            f"the judge answered {text[:200]!r}, not one of {list(choices)}: no probability is read from an answer "
            "that is none of them"
        )
    listed = at.top or ((at.token, at.logprob),)
    mass = dict.fromkeys(choices, 0.0)
    for token, logprob in listed:
        choice = _match(token, choices)
        if choice is not None and math.isfinite(logprob):
            mass[choice] += math.exp(logprob)
    shown = [math.exp(lp) for _, lp in listed if math.isfinite(lp)]
    bound = min(min(shown, default=0.0), max(0.0, 1.0 - sum(shown)))
    missing = [c for c in choices if mass[c] == 0.0]
    for choice in missing:
        mass[choice] = bound
    total = sum(mass.values())
    if not total > 0:
        raise JudgeError(f"the log-probabilities of {text[:200]!r} give no mass to {list(choices)}")
    how = f"logprobs: top {top}"
    if missing:
        how += f"; {', '.join(missing)} not among them (counted at most {bound:.2g})"
    return {c: mass[c] / total for c in choices}, how
