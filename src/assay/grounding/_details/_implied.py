"""Numbers the evidence implies without writing them: counts, running scores, sums and differences.

A statement's number that the evidence never writes is not always missing (issue 34):

- **a count** of things the evidence names one by one: "two Indian films named Veeram"
  against a passage on "a 2014 Indian Tamil-language action film" and "a 2016 Indian
  Kannada film"; "two bridges" against "the North Bridge and the South Bridge". The
  counted noun is the first plural noun after the number (adjectives may stand between:
  "two Indian films"); the evidence's things of that kind are its mentions of the noun
  with the words that describe them, a name among them ("North", "Indian Kannada"). A description contained
  in another is the same thing said again ("the action film" after "a Tamil action
  film"); "other", "both" and a bare "the film" describe nothing. The count is implied
  only when the evidence describes **exactly** that many, never "at least".
- **a running score** one goal on from a score the evidence gives, when the statement
  says a goal moved it: "scored to make it 4-3" where the evidence has 3-3 or 4-2 (either
  order); "The score was 2-1 at half time" against 1-1 is a contradiction, not implied;
- **a total or a margin** the statement says it is: "5 goals in all" (a total word:
  in all, in total, combined, altogether) against "2 goals in the first half and 3 goals
  in the second" (two numbers of one evidence sentence, with the statement's unit);
  "won by 3 points" (by, margin of, difference of) against "beat them 10-7". Years and
  scaled values never take part; without such a word no sum is implied ("The score was
  2-1" against "1-1" is a contradiction).

Each rule returns the sentence a reason shows ("the evidence names 2 films: ..."), or
``None``. Deterministic, no model: the small judge cannot count ("Two bridges cross the
river" got P 0.27 against a passage naming both), so the rule decides, not the judge.
"""

from __future__ import annotations

import re
from itertools import combinations

from assay.grounding._details._numbers import _Number, _numbers, _same
from assay.grounding._details._reading import _Text
from assay.grounding._details._tokens import _Token, _word

__all__ = ["implied"]

_PLURAL_EXCEPTIONS = frozenset(["people", "children", "men", "women", "feet", "teeth", "mice", "geese"])
_NOT_PLURAL_ENDINGS = ("ss", "us", "is", "ous")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_SCORE = re.compile(r"(?<![\d.,])(\d{1,2})\s*[-\u2013\u2014:]\s*(\d{1,2})(?!\d|[.,:]\d)")
_GOAL_MOVES = re.compile(
    r"\b(?:mak(?:e|es|ing)|made)\s+it\b|\b(?:scor|nett?|struck|strik|equali[sz]|head|fir|slot|curl)\w*\b[^.;]{0,60}\b(?:to|for)\b",
    re.IGNORECASE,
)
"""A goal that moves the score ("scored to make it 4-3", "netted for 2-1"): only then is one goal on implied."""
_MOST_COUNTED = 12
"""Counts above this are not checked by naming: a long list is rarely named one by one."""
_MAX_BETWEEN = 3
"""Words (adjectives, names) a count may have between itself and its noun: "two Indian action films"."""
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def implied(number: _Number, statement: str, given: _Text) -> str | None:
    """Why the evidence implies ``number`` of ``statement`` though it never writes it, or ``None``."""
    if number.kind != "number" or number.yearish or number.scaled or not float(number.value).is_integer():
        return None
    return (
        _count(number, statement, given) or _running_score(number, statement, given) or _sum(number, statement, given)
    )


# --- counts -----------------------------------------------------------------------------------


def _plural(low: str) -> bool:
    return low in _PLURAL_EXCEPTIONS or (low.endswith("s") and not low.endswith(_NOT_PLURAL_ENDINGS))


def counted_noun(number: _Number, statement: str) -> tuple[str, str] | None:
    """The plural noun ``number`` counts in ``statement`` and its lemma ("two Indian films": films, film)."""
    if not 2 <= number.value <= _MOST_COUNTED:
        return None
    at = statement.find(number.surface)
    while at >= 0:
        after = statement[at + len(number.surface) :]
        if not after[:1].isalnum():  # the whole number, not the start of a longer one
            for k, match in enumerate(_WORD.finditer(after[:120])):
                low, lemma, _, _ = _word(match.group(), False)
                if not lemma or k > _MAX_BETWEEN:  # a stopword ("two of the films") or too far
                    break
                if _plural(low):
                    return match.group(), lemma
        at = statement.find(number.surface, at + 1)
    return None


