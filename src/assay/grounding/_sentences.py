"""Sentences: the project's segmenter (pysbd), linear on long texts, with exact offsets."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["SEGMENT_CHARS", "located_sentences", "text_pieces"]


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


def located_sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every sentence of ``text``, in order, covering all its non-space text.

    Sentences come from pysbd (the project's segmenter, read piece by piece for long texts,
    see :func:`assay.grounding._decompose.text_pieces`) and are located in ``text`` in order,
    so the offsets are exact. Text between located sentences (should the segmenter ever
    change a sentence so it cannot be found) becomes a span of its own, so nothing is lost.
    """
    segmenter = _segmenter("en")
    found: list[tuple[int, int]] = []
    cursor = 0

    def gap(upto: int) -> None:
        chunk = text[cursor:upto]
        if chunk.strip():
            lead = len(chunk) - len(chunk.lstrip())
            found.append((cursor + lead, cursor + len(chunk.rstrip())))

    for piece in text_pieces(text):
        for raw in segmenter.segment(piece):
            sentence = raw.strip()
            if not sentence:
                continue
            at = text.find(sentence, cursor)
            if at < 0:
                continue
            gap(at)
            found.append((at, at + len(sentence)))
            cursor = at + len(sentence)
    gap(len(text))
    return found
