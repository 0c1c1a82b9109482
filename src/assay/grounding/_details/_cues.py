"""Sentence cues compared in local contexts: negation, antonyms and quantifiers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from assay.grounding._details._lexicon import _ANTONYM_FORMS, _ANTONYM_INDEX, _QUANTIFIERS, ANTONYM_PAIRS
from assay.grounding._details._tokens import _around, _Sentence, _short, _Token

if TYPE_CHECKING:
    from assay.grounding._details._reading import _Text


def _snippet(tokens: Sequence[_Token], index: int, before: int = 3, after: int = 1) -> str:
    lo, hi = max(0, index - before), min(len(tokens), index + after + 1)
    return _short(" ".join(t.text for t in tokens[lo:hi]))


_MAX_OCCURRENCES = 64
"""Evidence occurrences of one word compared with the statement's (the first ones)."""


def _matching(
    evidence: _Text, positions: Iterable[tuple[int, int]], context: frozenset[str], need: int
) -> list[tuple[_Sentence, int]]:
    """Evidence occurrences whose local context shares at least ``need`` content words with ``context``."""
    found: list[tuple[_Sentence, int]] = []
    for n, position in enumerate(positions):
        if n >= _MAX_OCCURRENCES:
            break
        if len(context & evidence.context(position)) >= need:
            found.append((evidence.sentences[position[0]], position[1]))
    return found


def _local_negation(sentence: _Sentence, evidence: _Text) -> str | None:
    """A word negated on one side only, where its local contexts agree (see the module docstring)."""
    for i, token in enumerate(sentence.tokens):
        positions = evidence.by_lemma.get(token.lemma, ()) if token.lemma else ()
        if not positions:
            continue
        need = 1 if token.negated else 2
        matching = _matching(evidence, positions, _around(sentence.tokens, i), need)
        if not matching:
            continue
        polarities = {s.tokens[j].negated for s, j in matching}
        if token.negated in polarities:
            continue
        other, j = matching[0]
        said, what = ("negates", "does not") if token.negated else ("does not negate", "does")
        return (
            f'negation: the statement {said} "{_short(token.text, 30)}" ("{_snippet(sentence.tokens, i)}"), '
            f'the evidence {what} ("{_snippet(other.tokens, j)}")'
        )
    return None


def _local_antonyms(sentence: _Sentence, evidence: _Text) -> list[str]:
    found: list[str] = []
    for i, token in enumerate(sentence.tokens):
        if token.low not in _ANTONYM_FORMS:
            continue
        context = _around(sentence.tokens, i)
        for pair in _ANTONYM_INDEX[token.low]:
            side_a, side_b = ANTONYM_PAIRS[pair]
            mine, theirs = (side_a, side_b) if token.low in side_a else (side_b, side_a)
            if sentence.lows & theirs:
                continue
            same = _matching(evidence, (p for w in mine for p in evidence.by_low.get(w, ())), context, 1)
            if same:
                continue
            opposite = _matching(evidence, (p for w in theirs for p in evidence.by_low.get(w, ())), context, 1)
            agreeing = [(s, j) for s, j in opposite if s.tokens[j].negated == token.negated]
            if agreeing:
                other, j = agreeing[0]
                found.append(f'antonym: the statement says "{token.text}", the evidence "{other.tokens[j].text}"')
    return found


def _quantifier(tokens: Sequence[_Token], index: int) -> str | None:
    """The quantifier class of ``tokens[index]`` ("the most" and "at all" are none)."""
    low = tokens[index].low
    kind = _QUANTIFIERS.get(low)
    previous = tokens[index - 1].low if index > 0 else ""
    if (low == "most" and previous == "the") or (low == "all" and previous in ("at", "after")):
        return None
    return kind


def _local_quantifier(sentence: _Sentence, evidence: _Text) -> str | None:
    """A quantifier whose class no nearby evidence quantifier shares (see the module docstring)."""
    positions = evidence.quantifiers
    for i, token in enumerate(sentence.tokens):
        kind = _quantifier(sentence.tokens, i)
        if kind is None:
            continue
        nearby = _matching(evidence, positions, _around(sentence.tokens, i), 1)
        matching = [(s, j) for s, j in nearby if _quantifier(s.tokens, j)]
        kinds = {_quantifier(s.tokens, j) for s, j in matching}
        if not matching or kind in kinds or (kind == "partial" and "universal" in kinds):
            continue  # "some" where the evidence says "all" is no contradiction
        other, j = matching[0]
        return f'quantifier: the statement says "{token.text}", the evidence "{other.tokens[j].text}"'
    return None
