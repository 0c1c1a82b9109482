"""The project's segmenter: pysbd's sentences, located without a regular expression per sentence."""

from __future__ import annotations

import re
import sys
from typing import Any

import pysbd
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.grounding._sentences import _segmenter, located_sentences

PARTS = (
    "Dr. Smith met Mrs. Jones at 5 p.m. in the U.S. Army base.",
    "It was cold!",
    "Was it? Yes, e.g. The Times said so.",
    "They paid $3.50 for approx. Five items.",
    "The museum opened in 1889.",
    "The museum opened in 1889.",  # a repeated sentence: pysbd must place each copy in turn
    "Visitors came from 12 countries",
    "(See below.)",
    "“Quoted,” she said.",
)
SPACES = (" ", "  ", "\n", "\n\n", "\t", "\u00a0", "\u2003", " \u3000", "\x1c", "")


def _regex_spans(sentences: list[str], text: str) -> list[tuple[str, int, int]]:
    """pysbd 0.3's own ``sentences_with_char_spans``, written out."""
    spans: list[tuple[str, int, int]] = []
    prior_end = 0
    for sentence in sentences:
        for match in re.finditer(rf"{re.escape(sentence)}\s*", text):
            if match.end() > prior_end:
                spans.append((match.group(), match.start(), match.end()))
                prior_end = match.end()
                break
    return spans


texts = st.lists(st.tuples(st.sampled_from(PARTS), st.sampled_from(SPACES)), min_size=1, max_size=12).map(
    lambda pairs: "".join(part + space for part, space in pairs)
)


@settings(max_examples=150, deadline=None)
@given(texts)
def test_segments_as_pysbd_does(text: str) -> None:
    reference = pysbd.Segmenter(language="en", clean=False)
    assert _segmenter("en").segment(text) == reference.segment(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["", "a", "ab", "b a", "a.", " a", "a ", "x", "aa"]), max_size=6),
    st.text(alphabet="ab .x\n\u00a0", max_size=30),
)
def test_spans_are_the_regular_expressions_spans(sentences: list[str], text: str) -> None:
    # sentences absent from the text, repeated, overlapping, empty or with whitespace of their own
    from assay.grounding._sentences import _spans

    assert _spans(sentences, text) == _regex_spans(sentences, text)


def test_whitespace_after_a_sentence_is_what_backslash_s_matches() -> None:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert re.findall(r"\s", every) == [c for c in every if c.isspace()]


def test_locating_sentences_compiles_no_pattern_per_sentence(monkeypatch: Any) -> None:
    # pysbd compiled re.escape(sentence) for every sentence it returned (about 1 ms each on
    # a first-generation EPYC, and evicting its own patterns from re's cache)
    sentences = [f"The station number {i} opened in {1800 + i} beside the river." for i in range(40)]
    text = " ".join(sentences)
    compiled: list[str] = []
    original = re._compile  # type: ignore[attr-defined]

    def spy(pattern: Any, flags: Any) -> Any:
        if isinstance(pattern, str):
            compiled.append(pattern)
        return original(pattern, flags)

    monkeypatch.setattr(re, "_compile", spy)
    found = located_sentences(text)
    assert [text[a:b] for a, b in found] == sentences
    assert compiled, "the spy saw no pattern at all: it no longer watches what pysbd compiles"
    per_sentence = [p for p in compiled if any(re.escape(s) in p for s in sentences)]
    assert per_sentence == []
