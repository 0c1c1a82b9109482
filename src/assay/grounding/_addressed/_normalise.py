"""Normalisation before matching: NFKC, invisible characters, accents, lookalike letters; offsets map back."""

from __future__ import annotations

import re
import unicodedata

_INVISIBLE = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
_FOLD = {
    **dict.fromkeys("‹〈⟨〈❮˂ᐸ", "<"),
    **dict.fromkeys("›〉⟩〉❯˃ᐳ", ">"),
    **dict.fromkeys("⁄∕⧸", "/"),
    **dict.fromkeys("⧵﹨", "\\"),
    **dict.fromkeys("أإآٱ", "ا"),
    "ى": "ي",
    "ة": "ه",
    "ـ": "",
}
"""Lookalikes of markup characters that NFKC leaves alone, and Arabic letter variants."""

# Cyrillic and Greek letters that look like Latin ones (upper and lower case).
_CONFUSABLE = dict(
    zip(
        "АВСЕНІЈКМОРЅТХУаеосрхуіјѕһԁԛԝвнмткѵΑΒΕΗΙΚΜΝΟΡΤΥΧΖαοριυχνκτεϲϳ",
        "ABCEHIJKMOPSTXYaeocpxyijshdqwbhmtkvABEHIKMNOPTYXZaopiuxvktecj",
        strict=True,
    )
)
_WORD = re.compile(r"[^\W\d_]+")


def _is_latin(ch: str) -> bool:
    return ("a" <= ch.lower() <= "z") or ("\u00c0" <= ch <= "\u024f")


def _normalise(text: str) -> tuple[str, str, list[int]]:
    """``(folded, lowered, offsets)``: the text read as the detector reads it (see the module doc).

    ``folded`` keeps case (``SYSTEM:`` and ``AI`` are case-sensitive cues), ``lowered`` has
    the same length, and ``offsets[i]`` is the index in ``text`` of the character that
    produced ``folded[i]`` (with one extra entry for the end).
    """
    if text.isascii():
        return text, text.lower(), [*range(len(text) + 1)]
    chars: list[str] = []
    offsets: list[int] = []
    for i, c in enumerate(text):
        if c in _INVISIBLE:
            continue
        for ch in unicodedata.normalize("NFKC", c):
            category = unicodedata.category(ch)
            if category == "Mn" and ((chars and _is_latin(chars[-1])) or "\u064b" <= ch <= "\u065f" or ch == "\u0670"):
                continue  # an accent on a Latin letter, or Arabic harakat
            if "\u00c0" <= ch <= "\u024f":
                base = unicodedata.normalize("NFD", ch)
                if len(base) > 1 and all(unicodedata.category(m) == "Mn" for m in base[1:]):
                    ch = base[0]
            elif category == "Nd" and not ch.isascii():
                ch = str(unicodedata.digit(ch))
            ch = _FOLD.get(ch, ch)
            if ch:
                chars.append(ch)
                offsets.append(i)
    offsets.append(len(text))
    for word in _WORD.finditer("".join(chars)):
        letters = word.group()
        if any("a" <= ch.lower() <= "z" for ch in letters) and any(ch in _CONFUSABLE for ch in letters):
            for j in range(word.start(), word.end()):
                chars[j] = _CONFUSABLE.get(chars[j], chars[j])
    folded = "".join(chars)
    lowered = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in folded)
    return folded, lowered, offsets
