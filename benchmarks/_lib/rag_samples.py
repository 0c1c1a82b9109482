"""RAG-shaped samples built from the shared dev data (WiCE articles and claims): the speed benchmarks' inputs."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from assay.grounding._sentences import _segmenter

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
WICE_DEV = DATA / "grounding" / "wice_dev.jsonl"


PASSAGE_CHARS = 3000


def _sentences(text: str) -> list[str]:
    import pysbd

    return [s.strip() for s in pysbd.Segmenter(language="en", clean=False).segment(text) if s.strip()]


def _cut(article: str, around: list[str]) -> str:
    """About PASSAGE_CHARS of ``article`` at sentence ends, centred on the first cited line found."""
    sentences = _sentences(article)
    anchor = 0
    for i, s in enumerate(sentences):
        if any(a[:60] and a[:60] in s for a in around):
            anchor = i
            break
    lo = hi = anchor
    size = len(sentences[anchor]) if sentences else 0
    while size < PASSAGE_CHARS and (lo > 0 or hi < len(sentences) - 1):
        if hi < len(sentences) - 1:
            hi += 1
            size += len(sentences[hi]) + 1
        if lo > 0 and size < PASSAGE_CHARS:
            lo -= 1
            size += len(sentences[lo]) + 1
    return " ".join(sentences[lo : hi + 1])


_PRONOUNS = {"he": "He", "she": "She", "they": "They", "it": "It"}


def _pronoun(title: str, paragraph: str) -> str:
    words = Counter(w.lower() for w in re.findall(r"[A-Za-z]+", paragraph))
    counts = {p: words[p] + words[{"he": "his", "she": "her", "they": "their", "it": "its"}[p]] for p in _PRONOUNS}
    best = max(counts, key=lambda p: counts[p])
    return _PRONOUNS[best] if counts[best] else "It"


def passage(text: str) -> str:
    """``text`` cut to about PASSAGE_CHARS at a sentence end."""
    out = ""
    for sentence in _segmenter("en").segment(text):
        if len(out) + len(sentence) > PASSAGE_CHARS:
            break
        out += sentence
    return out.strip()


def prose(sentence: str) -> bool:
    """A sentence an answer would copy: 60-220 characters of prose, not page furniture.

    The articles carry metadata lines ("(meta data) PUBLISHER: https://...") and headings
    that the first version of this benchmark sometimes picked as "statements".
    """
    furniture = ("(meta data)", "http", "#", "|", "\n")
    return (
        60 <= len(sentence) <= 220
        and sentence[0].isupper()
        and sentence.endswith(".")
        and not any(mark in sentence for mark in furniture)
    )


def build(samples: int, seed: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in WICE_DEV.open()]
    articles = [r for r in rows if len(r["context"]) > 4000]
    rng = random.Random(seed)
    built = []
    for _ in range(samples):
        picked = rng.sample(articles, 5)
        passages = [passage(r["context"]) for r in picked]
        copied = []
        for text in passages[:4]:
            sentences = [s.strip() for s in _segmenter("en").segment(text) if prose(s.strip())]
            copied.append(rng.choice(sentences))
        unsupported = [r["claim"] for r in rng.sample([r for r in rows if int(r["label"]) == 0], 2)]
        built.append({"passages": passages, "supported": copied, "unsupported": unsupported})
    return built


def samples(n: int, seed: int) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in WICE_DEV.read_text().splitlines()]
    rng = random.Random(seed)
    rng.shuffle(rows)
    out = []
    for k in range(n):
        chosen = rows[k * 8 : k * 8 + 8]
        passages = []
        for r in chosen[:5]:
            oracle = r["oracle_chunks"] if isinstance(r["oracle_chunks"], list) else json.loads(r["oracle_chunks"])
            passages.append(_cut(r["context"], oracle))
        claims = [r for r in chosen[: 6 + k % 3]]
        sentences = []
        for i, r in enumerate(claims):
            text = r["claim"].strip()
            words = text.split()
            title_words = [w for w in r["claim_title"].split() if w[:1].isupper()]
            if i % 3 == 1 and words and words[0] in title_words and len(words) > 1:
                text = f"{_pronoun(r['claim_title'], r.get('claim_context') or '')} {' '.join(words[1:])}"
            if i == 4:
                text = "Reportedly, " + text[0].lower() + text[1:]
            sentences.append(text)
        copied = sum(1 for s in sentences for p in passages if s in _sentences(p))
        out.append(
            {
                "id": f"rag-speed-{k}",
                "question": "What do the sources say?",
                "answer": " ".join(sentences),
                "contexts": passages,
                "copied": copied,
                "sentences": len(sentences),
            }
        )
    return out
