"""Breaking an answer into atomic statements."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, Field

from assay._scores import ERROR_REASONS, AnswerMap, JudgeCall
from assay.grounding._addressed import addresses_judge
from assay.grounding._anchor import (
    about_the_answer,
    answer_sentences,
    is_fragment,
    is_referent,
    preamble_end,
    settle,
    short_reference,
)
from assay.grounding._sentences import _segmenter, text_pieces
from assay.models._protocol import GenerateConfig, JudgeModel
from assay.parsing import Unparsed
from assay.prompts import Example, JudgePrompt, ask

__all__ = [
    "SENTENCE_PROMPT",
    "STATEMENTS_PROMPT",
    "AnchoredDecomposer",
    "AnswerToSplit",
    "Decomposer",
    "Decomposition",
    "HybridDecomposer",
    "LLMDecomposer",
    "SentenceDecomposer",
    "SentenceToSplit",
    "Statements",
    "anchored",
    "packs_facts",
]


class AnswerToSplit(BaseModel):
    """Input of the statement-extraction prompt."""

    question: str
    answer: str


class Statements(BaseModel):
    """Output of the statement-extraction prompt."""

    statements: list[str] = Field(description="atomic, standalone statements; pronouns resolved")


STATEMENTS_PROMPT: JudgePrompt[AnswerToSplit, Statements] = JudgePrompt(
    name="faithfulness.statements",
    version="1",
    instruction=(
        "You break an answer into atomic statements. Each statement states exactly one fact "
        "from the answer, is understandable on its own (replace every pronoun and vague "
        "reference with the thing it refers to, using the question where needed), and adds "
        "nothing that the answer does not say. Keep the answer's own words where possible. "
        "Skip greetings, filler and questions. If the answer states no facts, return an "
        "empty list."
    ),
    input_model=AnswerToSplit,
    output_model=Statements,
    question="List the atomic statements of the answer in <answer>.",
    examples=(
        Example(
            AnswerToSplit(
                question="Who was Albert Einstein and what is he best known for?",
                answer=(
                    "He was a German-born theoretical physicist, widely acknowledged to be one "
                    "of the greatest physicists of all time. He was best known for developing "
                    "the theory of relativity."
                ),
            ),
            Statements(
                statements=[
                    "Albert Einstein was a German-born theoretical physicist.",
                    "Albert Einstein is recognized as one of the greatest physicists of all time.",
                    "Albert Einstein was best known for developing the theory of relativity.",
                ]
            ),
        ),
    ),
)


@dataclass(frozen=True)
class Decomposition:
    """Statements, the calls that produced them, or why there are none.

    ``spans`` (one entry per statement) and ``answer_map`` are set by decompositions that
    anchor their statements to the answer (:class:`AnchoredDecomposer`, or
    :func:`anchored` over any other): where each statement comes from, what became of
    every sentence, and which proposed statements were dropped.
    """

    statements: tuple[str, ...]
    calls: tuple[JudgeCall, ...] = ()
    failure: Unparsed | None = None
    spans: tuple[tuple[tuple[int, int], ...], ...] = ()
    answer_map: AnswerMap | None = None


class Decomposer(Protocol):
    """Turns an answer into statements."""

    @property
    def name(self) -> str:
        """``llm`` or ``sentences`` (part of the metric's spec)."""
        ...

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Split ``answer``; never raises for judge failures."""
        ...


@dataclass(frozen=True)
class SentenceDecomposer:
    """One statement per sentence (pysbd). Cheap, no judge call; pronouns stay unresolved."""

    language: str = "en"
    name: str = field(default="sentences", init=False)

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Split ``answer`` into sentences (a long answer piece by piece, see :func:`text_pieces`)."""
        if (short := short_reference(answer)) is not None:
            return Decomposition((short,))
        segmenter = _segmenter(self.language)
        sentences = (_claim(s) for piece in text_pieces(answer) for s in segmenter.segment(piece))
        return Decomposition(tuple(s for s in sentences if is_checkable(s)))


@dataclass(frozen=True)
class LLMDecomposer:
    """Atomic, standalone statements with pronouns resolved, written by the judge."""

    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=1024))
    name: str = field(default="llm", init=False)

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Ask the judge for the answer's statements (a short reference is its one statement: no call)."""
        if (short := short_reference(answer)) is not None:
            return Decomposition((short,))
        result = await ask(
            judge, STATEMENTS_PROMPT, AnswerToSplit(question=question, answer=answer), config=self.config
        )
        if result.output is None:
            return Decomposition((), result.calls, result.failure)
        statements = tuple(s.strip() for s in result.output.statements if is_checkable(s))
        return Decomposition(statements, result.calls)


