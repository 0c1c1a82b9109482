"""Names: capitalised runs, acronyms and quoted titles, and whether the evidence holds each."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from assay.grounding._details._lexicon import (
    _CONNECTORS,
    _GENERIC_NAME_WORDS,
    _MONTHS,
    _QUOTE_RE,
    _UNIT_NAMES,
)
from assay.grounding._details._tokens import _capitalised_runs, _content, _is_acronym, _lemma, _low

if TYPE_CHECKING:
    from assay.grounding._details._reading import _Text


def _entities(statement: str, text: _Text, evidence: _Text) -> list[tuple[str, list[str], bool]]:
    """(shown name, distinctive lower-case words, is acronym) of each name in the statement."""
    word_tokens = [t for s in text.sentences for t in s.tokens if t.text[0].isalpha()]
    if word_tokens:
        capitalised = sum(1 for t in word_tokens if t.capitalised and len(t.text) > 1)
        if capitalised / len(word_tokens) >= 0.8 and len(word_tokens) >= 3:
            return []
    quoted = [m.group(1).strip() for m in _QUOTE_RE.finditer(statement)]
    quoted_words = {_low(w) for q in quoted for w in re.findall(r"[^\W\d_][\w'’-]*", q)}
    names: list[tuple[str, list[str], bool]] = [(f'"{q}"', [], False) for q in quoted if q]
    known_mid = text.capitalised_mid | evidence.capitalised_mid
    for sentence in text.sentences:
        for run in _capitalised_runs(sentence.tokens):
            if all(t.low in quoted_words for t in run):
                continue
            if len(run) > 1 and run[0].sentence_start and run[0].low not in known_mid:
                run = run[1:]  # "Yesterday Johnson won": the first word is capitalised for the sentence
                while run and run[0].low in _CONNECTORS:
                    run = run[1:]
                if not run:
                    continue
            if len(run) == 1:
                token = run[0]
                if token.low in _MONTHS or len(token.low) < 2:
                    continue
                acronym = _is_acronym(token)
                if token.sentence_start and not acronym and token.low not in known_mid:
                    continue
                if acronym:
                    names.append((token.text, [token.low.replace(".", "")], True))
                    continue
            content = [t for t in run if t.low not in _CONNECTORS and t.low not in _MONTHS and t.low not in _UNIT_NAMES]
            if not content:
                continue
            distinctive = [t.low for t in content if t.low not in _GENERIC_NAME_WORDS] or [t.low for t in content]
            names.append((" ".join(t.text for t in run), distinctive, False))
    return names


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _name_present(name: str, distinctive: list[str], acronym: bool, evidence: _Text) -> bool:
    if name.startswith('"'):
        title = name.strip('"')
        if " ".join(title.lower().split()) in evidence.lowered:
            return True
        title_words = [_low(w) for w in re.findall(r"[^\W\d_][\w'’-]*", title)]
        lemmas = {_lemma(w) for w in title_words if _content(w)}
        return bool(lemmas) and lemmas <= evidence.lemma_set
    if acronym:
        letters = distinctive[0]
        return letters in evidence.word_set or letters in evidence.initialisms
    for word in distinctive:
        if word in evidence.word_set:
            return True
        parts = [p for p in re.split(r"[-']", word) if len(p) >= 3 and p not in _GENERIC_NAME_WORDS]
        if len(parts) > 1 and any(p in evidence.word_set for p in parts):
            return True  # "Sims-based" and "Sims"
        if _lemma(word) in evidence.lemma_set:
            return True
        if len(word) >= 5:  # "Libyan" and "Libya", "Canadian" and "Canada"
            for other in evidence.prefixes.get(word[:5], ()):
                if abs(len(other) - len(word)) <= 3 and _common_prefix(word, other) >= min(len(word), len(other)) - 1:
                    return True
    return False
