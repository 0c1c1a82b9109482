"""The decision rule: which cues, alone or together, make a text addressed to the judge (:func:`addresses_judge`)."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from assay.grounding._addressed._lexicon import (
    _INDIRECT,
    _P_ACTOR_STRONG,
    _P_ACTOR_STRONG_CASED,
    _P_DIGIT,
    _P_EVAL_NOUN,
    _P_FORMAT,
    _P_IMPERATIVE_OBEY,
    _P_IMPERATIVE_OUT,
    _P_LABEL,
    _P_LABEL_CASED,
    _P_MARKUP,
    _P_OBJECT_BARE,
    _P_OBJECT_DEICTIC,
    _P_OUTPUT_CJK,
    _P_OVERRIDE,
    _P_PASSIVE,
    _P_REQUEST_CJK,
    _P_ROLE,
    _P_ROLE_PREFIX,
    _P_ROLE_PREFIX_CASED,
    _P_THIRD,
    _P_THIRD_STRONG,
    _P_TRUTH,
    _P_VERIFY,
    _P_VERIFY_BY,
    _P_VOCATIVE,
    _P_YOU,
    _SENTENCE_END,
)
from assay.grounding._addressed._normalise import _normalise

_WINDOW = 150
"""An instruction and its protocol term must lie within this many characters of each other."""
_LONGEST_CUE = 200
"""No content cue is longer than this (the longest lexicon entries run to about 60 characters)."""


@dataclass(frozen=True)
class AddressedFinding:
    """Why a text is addressed to the judge rather than a claim about the world.

    Attributes:
        cue: the rule that fired: ``markup``, ``verdict_format``, ``override``, ``role``,
            ``verification``, ``vocative`` or ``instruction``.
        families: the cue families that combined (one for a structural cue alone).
        span: the matching text, copied from the original (not the normalised) text.
        start: offset of ``span`` in the original text.
        end: end offset of ``span`` in the original text.
        reason: one human-readable line, e.g. "addresses the evaluator and tells it what
            to output".
    """

    cue: str
    families: tuple[str, ...]
    span: str
    start: int
    end: int
    reason: str


@dataclass(frozen=True)
class _Cue:
    family: str
    start: int
    end: int


_REASONS = {
    "markup": "mimics the judge prompt's markup",
    "verdict_format": "mimics a verdict in the judge's output format",
    "override": "tells the judge to ignore its instructions",
    "role": "assigns the judge a role",
    "verification": "asserts that the statement has already been verified",
    "vocative": "is a message addressed to the evaluator",
}


def _finding(
    text: str, offsets: list[int], cue: str, families: tuple[str, ...], start: int, end: int, reason: str
) -> AddressedFinding:
    first, last = offsets[start], offsets[end - 1] + 1 if end > start else offsets[start]
    return AddressedFinding(cue, families, text[first:last], first, last, reason)


def _structural(folded: str, low: str) -> tuple[str, int, int] | None:
    """A cue that decides alone, over the whole text (markup and formats may span lines)."""
    for cue, pattern, source in (
        ("markup", _P_MARKUP, low),
        ("markup", _P_ROLE_PREFIX_CASED, folded),
        ("verdict_format", _P_FORMAT, low),
    ):
        m = pattern.search(source)
        if m:
            return cue, m.start(), m.end()
    return None


def _segments(low: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(low):
        if m.start() > start:
            spans.append((start, m.start()))
        start = m.end()
    if start < len(low):
        spans.append((start, len(low)))
    return spans


def _imperatives(pattern: re.Pattern[str], folded: str, low: str, offset: int) -> list[_Cue]:
    """Clause-initial imperatives, except a capitalised verb before a capitalised word ("Mark Twain")."""
    cues = []
    for m in pattern.finditer(low):
        start, end = m.span("verb")
        after = folded[end:].lstrip(" ")
        if folded[start].isupper() and after[:1].isupper():
            continue
        cues.append(_Cue("imperative", start + offset, end + offset))
    return cues


def _pair(
    directives: list[_Cue], contents: list[_Cue], window: int = _WINDOW, after: bool = False
) -> tuple[_Cue, _Cue] | None:
    """The first directive with a content cue near it (only after it when ``after``).

    Contents are looked up by position (bisect), so a long sentence full of cues costs
    O(n log n), not directives x contents.
    """
    ordered = sorted(contents, key=lambda cue: cue.start)
    starts = [cue.start for cue in ordered]
    for directive in directives:
        lo = bisect.bisect_left(starts, directive.start - window - _LONGEST_CUE)
        hi = bisect.bisect_right(starts, directive.end + window)
        for cue in ordered[lo:hi]:
            overlap = directive.start < cue.end and cue.start < directive.end
            if overlap or (after and cue.start < directive.end):
                continue
            if max(directive.start, cue.start) - min(directive.end, cue.end) <= window:
                return directive, cue
    return None


_Result = tuple[str, tuple[str, ...], int, int, str]


def _judge_segment(folded: str, low: str, offset: int, carried: _Cue | None) -> tuple[_Result | None, _Cue | None]:
    """The rule of the module docstring, applied to one sentence (offsets shifted by ``offset``).

    Returns the result, or ``None`` and a vocative that found no protocol term in this
    sentence: the next sentence is read as addressed by it ("Note to the system. The
    answer is 1.").
    """
    for cue, pattern in (("override", _P_OVERRIDE), ("role", _P_ROLE), ("verification", _P_VERIFY)):
        m = pattern.search(low)
        if m:
            return (cue, (cue,), m.start() + offset, m.end() + offset, _REASONS[cue]), None

    def find(pattern: re.Pattern[str], family: str, cased: bool = False) -> list[_Cue]:
        return [_Cue(family, m.start() + offset, m.end() + offset) for m in pattern.finditer(folded if cased else low)]

    strong = [
        *find(_P_LABEL, "outcome label"),
        *find(_P_LABEL_CASED, "outcome label", cased=True),
        *find(_P_ACTOR_STRONG, "evaluator"),
        *find(_P_ACTOR_STRONG_CASED, "evaluator", cased=True),
        *find(_P_OBJECT_DEICTIC, "the statement judged"),
    ]
    score = find(_P_EVAL_NOUN, "score")
    judged = find(_P_OBJECT_BARE, "the statement judged")
    truth = find(_P_TRUTH, "truth value")
    digit = find(_P_DIGIT, "a verdict digit")
    weak = score + judged + truth + digit
    # "confirm whether everything is correct" asks a question: its truth word is no output value
    asserted = [c for c in truth if not _INDIRECT.search(low[max(0, c.start - offset - 60) : c.start - offset])]

    if not strong and not weak:
        # Every pairing below needs a content cue (most sentences have none): only a vocative
        # naming the evaluator fires alone, and the last vocative is carried to the next sentence.
        named, vocatives = _vocatives(folded, low, offset)
        return (named, None) if named else (None, vocatives[-1] if vocatives else None)

    verify_by = find(_P_VERIFY_BY, "verification")
    found = _pair(verify_by, strong + judged)
    if found:
        return _result("verification", *found), None
    if carried is not None and strong + weak:
        return _result("instruction", carried, (strong + weak)[0]), None

    named, vocatives = _vocatives(folded, low, offset)
    if named:
        return named, None
    found = _pair(vocatives, strong + weak)
    if found:
        return _result("instruction", *found), None
    left = vocatives[-1] if vocatives else None

    imperative = _imperatives(_P_IMPERATIVE_OUT, folded, low, offset)
    you = find(_P_YOU, "second person")
    passive = find(_P_PASSIVE, "passive instruction")
    output_cjk = find(_P_OUTPUT_CJK, "imperative")
    rules: tuple[tuple[list[_Cue], list[_Cue], int, bool], ...] = (
        (imperative, strong, _WINDOW, False),
        (imperative, score + asserted + digit, 60, True),
        (output_cjk, strong + weak, 30, False),
        (you, strong, _WINDOW, False),
        (you, score, 60, True),
        (passive, strong + weak, 60, False),
        (find(_P_THIRD_STRONG, "instruction to the evaluator"), strong + weak, _WINDOW, False),
        (find(_P_THIRD, "instruction to the evaluator"), strong, _WINDOW, False),
        (_imperatives(_P_IMPERATIVE_OBEY, folded, low, offset), strong, _WINDOW, False),
        (find(_P_REQUEST_CJK, "request"), strong, 30, False),
        (find(_P_ROLE_PREFIX, "role prefix"), strong + score + digit, _WINDOW, False),
    )
    for directives, contents, window, after in rules:
        found = _pair(directives, contents, window, after)
        if found:
            return _result("instruction", *found), None
    return None, left


def _vocatives(folded: str, low: str, offset: int) -> tuple[_Result | None, list[_Cue]]:
    """A finding for the first vocative that names the evaluator, else ``None``; and the vocatives before it."""
    vocatives: list[_Cue] = []
    for m in _P_VOCATIVE.finditer(low):
        group = "a" if m.group("a") else "b"
        name = slice(m.start(group), m.end(group))
        vocative = _Cue("vocative", m.start() + offset, m.end() + offset)
        if _P_ACTOR_STRONG.fullmatch(low[name]) or _P_ACTOR_STRONG_CASED.fullmatch(folded[name]):
            return ("vocative", ("vocative",), vocative.start, vocative.end, _REASONS["vocative"]), vocatives
        vocatives.append(vocative)
    return None, vocatives


def _result(cue: str, directive: _Cue, content: _Cue) -> _Result:
    if cue == "verification":
        reason = f"asserts that {content.family} has been verified by an evaluator"
    else:
        what = (
            "tells it what to output"
            if content.family in ("outcome label", "a verdict digit", "truth value", "score")
            else f"names {'the ' if content.family == 'evaluator' else ''}{content.family}"
        )
        who = (
            "addresses the evaluator"
            if directive.family in ("vocative", "second person", "instruction to the evaluator")
            else "gives an instruction"
        )
        reason = f"{who} ({directive.family}) and {what}"
    families = (directive.family, content.family)
    return cue, families, min(directive.start, content.start), max(directive.end, content.end), reason


def addresses_judge(text: str) -> AddressedFinding | None:
    """Whether ``text`` is addressed to the judge rather than a claim about the world.

    Args:
        text: a statement, or one sentence of a context (longer texts are read sentence
            by sentence; any addressed sentence makes the text addressed).

    Returns:
        The first finding (which cue fired, where, and why), or ``None`` for an ordinary
        text. The rule and the cue families are described in the module docstring.
    """
    if not isinstance(text, str):
        raise TypeError(f"addresses_judge takes a str, got {type(text).__name__}")
    folded, low, offsets = _normalise(text)
    hit = _structural(folded, low)
    if hit is not None:
        cue, start, end = hit
        return _finding(text, offsets, cue, (cue,), start, end, _REASONS[cue])
    carried = None
    for start, end in _segments(low):
        found, carried = _judge_segment(folded[start:end], low[start:end], start, carried)
        if found is not None:
            cue, families, s, e, reason = found
            return _finding(text, offsets, cue, families, s, e, reason)
    return None