_DANGLING = re.compile(
    r"^(?:\W*)(?:yes|no|yeah|nope|sure|correct|right|exactly|indeed|it|its|it's|he|she|they|them|his|her|hers|"
    r"their|theirs|this|that|these|those|there|here|both|either|neither|such|also|so|then|which|who|"
    r"the former|the latter|the same|one of them)\b",
    re.IGNORECASE,
)
_AUXILIARY = re.compile(
    r"\b(?:is|are|was|were|be|been|has|have|had|do|does|did|can|could|will|would|shall|should|may|might|must)\b",
    re.IGNORECASE,
)
_FRAGMENT_START = frozenset(
    {
        "within", "in", "on", "at", "about", "around", "after", "before", "since", "until", "till", "for",
        "from", "by", "with", "without", "only", "just", "over", "under", "between", "during", "because", "due",
        "mostly", "mainly", "approximately", "roughly", "nearly", "almost", "probably", "maybe", "perhaps",
    }
)  # fmt: skip
_SHORT_WORDS = 6
_LONG_WORDS = 30


def needs_rewriting(sentence: str) -> bool:
    """Whether a sentence cannot stand alone as a statement to check.

    It leans on something outside itself: it opens with a pronoun, a demonstrative or a
    bare "Yes"/"No" (whose meaning is in the question or the sentence before), it is a
    short fragment (it opens with a preposition or adverb, "Within 30 days.", or has no
    verb-like word), or it is so long that it packs several facts. Such sentences go to
    the judge to be rewritten; the rest are kept verbatim, which is both faster and
    exactly what the answer said.
    """
    words = sentence.split()
    bare = [w.strip(".,;:!?\"'()").lower() for w in words]
    verb_like = _AUXILIARY.search(sentence) or any(w.endswith(("s", "ed")) and len(w) > 3 for w in bare[1:])
    fragment = len(words) <= _SHORT_WORDS and ((bool(bare) and bare[0] in _FRAGMENT_START) or not verb_like)
    return bool(_DANGLING.match(sentence)) or fragment or len(words) > _LONG_WORDS


