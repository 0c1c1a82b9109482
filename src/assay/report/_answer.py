"""Where a score's statements are in the answer: their spans, pieces covered by several verdicts, UTF-16 offsets.

The page colours an answer piece by piece; JavaScript strings count UTF-16 code units, so
every offset leaves Python converted.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["answer_segments", "locate_statements", "sentence_marks", "to_utf16_offsets", "to_utf16_segments"]


_TRAILING = ".!?;:,"


def _pattern(text: str) -> re.Pattern[str] | None:
    words = text.split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def _free(a: int, b: int, taken: list[tuple[int, int, int]]) -> bool:
    return b > a and all(b <= s or a >= e for s, e, _ in taken)


def _find(
    candidate: str, answer: str, lowered: str | None, start: int, taken: list[tuple[int, int, int]]
) -> tuple[int, int] | None:
    """The first match of ``candidate`` at or after ``start`` that overlaps nothing taken.

    The exact (lower-cased) text first, with ``str.find``; then a regular expression in
    which any run of whitespace matches any other.
    """
    needle = candidate.lower()
    if lowered is not None and needle and len(needle) == len(candidate):
        at = lowered.find(needle, start)
        while at >= 0:
            if _free(at, at + len(needle), taken):
                return at, at + len(needle)
            at = lowered.find(needle, at + 1)
    pattern = _pattern(candidate)
    if pattern is None:
        return None
    for match in pattern.finditer(answer, start):
        if _free(*match.span(), taken):
            return match.span()
    return None


def locate_statements(answer: str, subjects: Sequence[str]) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Where each statement occurs in ``answer``: ``(marks, unplaced)``.

    A statement is found by its text, case-insensitively, with any run of whitespace
    matching any other (and, failing that, without its trailing punctuation). Statements
    are searched from the end of the previous match first (they usually come in order),
    then from the start; a match never overlaps an earlier one.

    Returns:
        ``marks``: ``(start, end, index)`` in Python string offsets, sorted by start, where
        ``index`` is the statement's position in ``subjects``; ``unplaced``: the indexes of
        statements not found verbatim (e.g. rewritten by the judge), in order.
    """
    marks: list[tuple[int, int, int]] = []
    unplaced: list[int] = []
    cursor = 0
    lowered: str | None = answer.lower()
    if lowered is not None and len(lowered) != len(answer):
        lowered = None  # lower-casing changed offsets (e.g. "İ"): use the regular expression only
    for index, subject in enumerate(subjects):
        found: tuple[int, int] | None = None
        stripped = subject.strip()
        candidates = [stripped]
        if stripped.rstrip(_TRAILING) != stripped:
            candidates.append(stripped.rstrip(_TRAILING))
        for candidate in candidates:
            found = _find(candidate, answer, lowered, cursor, marks) or _find(candidate, answer, lowered, 0, marks)
            if found is not None:
                break
        if found is None:
            unplaced.append(index)
        else:
            marks.append((found[0], found[1], index))
            cursor = found[1]
    marks.sort()
    return marks, unplaced


def answer_segments(answer: str, spans: Sequence[Sequence[tuple[int, int]]]) -> list[tuple[int, int, list[int]]]:
    """The answer cut where any verdict's span starts or ends: ``(start, end, verdict indexes)`` per covered piece.

    Statements split from one sentence share words ("Her films include Luna, Mar"): a
    piece covered by several verdicts lists them all, so the page can colour it by the
    worst and show each on hover. Spans outside the answer are ignored.
    """
    cuts = {0, len(answer)}
    for found in spans:
        for start, end in found:
            if 0 <= start < end <= len(answer):
                cuts.update((start, end))
    points = sorted(cuts)
    segments: list[tuple[int, int, list[int]]] = []
    for start, end in itertools.pairwise(points):
        covering = [
            i for i, found in enumerate(spans) if any(a <= start and end <= b and b <= len(answer) for a, b in found)
        ]
        if covering:
            segments.append((start, end, covering))
    return segments


def sentence_marks(answer: str, decomposition: Mapping[str, Any] | None) -> list[list[Any]]:
    """``[start, end, status, note]`` (UTF-16 offsets) of the answer's sentences, from the score's decomposition."""
    if not answer or not decomposition:
        return []
    found = []
    for sentence in decomposition.get("sentences") or ():
        start, end = int(sentence.get("start", 0)), int(sentence.get("end", 0))
        if 0 <= start < end <= len(answer):
            found.append((start, end, str(sentence.get("status") or ""), str(sentence.get("note") or "")))
    offsets = to_utf16_offsets(answer, [(a, b, 0) for a, b, _, _ in found])
    return [[a, b, status, note] for (a, b, _), (_, _, status, note) in zip(offsets, found, strict=True)]


def to_utf16_segments(text: str, marks: Iterable[tuple[int, int, list[int]]]) -> list[list[Any]]:
    """:func:`to_utf16_offsets` for pieces covered by several verdicts."""
    marks = list(marks)
    offsets = to_utf16_offsets(text, [(a, b, 0) for a, b, _ in marks])
    return [[a, b, covering] for (a, b, _), (_, _, covering) in zip(offsets, marks, strict=True)]


def to_utf16_offsets(text: str, marks: Iterable[tuple[int, int, int]]) -> list[list[int]]:
    """Convert code-point offsets to UTF-16 code units (JavaScript string offsets)."""
    astral = [i for i, ch in enumerate(text) if ord(ch) > 0xFFFF]
    if not astral:
        return [[a, b, i] for a, b, i in marks]
    return [[a + bisect_left(astral, a), b + bisect_left(astral, b), i] for a, b, i in marks]
