"""Breaking an answer into atomic statements."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from pydantic import BaseModel, Field

from assay._scores import JudgeCall
from assay.models._protocol import GenerateConfig, JudgeModel
from assay.parsing import Unparsed
from assay.prompts import Example, JudgePrompt, ask

__all__ = [
    "STATEMENTS_PROMPT",
    "AnswerToSplit",
    "Decomposer",
    "Decomposition",
    "HybridDecomposer",
    "LLMDecomposer",
    "SentenceDecomposer",
    "Statements",
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
    """Statements, the calls that produced them, or why there are none."""

    statements: tuple[str, ...]
    calls: tuple[JudgeCall, ...] = ()
    failure: Unparsed | None = None


class Decomposer(Protocol):
    """Turns an answer into statements."""

    @property
    def name(self) -> str:
        """``llm`` or ``sentences`` (part of the metric's spec)."""
        ...

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Split ``answer``; never raises for judge failures."""
        ...


@lru_cache(maxsize=8)
def _segmenter(language: str) -> Any:
    import pysbd

    return pysbd.Segmenter(language=language, clean=False)


SEGMENT_CHARS = 2000
"""pysbd reads a text in pieces of about this many characters (see :func:`text_pieces`)."""

_PIECE_END = re.compile(r"(?:(?<=[a-z]{4}[.!?])|(?<=[0-9]{2}[.!?]))\s+(?=[A-Z])")


def text_pieces(text: str, size: int = SEGMENT_CHARS) -> list[str]:
    """``text`` cut into pieces of at least ``size`` characters at clear sentence ends.

    pysbd's time grows faster than the text (a 5,000-sentence answer took 80 s, the
    event loop blocked all along); pieces keep it linear. A text up to ``size`` characters
    is one piece, so ordinary answers split exactly as before. A cut falls only where a
    word of four or more lowercase letters (or a number of two or more digits) ends in
    ``.``, ``!`` or ``?`` and whitespace and an uppercase letter follow: never inside
    "Dr. Smith", "U.S. Army", "No. 5" or "e.g. The".
    """
    if len(text) <= size:
        return [text]
    pieces: list[str] = []
    start = 0
    for end in _PIECE_END.finditer(text):
        if end.start() - start >= size:
            pieces.append(text[start : end.start()])
            start = end.end()
    pieces.append(text[start:])
    return pieces


@dataclass(frozen=True)
class SentenceDecomposer:
    """One statement per sentence (pysbd). Cheap, no judge call; pronouns stay unresolved."""

    language: str = "en"
    name: str = field(default="sentences", init=False)

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Split ``answer`` into sentences (a long answer piece by piece, see :func:`text_pieces`)."""
        segmenter = _segmenter(self.language)
        sentences = (s.strip() for piece in text_pieces(answer) for s in segmenter.segment(piece))
        return Decomposition(tuple(s for s in sentences if is_checkable(s)))


@dataclass(frozen=True)
class LLMDecomposer:
    """Atomic, standalone statements with pronouns resolved, written by the judge."""

    config: GenerateConfig = field(default_factory=lambda: GenerateConfig(max_tokens=1024))
    name: str = field(default="llm", init=False)

    async def decompose(self, question: str, answer: str, judge: JudgeModel) -> Decomposition:
        """Ask the judge for the answer's statements."""
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
        segmenter = _segmenter(self.language)
        sentences = [s.strip() for piece in text_pieces(answer) for s in segmenter.segment(piece) if s.strip()]
        statements: list[str] = []
        calls: list[JudgeCall] = []
        previous = ""
        for sentence in sentences:
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


def _key(statement: str) -> str:
    """A statement compared without case, spacing or final punctuation."""
    return " ".join(statement.lower().split()).rstrip(".!?")


def is_checkable(statement: str) -> bool:
    """Whether an extracted statement can be checked at all: at least two words.

    Small judges sometimes return a bare "No." or "Sure." as a statement. It states no
    fact, so judging it against a context only adds noise (a faithful "No, refunds are
    not possible" answer lost a point for its "No."). Applied by every decomposer; what
    the LLM decomposer dropped stays visible in its extraction call's raw output.
    """
    return sum(1 for word in statement.split() if any(c.isalnum() for c in word)) >= 2