@dataclass(frozen=True)
class HybridDecomposer:
    """Sentences first; the judge rewrites only the sentences that cannot stand alone.

    Most answers are made of sentences that already are checkable statements. Splitting
    with pysbd costs nothing, and each sentence that :func:`needs_rewriting` (a pronoun to
    resolve, a bare "Yes", a fragment, a long compound sentence) is sent to the judge
    with the question and the sentence before it, to come back as standalone statements.
    An answer whose sentences all stand alone makes no judge call at all.
    """

    language: str = "en"
    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=512))
    name: str = field(default="hybrid", init=False)

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Split ``answer``; rewrite, one call each, the sentences that lean on something else."""
        if (short := short_reference(answer)) is not None:
            return Decomposition((short,))
        segmenter = _segmenter(self.language)
        sentences = [_claim(s) for piece in text_pieces(answer) for s in segmenter.segment(piece) if s.strip()]
        statements: list[str] = []
        calls: list[JudgeCall] = []
        previous = ""
        for sentence in sentences:
            if about_the_answer(sentence):  # states nothing about the world: nothing to rewrite
                previous = sentence
                continue
            if not needs_rewriting(sentence):
                if is_checkable(sentence):
                    statements.append(sentence)
                previous = sentence
                continue
            asked = f"{question}\n(The answer so far: {previous})" if previous else question
            result = await ask(
                judge, STATEMENTS_PROMPT, AnswerToSplit(question=asked, answer=sentence), config=self.config
            )
            calls.extend(result.calls)
            if result.output is None:
                return Decomposition(tuple(statements), tuple(calls), result.failure)
            taken = {_key(s) for s in statements}
            for rewritten in result.output.statements:
                if is_checkable(rewritten) and _key(rewritten) not in taken:  # it restated the sentence before
                    statements.append(rewritten.strip())
                    taken.add(_key(rewritten))
            previous = sentence
        return Decomposition(tuple(statements), tuple(calls))


def _claim(sentence: str) -> str:
    """A sentence without a preamble about the answer ("Based on the context, X" is "X")."""
    sentence = sentence.strip()
    return sentence[preamble_end(sentence) :].strip()


def _key(statement: str) -> str:
    """A statement compared without case, spacing or final punctuation."""
    return " ".join(statement.lower().split()).rstrip(".!?")


def is_checkable(statement: str) -> bool:
    """Whether an extracted statement can be checked at all: two words or more, about the world.

    Small judges sometimes return a bare "No." or "Sure." as a statement. It states no
    fact, so judging it against a context only adds noise (a faithful "No, refunds are
    not possible" answer lost a point for its "No."). Applied by every decomposer; what
    the LLM decomposer dropped stays visible in its extraction call's raw output. A
    statement about the answer itself ("Here is a concise summary of the passage.") states
    nothing about the world either (:func:`~assay.grounding._anchor.about_the_answer`).
    """
    words = sum(1 for word in statement.split() if any(c.isalnum() for c in word))
    return words >= 2 and not about_the_answer(statement)


class SentenceToSplit(BaseModel):
    """Input of the one-sentence rewrite prompt: the referents first (shared), the sentence last."""

    question: str
    previous: str
    sentence: str


SENTENCE_PROMPT: JudgePrompt[SentenceToSplit, Statements] = JudgePrompt(
    name="faithfulness.sentence_statements",
    version="1",
    instruction=(
        "You rewrite one sentence of an answer as atomic statements. Each statement states exactly "
        "one fact that the sentence states, as a complete sentence with a subject and a verb. "
        "Replace each pronoun or vague reference (he, she, it, they, this, the company) with what it "
        "refers to, taken from the question or the previous sentence; take nothing else from them. "
        "Keep the sentence's own words and add nothing the sentence does not say. A list of several "
        "things gives one statement per thing. If the sentence states one fact, return it as the one "
        "statement. If it states no fact, return an empty list."
    ),
    input_model=SentenceToSplit,
    output_model=Statements,
    question="List the atomic statements of the sentence in <sentence>.",
    examples=(
        Example(
            SentenceToSplit(
                question="Tell me about the Lindqvist bakery.",
                previous="The Lindqvist bakery opened in Malmo in 1921.",
                sentence="It sells rye bread, cardamom buns and coffee, and it closes at noon on Sundays.",
            ),
            Statements(
                statements=[
                    "The Lindqvist bakery sells rye bread.",
                    "The Lindqvist bakery sells cardamom buns.",
                    "The Lindqvist bakery sells coffee.",
                    "The Lindqvist bakery closes at noon on Sundays.",
                ]
            ),
        ),
        Example(
            SentenceToSplit(
                question="Which river is longer, the Ord or the Fitzroy?", previous="", sentence="The Fitzroy."
            ),
            Statements(statements=["The Fitzroy is longer than the Ord."]),
        ),
    ),
)


_CLAUSE_JOIN = re.compile(
    r";|:\s+\S+\s+\S+|,\s+(?:and|but|while|whereas|which|who|where)\b"
    r"|\s(?:and|but)\s+(?:\w+\s+){0,2}?(?:is|are|was|were|has|have|had|will|can|\w+ed)\b",
    re.IGNORECASE,
)
_PACKED_WORDS = 22


def packs_facts(sentence: str) -> bool:
    """Whether a sentence states several facts: joined clauses, a list, a colon, or many words.

    "X was born in Paris and moved to London" (a second verb after "and"), "It sells
    bread, buns and coffee" (a list), "Two things: ..." and sentences of more than
    :data:`_PACKED_WORDS` words go to the judge to be split; "X is 6,400 km long" does not.
    """
    return len(sentence.split()) > _PACKED_WORDS or sentence.count(",") >= 2 or bool(_CLAUSE_JOIN.search(sentence))


@dataclass(frozen=True)
class AnchoredDecomposer:
    """Sentences first; the judge splits or completes only those that need it; every statement anchored.

    Each checkable sentence of the answer (:func:`~assay.grounding._anchor.answer_sentences`:
    questions, greetings and filler state nothing) becomes one or more statements:

    - a sentence that stands alone and states one fact is the statement, word for word;
    - a sentence that leans on something else (a pronoun, "Yes", a fragment, an elliptical
      answer) or packs several facts (:func:`packs_facts`) is rewritten by the judge, one
      call a sentence, given the question and the sentence before only to resolve what it
      refers to;
    - a sentence addressed to the judge is never rewritten: it is judged as it is (the
      verifier flags it and finds it unsupported).

    Every rewritten statement must be anchored to its sentence
    (:func:`~assay.grounding._anchor.settle`): a statement from the question, from the
    prompt's example or restating the sentence before is dropped and recorded, a fragment
    too; a sentence whose statements do not state it is judged whole, and so is one whose
    rewrite the judge answered unusably (unreadable, cut short, refused). A rewrite call
    that failed (the network, the server, a timeout after the retries) fails the
    decomposition with ``judge_error``: the sample is unscored and a resumed run asks
    again, rather than a score that depends on the glitch. Statements are
    decomposed at the judge's configured temperature (0 by default) and, under
    :func:`~assay.models.same_in_every_repeat`, identically in every repeat.
    """

    language: str = "en"
    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=512))
    name: str = field(default="anchored", init=False)

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Split ``answer`` sentence by sentence; rewrite the ones that need it; anchor every statement."""
        sentences = answer_sentences(answer, question)
        whole: dict[int, str] = {}
        calls: list[JudgeCall] = []
        kept: dict[int, list[str]] = {}  # sentence index: its statements (itself, or its rewrite's)
        rewrites: dict[int, SentenceToSplit] = {}
        previous = ""
        for index, sentence in enumerate(sentences):
            text = sentence.text
            if not sentence.checkable:
                if is_referent(sentence):  # a question may hold what "it" refers to; a preamble does not
                    previous = text
                continue
            if addresses_judge(text) is not None:
                whole[index] = "addressed to the judge: judged as it is"
            elif not question.strip() and short_reference(answer) is not None:
                whole[index] = "a short reference: judged whole"  # no question to complete it from
            elif needs_rewriting(text) or packs_facts(text) or is_fragment(text):
                rewrites[index] = SentenceToSplit(question=question, previous=previous, sentence=text)
            else:
                kept[index] = [text]
            previous = text
        # Asked together: a judge that can decodes them in one batch (the local one), an API concurrently.
        results = await asyncio.gather(
            *(
                ask(judge, SENTENCE_PROMPT, value, config=rewrite_config(self.config, value.sentence))
                for value in rewrites.values()
            )
        )
        for result in results:
            calls.extend(result.calls)
        # A rewrite the judge could not be asked for (network, server, timeout) is a failed
        # call, not an answer: the sample is unscored ``judge_error`` and a resumed run asks
        # again. Judging the sentence whole instead would make the score depend on a glitch.
        failed_call = next(
            (r.failure for r in results if r.failure is not None and r.failure.reason in ERROR_REASONS), None
        )
        if failed_call is not None:
            return Decomposition((), tuple(calls), failed_call)
        for index, result in zip(rewrites, results, strict=True):
            if result.output is None:
                assert result.failure is not None
                whole[index] = f"the rewrite failed ({result.failure.reason.value}): judged as it is"
            else:
                kept[index] = list(result.output.statements)
        proposals: list[tuple[int | None, str]] = [(i, s) for i in sorted(kept) for s in kept[i]]
        settled = settle(answer, question, proposals, whole=whole)
        return Decomposition(settled.statements, tuple(calls), None, settled.spans, settled.answer_map)


def rewrite_config(config: GenerateConfig, sentence: str) -> GenerateConfig:
    """``config`` with ``max_tokens`` held to what rewriting ``sentence`` can need.

    A sentence's statements restate it, a referent or subject repeated per fact: about
    twice its tokens (a token is about four characters) plus the JSON around them. A
    rewrite that runs past that has gone into a loop (seen on SummEdits: 512 tokens,
    a minute of the local judge, for one 360-character sentence); it is cut there and the
    sentence is judged whole, as any failed rewrite is.
    """
    need = REWRITE_OVERHEAD_TOKENS + len(sentence) // 2
    return config.model_copy(update={"max_tokens": min(config.max_tokens, need)})


REWRITE_OVERHEAD_TOKENS = 96
"""JSON and resolved referents on top of twice the sentence's tokens (:func:`rewrite_config`)."""


def anchored(split: Decomposition, question: str, answer: str) -> Decomposition:
    """Any decomposition's statements anchored to the answer (see :func:`~assay.grounding._anchor.settle`).

    A decomposition that already anchors (``answer_map`` set) or failed is returned as is.
    """
    if split.answer_map is not None or split.failure is not None:
        return split
    settled = settle(answer, question, [(None, s) for s in split.statements])
    return Decomposition(settled.statements, split.calls, None, settled.spans, settled.answer_map)
