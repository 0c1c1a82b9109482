"""Sentences: the project's segmenter (pysbd), linear on long texts, with exact offsets."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = ["SEGMENT_CHARS", "located_sentences", "text_pieces"]


@lru_cache(maxsize=8)
def _segmenter(language: str) -> Any:
    import pysbd
    from pysbd.utils import TextSpan

    class Segmenter(pysbd.Segmenter):  # type: ignore[misc]  # pysbd is untyped
        r"""pysbd's segmenter, locating its sentences without compiling a pattern for each.

        pysbd finds each sentence in the text with ``re.finditer(re.escape(sentence) +
        r"\s*", text)``: a new pattern per sentence, compiled every time, which also
        evicts the segmenter's own patterns from ``re``'s cache of 512 so they are
        compiled again (0.54 ms a sentence of the throughput benchmark's answers on a
        first-generation EPYC; 0.31 ms with this). The same search
        with ``str.find`` gives the same spans (:func:`_spans`).
        """

        def sentences_with_char_spans(self, sentences: list[str]) -> list[Any]:
            return [TextSpan(text, start, end) for text, start, end in _spans(sentences, self.original_text)]

    return Segmenter(language=language, clean=False)


def _spans(sentences: list[str], text: str) -> list[tuple[str, int, int]]:
    r"""Where pysbd's ``sentences_with_char_spans`` places each sentence, without a regular expression.

    For each sentence in order: the first non-overlapping occurrence of the sentence
    followed by any whitespace (what ``re.finditer(re.escape(sentence) + r"\s*", text)``
    yields, scanning from the start of the text) that ends after the previous sentence's
    span; a sentence with no such occurrence is left out. ``str.isspace`` and ``\s`` are
    the same set of characters. An empty sentence (whose pattern matches the empty string,
    with ``re``'s own rules for empty matches) takes the regular expression.
    """
    spans: list[tuple[str, int, int]] = []
    prior_end = 0
    for sentence in sentences:
        if not sentence:
            for match in re.finditer(r"\s*", text):
                if match.end() > prior_end:
                    spans.append((match.group(), match.start(), match.end()))
                    prior_end = match.end()
                    break
            continue
        position = 0
        while (start := text.find(sentence, position)) >= 0:
            end = start + len(sentence)
            while end < len(text) and text[end].isspace():
                end += 1
            if end > prior_end:
                spans.append((text[start:end], start, end))
                prior_end = end
                break
            position = end
    return spans


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