def _descriptions(kind: str, given: _Text) -> list[frozenset[str]]:
    """Each named mention of the noun ``kind`` in the evidence, as the set of words that describe it.

    Only a description with a name in it counts ("the North Bridge", "a 2016 Indian Kannada
    film", "the film Veeram"): "a frequent stop" and "the single stop" may be one stop
    described twice, and a wrong count let through is worse than a count left to the judge.
    """
    found: list[frozenset[str]] = []
    for sentence_index, token_index in given.by_lemma.get(kind, ()):
        tokens = given.sentences[sentence_index].tokens
        groups: list[list[_Token]] = [[]]
        i = token_index - 1
        while i >= 0:
            token = tokens[i]
            if token.lemma:
                groups[-1].append(token)
            elif token.low in ("and", "or") and groups[-1] and _plural(tokens[token_index].low):
                groups.append([])  # "the North and South bridges": two things
            else:
                break
            i -= 1
        following = tokens[token_index + 1] if token_index + 1 < len(tokens) else None
        if following is not None and following.capitalised and following.lemma:  # "the film Veeram"
            groups[0].append(following)
        for group in groups:
            if any(t.capitalised and not t.sentence_start for t in group):
                found.append(frozenset(t.low for t in group))
    return found


def _count(number: _Number, statement: str, given: _Text) -> str | None:
    counted = counted_noun(number, statement)
    if counted is None:
        return None
    noun, kind = counted
    described = set(_descriptions(kind, given))
    distinct = [d for d in described if not any(d < other for other in described)]
    if len(distinct) != int(number.value):
        return None
    named = "; ".join(" ".join(sorted(d)) for d in sorted(distinct, key=sorted))
    return f"{number.surface} {noun}: the evidence describes {len(distinct)} ({named})"


# --- running scores ---------------------------------------------------------------------------


def _scores(text: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in _SCORE.findall(text)]


def _running_score(number: _Number, statement: str, given: _Text) -> str | None:
    value = int(number.value)
    if not _GOAL_MOVES.search(statement):  # "The score was 2-1" against 1-1 is a contradiction
        return None
    listed = set(_scores(given.text))
    for a, b in _scores(statement):
        if value not in (a, b):
            continue
        before = {(a - 1, b), (a, b - 1)}
        if any(s in listed or s[::-1] in listed for s in before | {(a, b)}):
            shown = next(s for s in sorted(before | {(a, b)}) if s in listed or s[::-1] in listed)
            return f"{a}-{b}: one goal on from the evidence's {shown[0]}-{shown[1]}"
    return None


# --- sums and differences ---------------------------------------------------------------------


_TOTAL = re.compile(r"\b(?:in total|total(?:led|ed|ling|ing|s)?|in all|altogether|combined|overall|together)\b", re.I)
_MARGIN = r"\b(?:by|margin of|difference of|gap of)\s+{}(?!\d)"


def _sum(number: _Number, statement: str, given: _Text) -> str | None:
    """A total ("5 goals in all") of two same-unit numbers of one evidence sentence, or a margin ("won by 3")."""
    total = bool(_TOTAL.search(statement))
    margin = re.search(_MARGIN.format(re.escape(number.surface.split()[0])), statement, re.I) is not None
    if not (total or margin):
        return None
    if margin:
        for a, b in _scores(given.text):  # "beat them 10-7": won by 3
            if a != b and _same(abs(a - b), number.value):
                return f"{number.display()}: the margin of the evidence's {max(a, b)}-{min(a, b)}"
    for sentence in _SENTENCE_END.split(given.text):
        scored = {int(x) for pair in _scores(sentence) for x in pair}
        words = [(m.group().lower(), m.start(), m.end()) for m in _WORD.finditer(sentence)]
        whole = [
            n
            for n in _numbers(sentence, words)
            if n.kind == "number" and not n.yearish and not n.scaled and float(n.value).is_integer() and n.value >= 1
        ]
        for x, y in combinations(whole, 2):
            if x.unit != y.unit or number.unit != x.unit or {int(x.value), int(y.value)} & scored:
                continue
            if total and _same(x.value + y.value, number.value):
                return f"{number.display()} = {x.display()} + {y.display()} in the evidence"
            if margin and _same(abs(x.value - y.value), number.value) and not _same(x.value, y.value):
                big, small = (x, y) if x.value > y.value else (y, x)
                return f"{number.display()} = {big.display()} - {small.display()} in the evidence"
    return None
