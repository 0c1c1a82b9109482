r"""Evidence selection: the few context sentences that bear on one statement.

The verifier asks a small local judge whether a statement is supported. Showing it every
context costs prompt tokens on every call; showing it only the sentences that bear on the
statement costs a fraction. :class:`ContextIndex` splits a sample's contexts into
sentences once, indexes them, and for each statement returns an :class:`Evidence`: the
best-scoring sentences, each widened by its neighbours, merged, in document order and
within a character budget, with exact character offsets into the contexts.

Scoring (the figures behind each default are in ``docs/design/grounding/evidence.md``, section
"Evidence selection", measured with ``benchmarks/evidence_recall.py`` on WiCE dev):

- **BM25**: Okapi BM25 with ``k1 = 1.2``, ``b = 0.75`` over lower-cased ``\w+`` tokens
  minus a small stopword list; every sentence is a document. The IDF is Lucene's
  ``log(1 + (N - n + 0.5) / (n + 0.5))`` (never negative, unlike the original
  ``log((N - n + 0.5) / (n + 0.5))``); each distinct query term counts once.
- **Embeddings** (extra ``embeddings``): cosine similarity of all-MiniLM-L6-v2 vectors
  (:class:`assay.retrieval.MiniLMEncoder`, offline); sentences are embedded once per index.
- **Fusion**: a weighted sum of the two scores, each min-max normalised over the sample's
  sentences: ``0.7 * bm25' + 0.3 * cosine'`` (:func:`fuse`). On WiCE it recovered more of
  the annotated evidence than BM25 alone, cosine alone and reciprocal-rank fusion.
  Without embeddings the score is the raw BM25 score.

A sentence that shares no term with the statement has BM25 score 0 and is never chosen
by BM25 alone: without embeddings, a statement with no word in common with any context
gets an empty :class:`Evidence` (``best is None``), and the caller decides what that means.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from assay.errors import ConfigError, MissingExtraError
from assay.grounding._sentences import located_sentences

if TYPE_CHECKING:
    from assay.models._encoders import Encoder

__all__ = ["ContextIndex", "Evidence", "EvidenceSpan"]

BM25_K1 = 1.2
BM25_B = 0.75
BM25_WEIGHT = 0.7
"""Weight of the normalised BM25 score in :func:`fuse` (the cosine gets the rest)."""

MAX_SENTENCE_CHARS = 600
"""A "sentence" longer than this (a table row, a list without full stops) is indexed in
pieces of at most this many characters, cut at whitespace, so that the part that bears on
a statement can be chosen without the rest. MiniLM reads 256 tokens, about 1,000 characters:
a piece is always embedded whole."""

# fmt: off
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "his", "i", "if", "in", "into", "is",
    "it", "its", "may", "might", "of", "on", "or", "our", "she", "should", "so", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "will", "with", "would", "you",
    "your",
})
# fmt: on

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s")


def _flat(text: str) -> str:
    """``text`` lower-cased, whitespace collapsed, end punctuation and quotes stripped."""
    return " ".join(text.lower().split()).strip(" .!?;:,\"'\u201c\u201d\u2018\u2019")


def _tokens(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]


@dataclass(frozen=True)
class EvidenceSpan:
    """One selected sentence: ``contexts[context][start:end] == text``.

    ``score`` is the sentence's own relevance to the statement (the fused score, or BM25
    without embeddings); a neighbour added for context may score 0.
    """

    context: int
    start: int
    end: int
    text: str
    score: float


@dataclass(frozen=True)
class Evidence:
    """The sentences chosen for one statement, in document order.

    ``best`` is the top-scoring sentence (the one to show as "the supporting sentence"),
    ``None`` when nothing was chosen. Built by :meth:`ContextIndex.select`.
    """

    spans: tuple[EvidenceSpan, ...] = ()
    best: EvidenceSpan | None = None
    _blocks: tuple[str, ...] = field(default=(), repr=False)

    def blocks(self) -> list[str]:
        """One string per contiguous run of chosen sentences, in document order (for the prompt).

        A run is the context's own text from its first sentence's start to its last
        sentence's end, whitespace and line breaks included.
        """
        return list(self._blocks)

    @property
    def chars(self) -> int:
        """Total characters of :meth:`blocks` (what the budget limits)."""
        return sum(len(b) for b in self._blocks)


def _cut_end(text: str, start: int, end: int, limit: int) -> int:
    """Where to end ``text[start:end]`` to keep at most ``limit`` characters, at whitespace if possible."""
    if end - start <= limit:
        return end
    hard = start + limit
    spaces = [m.start() for m in _SPACE.finditer(text, start + limit // 2, hard + 1)]
    cut = spaces[-1] if spaces else hard
    while cut > start and text[cut - 1].isspace():
        cut -= 1
    return cut if cut > start else hard


def _pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` as pieces of at most :data:`MAX_SENTENCE_CHARS` characters."""
    out: list[tuple[int, int]] = []
    while end - start > MAX_SENTENCE_CHARS:
        cut = _cut_end(text, start, end, MAX_SENTENCE_CHARS)
        out.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        out.append((start, end))
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every sentence of ``text``, in order, covering all its non-space text.

    The sentences of :func:`located_sentences`; spans longer than
    :data:`MAX_SENTENCE_CHARS` are cut into pieces at whitespace.
    """
    return [p for start, end in located_sentences(text) for p in _pieces(text, start, end)]


KEPT_CONTEXT_CHARS = 20_000
"""Contexts up to this long keep their sentence split for later samples (1,024 of them, at
most 20 MB of text held); a longer one (a whole book) is split again each time."""


@lru_cache(maxsize=1024)
def _kept_spans(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(sentence_spans(text))


def _context_spans(text: str) -> Sequence[tuple[int, int]]:
    """:func:`sentence_spans` of one context, split once per process where it is not too long to keep."""
    return _kept_spans(text) if len(text) <= KEPT_CONTEXT_CHARS else sentence_spans(text)


VECTORS_KEPT = 16384
"""Sentence vectors of the shared MiniLM kept for later samples (about 25 MB at 384 floats)."""
_VECTORS: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
_VECTORS_LOCK = threading.Lock()


_SHARED: Encoder | None = None
"""The shared MiniLM once :func:`_shared_minilm` has loaded it: the one encoder whose vectors are kept."""


def _is_shared(encoder: Encoder | None) -> bool:
    """Whether ``encoder`` is the shared MiniLM (not a caller's encoder, nor a stand-in put in its place)."""
    return encoder is not None and encoder is _SHARED


def _shared_vectors(encoder: Encoder, texts: Sequence[str]) -> NDArray[np.float32]:
    """The shared MiniLM's vectors of ``texts``, each text embedded once per process.

    Samples often share passages (one corpus, many questions; many summaries of one
    document). A text's vector is the same, bit for bit, in any batch
    (:class:`~assay.models._encoders.MiniLMEncoder`), so a vector kept from an earlier
    sample is the one this sample would compute. The newest :data:`VECTORS_KEPT` are kept.
    """
    with _VECTORS_LOCK:
        known = {text: _VECTORS[text] for text in texts if text in _VECTORS}
    missing = [text for text in dict.fromkeys(texts) if text not in known]
    fresh = encoder.encode(missing) if missing else None
    found = dict(known)
    if fresh is not None:
        found.update(zip(missing, fresh, strict=True))
    with _VECTORS_LOCK:
        for text in dict.fromkeys(texts):
            _VECTORS[text] = found[text]
            _VECTORS.move_to_end(text)
        while len(_VECTORS) > VECTORS_KEPT:
            _VECTORS.popitem(last=False)
    return np.stack([found[text] for text in texts])


@lru_cache(maxsize=1)
def _shared_minilm() -> Encoder:
    from assay.models._encoders import MiniLMEncoder

    global _SHARED
    encoder = MiniLMEncoder()
    encoder.encode([])  # loads the model now: a missing extra raises here, once
    _SHARED = encoder
    return encoder


_MINILM_LOCK = threading.Lock()


def _default_encoder(required: bool) -> Encoder | None:
    with _MINILM_LOCK:
        try:
            return _shared_minilm()
        except MissingExtraError:
            if required:
                raise
            return None


def _check_count(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"ContextIndex.select: {name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True, eq=False)
class ContextIndex:
    """A sample's contexts split into sentences once and indexed for :meth:`select`.

    Build it with :meth:`build`; call :meth:`select` once per statement.
    """

    contexts: tuple[str, ...] = field(repr=False)
    where: NDArray[np.int64] = field(repr=False)
    """``(n, 3)``: each sentence's context index, start and end offsets."""
    texts: tuple[str, ...] = field(repr=False)
    _postings: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] = field(repr=False)
    _vectors: NDArray[np.float32] | None = field(repr=False)
    _encoder: Encoder | None = field(repr=False)
    _queries: dict[str, NDArray[np.float32]] = field(default_factory=dict, repr=False)
    """Each statement's vector, embedded once however often it is scored."""

    @classmethod
    def build(
        cls,
        contexts: Sequence[str],
        *,
        embed: bool | None = None,
        encoder: Encoder | None = None,
    ) -> ContextIndex:
        """Split ``contexts`` into sentences, index them with BM25 and, if asked, embed them.

        Args:
            contexts: the sample's retrieved contexts (any may be empty).
            embed: ``True`` embeds the sentences (raises
                :class:`~assay.errors.MissingExtraError` without the ``embeddings`` extra),
                ``False`` uses BM25 alone, ``None`` embeds when the extra is installed.
            encoder: the encoder to use instead of the shared MiniLM (implies embedding).

        Raises:
            ConfigError: ``contexts`` is not a sequence of strings, or ``encoder`` is given
                with ``embed=False``.
        """
        if isinstance(contexts, str) or not isinstance(contexts, Sequence):
            raise ConfigError(f"ContextIndex.build: contexts must be a list of strings, got {type(contexts).__name__}")
        for i, context in enumerate(contexts):
            if not isinstance(context, str):
                raise ConfigError(f"ContextIndex.build: contexts[{i}] must be a string, got {type(context).__name__}")
        if encoder is not None and embed is False:
            raise ConfigError("ContextIndex.build: an encoder was given with embed=False")
        rows = [(c, s, e) for c, text in enumerate(contexts) for s, e in _context_spans(text)]
        texts = tuple(contexts[c][s:e] for c, s, e in rows)
        where = np.asarray(rows, dtype=np.int64).reshape(len(rows), 3)
        if encoder is None and embed is not False:
            encoder = _default_encoder(required=embed is True)
        vectors = None
        if encoder is not None and texts:
            vectors = _shared_vectors(encoder, texts) if _is_shared(encoder) else encoder.encode(texts)
        return cls(tuple(contexts), where, texts, _bm25_postings(texts), vectors, encoder)

    def __len__(self) -> int:
        """Number of indexed sentences."""
        return len(self.texts)

    @property
    def embedded(self) -> bool:
        """Whether sentences were embedded (scores are fused) or BM25 alone is used."""
        return self._encoder is not None

    def bm25(self, statement: str) -> NDArray[np.float64]:
        """BM25 score of every sentence for ``statement`` (0 where no term is shared)."""
        scores = np.zeros(len(self.texts), dtype=np.float64)
        for term in set(_tokens(statement)):
            posting = self._postings.get(term)
            if posting is not None:
                scores[posting[0]] += posting[1]
        return scores

    def cosine(self, statement: str) -> NDArray[np.float64] | None:
        """Cosine similarity of every sentence to ``statement``; ``None`` without embeddings."""
        if self._encoder is None:
            return None
        if self._vectors is None:
            return np.zeros(0, dtype=np.float64)
        query = self._embed([statement])[0].astype(np.float64)
        return np.asarray(self._vectors.astype(np.float64) @ query, dtype=np.float64)

    def _embed(self, statements: Sequence[str]) -> NDArray[np.float32]:
        """The statements' vectors: those not embedded yet for this index, in one batch."""
        encoder = self._encoder
        assert encoder is not None
        missing = [s for s in dict.fromkeys(statements) if s not in self._queries]
        if missing:
            fresh = _shared_vectors(encoder, missing) if _is_shared(encoder) else encoder.encode(missing)
            self._queries.update(zip(missing, fresh, strict=True))
        return np.stack([self._queries[s] for s in statements])

    def scores(self, statement: str) -> NDArray[np.float64]:
        """The score :meth:`select` ranks by: fused (with embeddings) or BM25 (without).

        A statement without a single word token scores 0 everywhere.
        """
        bm25 = self.bm25(statement)
        if not _WORD.search(statement):
            return np.zeros_like(bm25)
        cosine = self.cosine(statement)
        if cosine is None:
            return bm25
        return fuse(bm25, cosine)

    def select(
        self,
        statement: str,
        *,
        budget_chars: int = 1200,
        top_k: int = 6,
        neighbours: int = 1,
        exclude: Callable[[str], bool] | None = None,
    ) -> Evidence:
        """The sentences that bear on ``statement``, widened by neighbours, within a budget.

        The ``top_k`` best-scoring sentences (score > 0) are taken first, best first, each
        only if it fits in what is left of the budget; then, for each of them in the same
        order, ``neighbours`` sentences on each side within the same context, nearest first,
        each only if it fits and keeps its window contiguous. Overlapping windows merge.
        A sentence is never cut, except the best one when it alone exceeds the budget (it
        is then cut to the budget, at whitespace where possible).

        Args:
            statement: the statement to find evidence for.
            budget_chars: the most characters :meth:`Evidence.blocks` may hold in total.
            top_k: how many best-scoring sentences to start from.
            neighbours: sentences to add on each side of each of them.
            exclude: sentences for which it returns true are never chosen, as a match or
                as a neighbour (and break a window: the run stops before them).

        Raises:
            ConfigError: a count is not an integer or is out of range.
        """
        budget = _check_count("budget_chars", budget_chars, 1)
        k = _check_count("top_k", top_k, 1)
        reach = _check_count("neighbours", neighbours, 0)
        allowed = self._allowed(exclude)
        scores = self.scores(statement)
        return self._assemble(self._seeds(scores, k, allowed), scores, budget, reach, allowed)

    def select_shared(
        self,
        statements: Sequence[str],
        *,
        budget_chars: int = 3000,
        top_k: int = 6,
        neighbours: int = 1,
        exclude: Callable[[str], bool] | None = None,
    ) -> Evidence:
        """One window of evidence for several statements at once, within one budget.

        The statements take turns: every statement's best sentence first (in the order
        given), then every statement's second best, and so on up to ``top_k`` each, each
        sentence only if it fits; then neighbours in the same order. A judge reads the
        window once and every statement is asked against it, so the window's prompt
        prefix is shared. A span's ``score`` is its best score over the statements, and
        ``best`` the highest-scoring span (ask :meth:`select` for one statement's own best
        sentence). Arguments as for :meth:`select`.
        """
        budget = _check_count("budget_chars", budget_chars, 1)
        k = _check_count("top_k", top_k, 1)
        reach = _check_count("neighbours", neighbours, 0)
        if isinstance(statements, str) or not all(isinstance(s, str) for s in statements):
            raise ConfigError("ContextIndex.select_shared: statements must be a list of strings")
        if not statements or not self.texts:
            return Evidence()
        allowed = self._allowed(exclude)
        worded = [s for s in statements if _WORD.search(s)]
        if self._encoder is not None and self._vectors is not None and worded:
            self._embed(worded)  # in one batch, not one call a statement
        every = [self.scores(statement) for statement in statements]
        ranked = [self._seeds(scores, k, allowed) for scores in every]
        seeds = list(
            dict.fromkeys(seed for turn in itertools.zip_longest(*ranked) for seed in turn if seed is not None)
        )
        return self._assemble(seeds, np.max(np.vstack(every), axis=0), budget, reach, allowed)

    def copied(self, statement: str, *, exclude: Callable[[str], bool] | None = None) -> EvidenceSpan | None:
        """The context sentence that ``statement`` repeats word for word, if one does.

        Compared after lower-casing, collapsing whitespace and stripping the end's
        punctuation and quotes; the statement must equal the whole sentence (a part of a
        sentence, such as the clause after "it is false that", is not a copy). Sentences
        ``exclude`` rejects never match. The span's ``score`` is 1.0: not a ranking score, a copy.
        """
        allowed = self._allowed(exclude)
        for i in self._flat_texts.get(_flat(statement), ()):
            if allowed(i):
                c, start, end = (int(x) for x in self.where[i])
                return EvidenceSpan(c, start, end, self.texts[i], 1.0)
        return None

    @cached_property
    def _flat_texts(self) -> dict[str, list[int]]:
        """Sentences by their :func:`_flat` form, in document order (for :meth:`copied`; built once)."""
        found: dict[str, list[int]] = {}
        for i, text in enumerate(self.texts):
            if flat := _flat(text):
                found.setdefault(flat, []).append(i)
        return found

    def _allowed(self, exclude: Callable[[str], bool] | None) -> Callable[[int], bool]:
        """Whether sentence ``i`` may be chosen (``exclude`` asked once per sentence)."""
        excluded: dict[int, bool] = {}

        def allowed(i: int) -> bool:
            if exclude is None:
                return True
            if i not in excluded:
                excluded[i] = bool(exclude(self.texts[i]))
            return not excluded[i]

        return allowed

    @staticmethod
    def _seeds(scores: NDArray[np.float64], top_k: int, allowed: Callable[[int], bool]) -> list[int]:
        """The ``top_k`` best-scoring allowed sentences with a score above 0, best first."""
        seeds: list[int] = []
        for i in np.argsort(-scores, kind="stable").tolist():
            if scores[i] <= 0 or len(seeds) == top_k:
                break
            if allowed(i):
                seeds.append(i)
        return seeds

    def _assemble(
        self,
        seeds: list[int],
        scores: NDArray[np.float64],
        budget: int,
        neighbours: int,
        allowed: Callable[[int], bool],
    ) -> Evidence:
        n = len(self.texts)
        if n == 0 or not seeds:
            return Evidence()

        chosen: set[int] = set()
        ends: dict[int, int] = {}

        def fits(extra: int) -> bool:
            return self._runs_chars(sorted(chosen | {extra}), ends) <= budget

        c, start, end = (int(x) for x in self.where[seeds[0]])
        if end - start > budget:  # the best sentence alone exceeds the budget: cut it, take nothing else
            ends[seeds[0]] = _cut_end(self.contexts[c], start, end, budget)
            chosen.add(seeds[0])
        for seed in seeds:
            if seed not in chosen and fits(seed):
                chosen.add(seed)
        ctx = self.where[:, 0]
        for seed in [s for s in seeds if s in chosen]:
            for distance in range(1, neighbours + 1):
                for j, toward in ((seed - distance, 1), (seed + distance, -1)):
                    if (
                        0 <= j < n
                        and j not in chosen
                        and ctx[j] == ctx[seed]
                        and j + toward in chosen
                        and allowed(j)
                        and fits(j)
                    ):
                        chosen.add(j)
        return self._evidence(sorted(chosen), seeds, ends, scores)

    def _runs(self, picked: list[int], ends: dict[int, int]) -> list[tuple[int, int, int]]:
        """``(context, start, end)`` of each run of consecutive chosen sentences."""
        runs: list[tuple[int, int, int]] = []
        previous = -2
        for i in picked:
            c, start, end = (int(x) for x in self.where[i])
            end = ends.get(i, end)
            if i == previous + 1 and runs and runs[-1][0] == c:
                runs[-1] = (c, runs[-1][1], end)
            else:
                runs.append((c, start, end))
            previous = i
        return runs

    def _runs_chars(self, picked: list[int], ends: dict[int, int]) -> int:
        return sum(end - start for _, start, end in self._runs(picked, ends))

    def _evidence(
        self, picked: list[int], seeds: list[int], ends: dict[int, int], scores: NDArray[np.float64]
    ) -> Evidence:
        spans: dict[int, EvidenceSpan] = {}
        for i in picked:
            c, start, end = (int(x) for x in self.where[i])
            end = ends.get(i, end)
            spans[i] = EvidenceSpan(c, start, end, self.contexts[c][start:end], float(scores[i]))
        best = max((spans[s] for s in seeds if s in spans), key=lambda span: span.score)  # first of equals
        blocks = tuple(self.contexts[c][start:end] for c, start, end in self._runs(picked, ends))
        return Evidence(tuple(spans[i] for i in picked), best, blocks)


def _bm25_postings(texts: Sequence[str]) -> dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]:
    """Per term: the sentences holding it and its precomputed BM25 weight in each."""
    counts = [Counter(_tokens(t)) for t in texts]
    if not counts:
        return {}
    lengths = np.asarray([sum(c.values()) for c in counts], dtype=np.float64)
    mean = float(lengths.mean()) or 1.0
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / mean)
    docs: dict[str, list[int]] = {}
    freqs: dict[str, list[int]] = {}
    for i, c in enumerate(counts):
        for term, tf in c.items():
            docs.setdefault(term, []).append(i)
            freqs.setdefault(term, []).append(tf)
    n = len(texts)
    postings: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] = {}
    for term, where in docs.items():
        idx = np.asarray(where, dtype=np.int64)
        freq = np.asarray(freqs[term], dtype=np.float64)
        idf = math.log(1.0 + (n - len(where) + 0.5) / (len(where) + 0.5))
        postings[term] = (idx, idf * freq * (BM25_K1 + 1.0) / (freq + norm[idx]))
    return postings


def _normalised(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Min-max scaled to [0, 1]; all equal: 1 if positive, else 0."""
    if len(x) == 0:
        return x
    low, high = float(x.min()), float(x.max())
    if high > low:
        return (x - low) / (high - low)
    return np.full(len(x), 1.0 if high > 0 else 0.0)


def fuse(bm25: NDArray[np.float64], cosine: NDArray[np.float64]) -> NDArray[np.float64]:
    """``BM25_WEIGHT * norm(bm25) + (1 - BM25_WEIGHT) * norm(cosine)``, ``norm`` min-max over the sentences.

    Min-max scaling puts the unbounded BM25 score and the cosine on one scale per
    statement. A sentence scores 0 only when it is the lowest on both (or shares no
    term and the cosines are all equal and not positive).
    """
    return BM25_WEIGHT * _normalised(bm25) + (1.0 - BM25_WEIGHT) * _normalised(cosine)
