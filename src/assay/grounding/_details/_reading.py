"""A statement or its evidence read once for every check: sentences, tokens, numbers and names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from assay.grounding._details._lexicon import (
    _ABBREVIATIONS,
    _ANTONYM_FORMS,
    _CLAUSE_WORDS,
    _FAIL,
    _INITIALISM_CONNECTORS,
    _NEGATION_WINDOW,
    _QUANTIFIERS,
    _TOKEN_RE,
)
from assay.grounding._details._numbers import _Number, _numbers
from assay.grounding._details._tokens import _around, _capitalised_runs, _new_token, _Sentence, _Token, _word


@dataclass(frozen=True)
class _Text:
    """A text read once: sentences of word tokens, word sets, numbers, capitalised words."""

    text: str
    sentences: tuple[_Sentence, ...]
    word_set: frozenset[str]
    lemma_set: frozenset[str]
    capitalised_mid: frozenset[str]  # lower-case words written capitalised mid-sentence
    numbers: tuple[_Number, ...]
    joined: str  # " w1 w2 ... " for verbatim search
    by_lemma: Mapping[str, list[tuple[int, int]]]  # content lemma -> (sentence, token) positions
    by_low: Mapping[str, list[tuple[int, int]]]  # antonym or quantifier word -> positions
    contexts: dict[tuple[int, int], frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def quantifiers(self) -> list[tuple[int, int]]:
        """Positions of every quantifier word."""
        return sorted(p for w, ps in self.by_low.items() if w in _QUANTIFIERS for p in ps)

    @cached_property
    def lowered(self) -> str:
        """The text in lower case, runs of white space as one space."""
        return " ".join(self.text.lower().split())

    @cached_property
    def prefixes(self) -> dict[str, list[str]]:
        """First five letters -> the words of five letters or more."""
        found: dict[str, list[str]] = {}
        for w in self.word_set:
            if len(w) >= 5:
                found.setdefault(w[:5], []).append(w)
        return found

    @cached_property
    def initialisms(self) -> frozenset[str]:
        """Initials of every span of a capitalised run, with and without its connectors."""
        found: set[str] = set()
        for sentence in self.sentences:
            for run in _capitalised_runs(sentence.tokens, _INITIALISM_CONNECTORS):
                run = run[:12]
                for i, first in enumerate(run):
                    for j in range(i + 1, len(run)):
                        if not (first.capitalised and run[j].capitalised):
                            continue
                        span = run[i : j + 1]
                        found.add("".join(t.low[0] for t in span if t.low not in _INITIALISM_CONNECTORS))
                        found.add("".join(t.low[0] for t in span))
        return frozenset(found)

    def context(self, position: tuple[int, int]) -> frozenset[str]:
        """The local context (:func:`_around`) of the token at ``(sentence, token)``, computed once."""
        found = self.contexts.get(position)
        if found is None:
            found = self.contexts[position] = _around(self.sentences[position[0]].tokens, position[1])
        return found


@lru_cache(maxsize=256)
def _read(text: str) -> _Text:
    spans: list[tuple[str, int, int]] = []  # number words, month names and "and", for _spelled_numbers
    by_lemma: dict[str, list[tuple[int, int]]] = {}
    by_low: dict[str, list[tuple[int, int]]] = {}
    sentences: list[_Sentence] = []
    current: list[_Token] = []
    words: list[str] = []
    capitalised_mid: set[str] = set()
    since_cue = _NEGATION_WINDOW
    previous_word = ""

    def close() -> None:
        nonlocal current, since_cue
        if current:
            sentences.append(_Sentence(tuple(current), frozenset(t.low for t in current)))
        current = []
        since_cue = _NEGATION_WINDOW

    after_fail = False
    for match in _TOKEN_RE.finditer(text):
        kind, piece = match.lastgroup, match.group()
        follows_fail, after_fail = after_fail, False
        if kind == "end":
            if piece == "." and previous_word in _ABBREVIATIONS:
                continue
            if piece == "." and len(previous_word) == 1 and previous_word.isalpha():
                continue  # an initial: "J. Smith"
            close()
            previous_word = ""
            continue
        if kind == "clause":
            since_cue = _NEGATION_WINDOW
            continue
        if kind == "num":
            since_cue += 1
            previous_word = ""
            continue
        low, lemma, cue, spelled = _word(piece, kind == "acr")
        if spelled:
            spans.append((low, match.start(), match.end()))
        if low in _CLAUSE_WORDS:
            since_cue = _NEGATION_WINDOW
        if follows_fail and low == "to" and current:
            cue = True  # "failed to": the cue ends at "to", and "failed" is no content word
            failed = current[-1]
            if failed.lemma:
                by_lemma[failed.lemma].pop()
            current[-1] = failed._replace(lemma="")
        after_fail = low in _FAIL
        start = not current
        capitalised = piece[0].isupper()
        negated = bool(lemma) and since_cue < _NEGATION_WINDOW
        position = (len(sentences), len(current))
        if lemma:
            by_lemma.setdefault(lemma, []).append(position)
        if low in _ANTONYM_FORMS or low in _QUANTIFIERS:
            by_low.setdefault(low, []).append(position)
        current.append(_new_token(_Token, (piece, low, lemma, negated, capitalised, start)))
        words.append(low)
        if capitalised and not start:
            capitalised_mid.add(low)
        if cue:
            since_cue = 0
        elif negated:
            since_cue = _NEGATION_WINDOW  # the cue's scope is its first content word
        else:
            since_cue += 1
        previous_word = low
    close()

    word_set = set(words)
    for w in word_set.copy():
        if "-" in w or "'" in w:
            word_set.update(part for part in re.split(r"[-']", w) if part)
    lemma_set = frozenset(_word(w, False)[1] for w in word_set) - {""}
    return _Text(
        text=text,
        sentences=tuple(sentences),
        word_set=frozenset(word_set),
        lemma_set=lemma_set,
        capitalised_mid=frozenset(capitalised_mid),
        numbers=_numbers(text, spans),
        joined=" " + " ".join(words) + " ",
        by_lemma=by_lemma,
        by_low=by_low,
    )
