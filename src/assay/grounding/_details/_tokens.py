"""Tokens, sentences and crude lemmas: how a statement and its evidence are read once for every check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from assay.grounding._details._lexicon import (
    _CONNECTORS,
    _INTERJECTIONS,
    _MONTHS,
    _NEGATIONS,
    _NUMBER_VOCABULARY,
    _ORDINAL_WORDS,
    _QUANTIFIERS,
    _SCALES,
    _TENS_WORDS,
    _UNITS_WORDS,
    STOPWORDS,
    _split,
)


class _Token(NamedTuple):
    text: str  # as written
    low: str  # lower case, possessive removed
    lemma: str  # crude lemma ("" for stopwords and non-words)
    negated: bool
    capitalised: bool
    sentence_start: bool


_new_token = tuple.__new__  # builds a _Token without NamedTuple's Python-level __new__ (the hot loop)


class _Sentence(NamedTuple):
    tokens: tuple[_Token, ...]
    lows: frozenset[str]  # every lower-case word


_IRREGULAR: Mapping[str, str] = {
    form: base
    for entry in _split(
        """win:won lose:lost go:went,gone make:made take:took,taken give:gave,given find:found say:said
    tell:told come:came begin:began,begun know:knew,known see:saw,seen think:thought bring:brought
    buy:bought sell:sold hold:held leave:left lead:led build:built pay:paid meet:met run:ran
    write:wrote,written speak:spoke,spoken become:became get:got,gotten grow:grew,grown rise:rose,risen
    fall:fell,fallen keep:kept feel:felt send:sent spend:spent choose:chose,chosen drive:drove,driven
    eat:ate,eaten fight:fought teach:taught catch:caught stand:stood understand:understood hear:heard
    mean:meant sing:sang,sung draw:drew,drawn fly:flew,flown break:broke,broken steal:stole,stolen
    wear:wore,worn bear:bore,born shoot:shot sit:sat lay:laid lie:lain forget:forgot,forgotten
    child:children man:men woman:women person:people foot:feet tooth:teeth mouse:mice"""
    )
    for base, forms in [entry.split(":")]
    for form in forms.split(",")
}
"""Common irregular forms and their base ("won" -> "win", "people" -> "person")."""


@lru_cache(maxsize=65536)
def _lemma(word: str) -> str:
    """Crude lemma: lower case, possessive, plural -s, -ing/-ed and a final -e removed; common irregular forms."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.strip("'")
    if w in _IRREGULAR:
        w = _IRREGULAR[w]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix, shortest in (("ing", 3), ("ed", 2)):
        if len(w) - len(suffix) >= shortest and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # "stopped" -> "stop"
            break
    if len(w) > 2 and w.endswith("e"):
        w = w[:-1]  # "use" and "used" -> "us", "increase" and "increased" -> "increas"
    return w


def _low(word: str) -> str:
    w = word.lower().replace("’", "'")
    return w[:-2] if w.endswith("'s") else w


_NOT_CONTENT = (
    frozenset(
        [*STOPWORDS, *_NEGATIONS, *_QUANTIFIERS, *_UNITS_WORDS, *_TENS_WORDS, *_ORDINAL_WORDS, *_SCALES, *_MONTHS]
    )
    | {"hundred", "dozen", "percent", "cent"}
    | _INTERJECTIONS
)


def _content(low: str) -> bool:
    return len(low) > 1 and low not in _NOT_CONTENT and not any(part in _NOT_CONTENT for part in low.split("-"))


@lru_cache(maxsize=65536)
def _word(piece: str, acronym: bool) -> tuple[str, str, bool, bool]:
    """What a word token is: (lower case without possessive, content lemma or "", negation cue, may spell a number)."""
    low = piece.lower().replace(".", "") if acronym else _low(piece)
    cue = low in _NEGATIONS or low.endswith("n't")
    lemma = _lemma(low) if _content(low) and not cue else ""
    spelled = low in _MONTHS or low == "and" or low.partition("-")[0] in _NUMBER_VOCABULARY
    return low, lemma, cue, spelled


def _short(text: str, limit: int = 60) -> str:
    """Evaluated text quoted in a problem, cut to ``limit`` characters."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


_RADIUS = 6
"""Tokens each side of a word whose content words make its local context."""


def _around(tokens: Sequence[_Token], index: int) -> frozenset[str]:
    """Content lemmas within :data:`_RADIUS` tokens of ``tokens[index]`` (itself excluded)."""
    lo, hi = max(0, index - _RADIUS), min(len(tokens), index + _RADIUS + 1)
    return frozenset(t.lemma for k, t in enumerate(tokens[lo:hi], lo) if t.lemma and k != index)


def _is_acronym(token: _Token) -> bool:
    letters = [c for c in token.text if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _capitalised_runs(tokens: Sequence[_Token], connectors: frozenset[str] = _CONNECTORS) -> list[list[_Token]]:
    """Runs of capitalised tokens (connectors allowed inside), leading stopwords and connectors dropped."""
    runs: list[list[_Token]] = []
    run: list[_Token] = []
    for token in [*tokens, None]:
        if token is not None and token.capitalised and token.low != "i" and not token.low.startswith("i'"):
            run.append(token)
            continue
        if token is not None and run and token.low in connectors:
            run.append(token)
            continue
        while run and not run[-1].capitalised:
            run.pop()
        while run and (run[0].low in STOPWORDS or run[0].low in connectors or run[0].low in _NEGATIONS):
            run.pop(0)
        if run:
            runs.append(run)
        run = []
    return runs
