"""Anchoring statements to the answer: a statement is what the answer says, or it is not judged.

A decomposition may write statements the answer never made: the question restated, the
prompt's own few-shot example bent onto the answer's subject, the sentence before said
again. :func:`anchor_statement` decides, without a model, whether a statement comes from
one sentence of the answer, and where in the answer its words are.

**Terms.** A text's terms are its content lemmas (the detail checks' crude lemmas of words
that are not stopwords), its digits (``1,000`` as ``1000``) and its number words. Terms,
not words: "won" and "win" are one term, "the" is none.

**The rule.** A statement is anchored to an answer sentence when

1. every term of the statement is a term of the sentence or of its *referents* (the
   question, and the sentence before: what a pronoun or an ellipsis may point to), except
   at most one ordinary word (a paraphrase such as "recognized" for "acknowledged"); a
   number or a capitalised word the sentence and its referents lack is never excused;
2. the statement is mostly the sentence's: at least half of its terms are the
   sentence's own (a third, when the sentence has a pronoun and the statement borrows at
   most three terms: the name it stands for), or it contains every term of the sentence
   (an elliptical answer, "Arthur's Magazine.", completed from the question).

The few-shot leak ("<golfer> was best known for developing the theory of relativity")
fails (1); a restatement of the question or of the sentence before fails (2). A
statement's *spans* are the offsets of the sentence's words whose terms it states,
merged where nothing but other words of the statement, stopwords and punctuation lie
between them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from assay._scores import AnswerMap, AnswerSentence, DroppedStatement
from assay.grounding._details._lexicon import _NUMBER_VOCABULARY, _TOKEN_RE, _split
from assay.grounding._details._tokens import _IRREGULAR, _word
from assay.grounding._sentences import located_sentences

__all__ = [
    "Anchor",
    "SentenceSpan",
    "Settled",
    "about_the_answer",
    "anchor_statement",
    "answer_sentences",
    "checkable_sentences",
    "content_lemmas",
    "is_fragment",
    "preamble_end",
    "settle",
    "short_reference",
    "terms",
]

_OPENERS = frozenset(
    _split("for in on at by with without from to of as about and or but because while which who whose whom that")
)
_NOUN_BASES = frozenset(_split("child man woman person foot tooth mouse"))
_VERB_FORMS = frozenset(form for form, base in _IRREGULAR.items() if base not in _NOUN_BASES)
_REFERS = re.compile(r"\b(?:he|she|it|they|him|her|them|his|hers|its|their|this|these|those|that)\b", re.I)
_RARE = 64
"""Anchoring looks for a statement's source among the sentences holding its terms held by at most this many."""
_NAME_TERMS = 3
"""A referent that resolves a pronoun is a name: at most this many terms."""
_EXCUSED = 1
"""Ordinary words (no digit, not capitalised) a statement may have that its source lacks."""

_FILLER = re.compile(
    r"^\W*(?:i hope (?:this|that|it) helps|hope (?:this|that|it) helps|let me know|feel free|"
    r"(?:is there )?anything else|happy to help|glad to help|great question|good question|"
    r"thanks?(?: you)?(?: for| so much|[!.,]|$)|you'?re welcome|sure(?:[!,.]|$)|certainly(?:[!,.]|$)|"
    r"of course(?:[!,.]|$)|here (?:is|are) (?:a |the |some )?(?:summary|answer|overview|breakdown|details)\b)",
    re.IGNORECASE,
)
_AUXILIARIES = (
    r"am|is|are|was|were|be|been|being|has|have|had|do|does|did|can|could|will|would|shall|should|may|might|"
    r"must|won't|isn't|aren't|wasn't|weren't|hasn't|haven't|hadn't|don't|doesn't|didn't|can't|couldn't|"
    r"wouldn't|shouldn't"
)
_AUXILIARY = re.compile(rf"\b(?:{_AUXILIARIES})\b", re.IGNORECASE)
_DANGLING_END = frozenset(
    _split(
        "in of for to with by at on from as about into onto than the a an and or but nor that which who "
        "whose whom his her its their our your my this these those"
    )
)


@dataclass(frozen=True)
class Term:
    """One term of a text and where it is."""

    term: str
    start: int
    end: int
    capitalised: bool
    number: bool


@lru_cache(maxsize=4096)
def terms(text: str) -> tuple[Term, ...]:
    """The terms of ``text`` in order (see the module docstring), with their offsets.

    Cached: a sentence's terms are read when the answer is read, again when a statement
    taken word for word from it is anchored, and again when its coverage is checked.
    """
    return _terms_uncached(text)


_AMPERSAND = re.compile(r"\b[A-Za-z]{1,4}(?:&[A-Za-z]{1,4})+\b")
"""Names written with an ampersand ("R&B", "AT&T"): one term, not single letters that count for nothing."""


def _terms_uncached(text: str) -> tuple[Term, ...]:
    found: list[Term] = []
    joined = [(m.start(), m.end()) for m in _AMPERSAND.finditer(text)]
    for start, end in joined:
        found.append(Term(text[start:end].lower(), start, end, True, False))
    for match in _TOKEN_RE.finditer(text):
        if any(start <= match.start() < end for start, end in joined):
            continue
        kind, piece = match.lastgroup, match.group()
        if kind == "num":
            digits = piece.replace(",", "").rstrip(".").lower()
            found.append(Term(digits, match.start(), match.end(), False, True))
        elif kind in ("word", "acr"):
            low, lemma, _, _ = _word(piece, kind == "acr")
            if lemma:
                found.append(Term(lemma, match.start(), match.end(), piece[:1].isupper(), False))
            elif low.partition("-")[0] in _NUMBER_VOCABULARY and low != "and":
                found.append(Term(low, match.start(), match.end(), False, True))
    return tuple(sorted(found, key=lambda t: t.start))


def content_lemmas(text: str) -> list[str]:
    """The distinct terms of ``text``, in order of first use."""
    return list(dict.fromkeys(t.term for t in terms(text)))


_ABOUT_THE_ANSWER_WORDS = (
    "summary summaries summarize summarise summarized summarised summarizing concise concisely brief briefly "
    "short quick overview recap rundown breakdown outline answer answers reply response question questions "
    "passage passages article articles text texts context contexts document documents source sources excerpt "
    "excerpts information info material content story news report piece paragraph paragraphs sentence "
    "sentences word words bullet bullets point points key main highlight highlights detail details "
    "provided provide given based according following follows below above here find found look "
    "let summarizing retrieved search result results help helpful hope glad happy version "
    "sure certainly okay absolutely course alright thanks thank asking ask drawing draw reading read looking "
    "having stated mentioned described noted shown per say says said"
)
_ABOUT_UNITS = "sentence sentences word words bullet bullets point points paragraph paragraphs"
_PREAMBLE_OPENER = re.compile(
    r"^\W*(?:based on|according to|as (?:stated|mentioned|described|given|shown|noted) in|per|from|in|to|here|"
    r"overall|drawing on|looking at|after reading|having read|given|reading|sure|okay|ok|certainly|of course|"
    r"absolutely|alright|all right|thanks|thank you)\b",
    re.IGNORECASE,
)
_PREAMBLE_END = re.compile(r"[,:;\u2013\u2014]\s+|\s+-\s+")


@lru_cache(maxsize=1)
def _about_the_answer_terms() -> tuple[frozenset[str], frozenset[str]]:
    """The terms of words that speak about the answer or its sources, and of the units they count in."""
    vocabulary = frozenset(t.term for w in _split(_ABOUT_THE_ANSWER_WORDS) for t in terms(w))
    units = frozenset(t.term for w in _split(_ABOUT_UNITS) for t in terms(w))
    return vocabulary, units


def about_the_answer(text: str) -> bool:
    """Whether ``text`` speaks only about the answer or its sources, not about the world.

    "Here is a concise summary of the passage.", "Below are the key points from the
    article:", "Here's what I found:", "Based on the provided context, here is a summary:",
    "Here is a summary of the story in 3 sentences:". Every term is a word about answers,
    summaries and their sources (a number only beside a unit such as "sentences"), and at
    least one term exists: a name, any other noun or verb, or a bare number makes it a claim.
    """
    found = terms(text)
    if not found:
        return False
    vocabulary, units = _about_the_answer_terms()
    words = [t for t in found if not t.number]
    numbers_counted = len(words) == len(found) or any(t.term in units for t in words)  # "in 3 sentences"
    return bool(words) and numbers_counted and all(t.term in vocabulary for t in words)


def preamble_end(text: str) -> int:
    """Where the claim starts after a preamble about the answer ("Based on the context, ..."), else 0.

    The preamble is a leading clause every term of which is about the answer
    (:func:`about_the_answer`), ending at a colon or a dash ("Below are the key points from
    the article: ...") or, when it opens like a preamble ("based on", "according to", "in
    summary", "sure", "thanks"), at a comma or semicolon; a comma alone is not enough ("The
    context, however, shows ..." is a claim). What follows must be a claim (one word can be
    one: "Below is the answer: Canberra."), not more of the same ("Thanks, I hope this
    helps!" stays one). Preambles may be chained ("Sure, based on the passage, ...").
    """
    start = 0
    while True:
        rest = text[start:]
        cut = _PREAMBLE_END.search(rest)
        if cut is None:
            return start
        head, tail = rest[: cut.start()], rest[cut.end() :]
        opens = bool(_PREAMBLE_OPENER.match(rest)) or rest[cut.start()] in ":-\u2013\u2014"
        if (
            not opens
            or not about_the_answer(head)
            or _words(tail) < 1
            or about_the_answer(tail)
            or (_FILLER.match(tail) and not preamble_end(tail))
        ):
            return start
        start += cut.end()


def _split_preambles(answer: str, located: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each sentence that opens with a preamble about the answer, as the preamble and the claim after it."""
    out: list[tuple[int, int]] = []
    for start, end in located:
        cut = preamble_end(answer[start:end])
        if not cut:
            out.append((start, end))
            continue
        head_end = start + cut
        while head_end > start and answer[head_end - 1].isspace():
            head_end -= 1
        out.extend([(start, head_end), (start + cut, end)])
    return out


@dataclass(frozen=True)
class SentenceSpan:
    """One sentence of an answer: where it is, and whether it states anything to check.

    ``why`` says why a sentence is not checkable: ``"a question"``, ``"filler"`` (a
    greeting, thanks, "I hope this helps"), ``"about the answer"`` ("Here is a concise
    summary of the passage.", a "Based on the context," that opens a claim: the claim
    after it is its own sentence) or ``"too short"`` (fewer than two words).
    """

    start: int
    end: int
    text: str
    why: str = ""

    @property
    def checkable(self) -> bool:
        """Whether the sentence states something to check."""
        return not self.why


_QUESTION_OPENER = rf"(?:{_AUXILIARIES}|what|who|whom|whose|which|when|where|why|how|right|ok|okay)\b"
_TRAILING_QUESTION = re.compile(
    r"[,;:\u2013\u2014]\s+(?:(?:and|but|so|or)\s+)?" + _QUESTION_OPENER + r"[^,;:]*\?\W*$", re.IGNORECASE
)
_OPENS_AS_QUESTION = re.compile(r"^\W*" + _QUESTION_OPENER, re.I)
_OPENS_AS_CONDITION = re.compile(
    r"^\W*(?:if|unless|when|whenever|while|because|although|though|since|before|after|as|once|in case)\b", re.I
)


def _statement_then_question(text: str) -> int | None:
    """Where a sentence that states something and then asks ends its statement, or ``None``.

    "I think it is for the best, do you watch the NFL?" and "It is big, isn't it?" end in a
    question mark, but their opening clause is a statement; judged as one question they were
    dropped whole. A sentence that opens as a question ("Do you know, who won?") or with a
    condition of the question ("If you like, which team do you support?") stays one.
    """
    found = _TRAILING_QUESTION.search(text)
    if found is None or _OPENS_AS_QUESTION.match(text) or _OPENS_AS_CONDITION.match(text):
        return None
    return found.start() if _words(text[: found.start()]) >= 3 else None


def _words(text: str) -> int:
    return sum(1 for w in text.split() if any(c.isalnum() for c in w))


def _split_questions(answer: str, located: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in located:
        cut = _statement_then_question(answer[start:end])
        if cut is None:
            out.append((start, end))
            continue
        rest = start + cut + 1  # the question starts after the comma and its spaces
        while rest < end and answer[rest].isspace():
            rest += 1
        out.extend([(start, start + cut), (rest, end)])
    return out


SHORT_REFERENCE_WORDS = 4
"""A text of at most this many words and no verb is a short reference (:func:`short_reference`)."""


def short_reference(text: str) -> str | None:
    """The whole of ``text`` when it is a short reference, one statement to judge whole; else ``None``.

    A short reference is what QA sets are made of: one word, number, name, time, date,
    amount or measure ("Paris", "1889", "Marie Curie", "9am", "$4.50", "Dr. Who",
    "1.5 kg", "2021-03-04", "yes"), one sentence on one line, of at most
    :data:`SHORT_REFERENCE_WORDS` words and with no auxiliary verb (a short sentence,
    "It is Paris.", is split as any sentence is). It states one thing, whole: split, it
    would lose its one word (a statement needs two) and its text would be unscored
    ``no_statements``. A question, filler ("Thanks!"), an interjection ("Okay."; "Yes.
    Okay." is two sentences) or a sentence about the answer is none.
    """
    stripped = text.strip()
    if not stripped or "\n" in stripped or _words(stripped) > SHORT_REFERENCE_WORDS:
        return None
    if _AUXILIARY.search(stripped) or _states_nothing(stripped) or _INTERJECTION.match(stripped):
        return None
    if len(located_sentences(stripped)) != 1:
        return None
    return stripped


_INTERJECTION = re.compile(
    r"^\W*(?:ok|okay|alright|all right|hmm+|um+|uh+|oh|ah|well|hi|hello|hey|sorry|great|cool|nice)\W*$", re.I
)


@lru_cache(maxsize=1024)
def answer_sentences(answer: str, question: str = "") -> tuple[SentenceSpan, ...]:
    """The sentences of ``answer`` with exact offsets, each marked checkable or not (and why).

    A one-word sentence states nothing, except when it is the whole answer to a question
    ("Paris.", also after a preamble: "Here is the answer: Paris."): that is an elliptical
    answer, completed from the question. An answer that is a short reference
    (:func:`short_reference`: "Paris", "Dr. Who", "1.5 kg"), with or without a question, is
    one checkable sentence, however a segmenter would cut it. A sentence that
    states something and then asks ("It is for the best, do you watch the NFL?") is two: the
    statement, checkable, and the question, which is not.
    """
    if (short := short_reference(answer)) is not None:
        start = answer.index(short)
        return (SentenceSpan(start, start + len(short), short),)
    located = _split_questions(answer, _split_preambles(answer, located_sentences(answer)))
    marked = [(start, end, _states_nothing(answer[start:end])) for start, end in located]
    # "Here is the answer: Paris." is still an elliptical answer: only the sentences that may
    # state something count when deciding whether a one-word sentence is the whole answer
    alone = sum(1 for _, _, why in marked if not why) == 1 and bool(question.strip())
    out: list[SentenceSpan] = []
    for start, end, why in marked:
        text = answer[start:end]
        words = _words(text)
        if words < 2 and not (words == 1 and alone and not why):
            why = "too short"
        out.append(SentenceSpan(start, end, text, why))
    return tuple(out)


def _states_nothing(text: str) -> str:
    """Why ``text`` states nothing whatever its length (a question, filler, about the answer), or ``""``."""
    if _words(text) < 1:
        return "too short"
    if text.rstrip().endswith("?"):
        return "a question"
    if _FILLER.match(text) and len(terms(text)) <= 6:
        return "filler"
    if about_the_answer(text):
        return "about the answer"
    return ""


def checkable_sentences(answer: str, question: str = "") -> list[tuple[int, int]]:
    """``(start, end)`` of the answer's sentences that state something to check."""
    return [(s.start, s.end) for s in answer_sentences(answer, question) if s.checkable]


def is_fragment(statement: str) -> bool:
    """Whether a statement is not a statement: a dangling piece of a sentence, a bare title, two words.

    "Alan Smith is known for his roles in", '"The Long Goodbye"', "for playing Marlowe,"
    are fragments; "Alan Smith played Marlowe." is not. A fragment is dropped (and its
    sentence judged whole if nothing else states it), so the test only says "fragment"
    on a clear sign: a dangling last word or trailing comma, an opening preposition or
    conjunction, a bare quoted title, or a short piece with no verb-like word.
    """
    text = statement.strip()
    words = [w.strip(".,;:!?\"'()[]“”‘’").lower() for w in text.split()]
    words = [w for w in words if w]
    if len(words) < 3:
        return True
    if text.rstrip().endswith((",", ";", ":", "-", "—", "–")) or words[-1] in _DANGLING_END:
        return True
    if text[:1].islower() and words[0] in _OPENERS:
        return True
    inner = text.rstrip(" .")
    if inner[:1] in "\"“'‘" and inner[-1:] in "\"”'’" and not any(q in inner[1:-1] for q in '"“”'):
        return True  # a bare quoted title
    verb = _AUXILIARY.search(text) or any(
        w in _VERB_FORMS or (len(w) > 3 and w.endswith(("ed", "s")) and not w.endswith(("ss", "us", "is")))
        for w in words[1:]
    )
    return not verb and len(words) <= 4


@dataclass(frozen=True)
class Anchor:
    """Where a statement comes from in the answer.

    Attributes:
        sentence: Index of the source sentence in :func:`answer_sentences`.
        spans: ``(start, end)`` offsets in the answer of the words the statement states.
        own: Share of the statement's terms that are the sentence's own.
        borrowed: Terms taken from the referents (the question, the sentence before).
        excused: Ordinary words the statement has that neither the sentence nor its
            referents have (at most one).
    """

    sentence: int
    spans: tuple[tuple[int, int], ...]
    own: float
    borrowed: tuple[str, ...] = ()
    excused: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Read:
    """An answer read once: sentences, their terms, their referents' terms, which sentences hold a term."""

    sentences: tuple[SentenceSpan, ...]
    source: tuple[tuple[Term, ...], ...]
    own: tuple[frozenset[str], ...]
    referents: tuple[frozenset[str], ...]
    holding: dict[str, tuple[int, ...]]
    exact: dict[str, int]
    before: tuple[int | None, ...]  # each sentence's sentence before, preambles and filler skipped


NO_REFERENT = frozenset({"about the answer", "filler"})
"""Why-marks of sentences a later sentence never refers to."""


def is_referent(sentence: SentenceSpan) -> bool:
    """Whether a later sentence may lean on ``sentence`` ("He won 15 titles" after it): not a preamble or a "Sure!"."""
    return sentence.why not in NO_REFERENT and not about_the_answer(sentence.text)


def sentence_before(sentences: Sequence[SentenceSpan]) -> tuple[int | None, ...]:
    """For each sentence, the index of the nearest earlier one it may refer to (:func:`is_referent`), or ``None``."""
    out: list[int | None] = []
    last: int | None = None
    for i, sentence in enumerate(sentences):
        out.append(last)
        if is_referent(sentence):
            last = i
    return tuple(out)


@lru_cache(maxsize=16)
def _read(answer: str, question: str) -> _Read:
    sentences = answer_sentences(answer, question)
    source = tuple(terms(s.text) for s in sentences)
    own = tuple(frozenset(t.term for t in terms_of) for terms_of in source)
    asked = frozenset(t.term for t in terms(question))
    before = sentence_before(sentences)
    referents = tuple(asked | (own[b] if b is not None else frozenset()) for b in before)
    holding: dict[str, list[int]] = {}
    for i, found in enumerate(own):
        if sentences[i].checkable:
            for term in found:
                holding.setdefault(term, []).append(i)
    exact: dict[str, int] = {}
    for i, sentence in enumerate(sentences):
        if sentence.checkable:
            exact.setdefault(_key(sentence.text), i)
    return _Read(sentences, source, own, referents, {k: tuple(v) for k, v in holding.items()}, exact, before)


def _anchor_to(stated: tuple[Term, ...], read: _Read, index: int) -> Anchor | None:
    sentence = read.sentences[index]
    own_terms, referent_terms = read.own[index], read.referents[index]
    distinct = {t.term: t for t in stated}
    novel = [t for key, t in distinct.items() if key not in own_terms and key not in referent_terms]
    if any(t.number or t.capitalised for t in novel) or len(novel) > _EXCUSED:
        return None
    own = [key for key in distinct if key in own_terms]
    if not own_terms and read.before[index] is None and not novel:
        # an answer, or its first sentence (after any preamble: "Here is what I found. No."),
        # with no term of its own ("No.", "Yes, both.", "I have. ..."): the statement is the
        # question answered, and it may take only the question's words
        return Anchor(index, ((sentence.start, sentence.end),), 0.0, tuple(distinct), ())
    share = len(own) / len(distinct)
    borrowed = tuple(key for key in distinct if key not in own_terms and key in referent_terms)
    # A sentence that leans on a referent ("She toured Japan.") may have its statement carry a
    # name ("Ann Lee toured Japan."): a third of the statement its own is enough there.
    needed = 1 / 3 if _REFERS.search(sentence.text) and len(borrowed) <= _NAME_TERMS else 0.5
    if not own or (share < needed and not own_terms <= set(distinct)):
        return None
    spans = _spans(sentence, read.source[index], set(own))
    return Anchor(index, spans, share, borrowed, tuple(t.term for t in novel))


def _spans(sentence: SentenceSpan, source: tuple[Term, ...], stated: set[str]) -> tuple[tuple[int, int], ...]:
    """Offsets in the answer of the source's words the statement states, merged across unstated gaps of no term.

    A statement that states every term of its sentence spans the whole sentence.
    """
    if source and all(t.term in stated for t in source):
        return ((sentence.start, sentence.end),)
    spans: list[list[int]] = []
    last_stated = -2
    for i, t in enumerate(source):
        if t.term not in stated:
            continue
        start, end = sentence.start + t.start, sentence.start + t.end
        if spans and last_stated == i - 1:
            spans[-1][1] = end
        else:
            spans.append([start, end])
        last_stated = i
    return tuple((a, b) for a, b in spans)


def anchor_statement(
    statement: str, answer: str, question: str = "", *, within: tuple[int, int] | None = None
) -> Anchor | None:
    """Where in ``answer`` the statement comes from, or ``None`` when it is not what the answer says.

    Args:
        statement: A statement a decomposition wrote.
        answer: The answer it should come from.
        question: The question (a referent: the statement may take words from it only to
            complete or resolve what the answer says).
        within: Only the sentence at these offsets (from :func:`answer_sentences`).

    Returns:
        The anchor to the checkable sentence the statement is most its own to, or ``None``.
    """
    stated = terms(statement)
    read = _read(answer, question)
    if not stated:  # no term ("Yes.", "I have."): only a checkable sentence itself, word for word
        same = read.exact.get(_key(statement))
        if same is None or (within is not None and (read.sentences[same].start, read.sentences[same].end) != within):
            return None
        return Anchor(same, ((read.sentences[same].start, read.sentences[same].end),), 1.0)
    if within is not None:
        candidates = [i for i, s in enumerate(read.sentences) if (s.start, s.end) == within and s.checkable]
    elif (same := read.exact.get(_key(statement))) is not None:
        candidates = [same]  # a sentence taken word for word
    else:  # a source holds some of its terms: look where its rarer terms are (linear in long answers)
        held = sorted((read.holding.get(t.term, ()) for t in stated), key=len)
        rare = [found for found in held if 0 < len(found) <= _RARE]
        pool = rare or [found for found in held if found][:1]
        candidates = sorted({i for found in pool for i in found[: _RARE * 4]})
        # an opening with no term of its own (after any preamble): the question answered
        opening = [
            i for i, s in enumerate(read.sentences) if s.checkable and not read.own[i] and read.before[i] is None
        ]
        candidates = [*opening[:1], *candidates]
    best: Anchor | None = None
    for index in candidates:
        found = _anchor_to(stated, read, index)
        if found is not None and (best is None or found.own > best.own):
            best = found
    return best


@dataclass(frozen=True)
class Settled:
    """The statements to judge, where each comes from, and what became of every sentence and proposal."""

    statements: tuple[str, ...]
    spans: tuple[tuple[tuple[int, int], ...], ...]
    answer_map: AnswerMap


_QUESTION_START = re.compile(
    r"^\W*(?:who|whom|whose|what|which|when|where|why|how)\b\s+(?:is|are|was|were|do|does|did|can|could|has|have|had)\b",
    re.IGNORECASE,
)
_COVERED = 0.8
"""A sentence's statements must state this share of its terms (and every number and name), else it is judged whole."""


def _key(statement: str) -> str:
    return " ".join(statement.lower().split()).rstrip(".!?")


def settle(
    answer: str,
    question: str,
    proposals: Sequence[tuple[int | None, str]],
    *,
    whole: Mapping[int, str] | None = None,
) -> Settled:
    """Keep the proposed statements that are the answer's, and judge every checkable sentence.

    Args:
        answer: The answer.
        question: Its question (a referent only).
        proposals: ``(sentence index or None, statement)`` in order: the statements a
            decomposition wrote, each for one sentence of :func:`answer_sentences` or, with
            ``None``, for whichever sentence anchors it.
        whole: Sentences to judge as they are, whatever was proposed for them, with the
            note to record (the sentence stands alone, addresses the judge, or its rewrite
            failed).

    A proposal is dropped when it is a fragment or a question (``fragment``), not anchored
    (``not_in_answer``: see the module docstring) or said already (``repeated``). A
    checkable sentence whose kept statements do not state :data:`_COVERED` of its terms,
    and every number and capitalised word of it, is judged whole instead, with a note
    naming what was left out; so is one with no statement at all.
    """
    sentences = answer_sentences(answer, question)
    whole = dict(whole or {})
    kept: dict[int, list[tuple[str, Anchor]]] = {i: [] for i in range(len(sentences))}
    dropped: list[DroppedStatement] = []
    seen: set[str] = set()
    for index, statement in proposals:
        text = statement.strip()
        if not text or index in whole:
            continue
        if is_fragment(text) or _QUESTION_START.match(text) or text.endswith("?"):
            dropped.append(DroppedStatement(text=text, reason="fragment", detail="not a statement: no verb, a "
                                            "dangling word, a bare title or a question"))  # fmt: skip
            continue
        within = None if index is None else (sentences[index].start, sentences[index].end)
        found = anchor_statement(text, answer, question, within=within)
        if found is None:
            dropped.append(DroppedStatement(text=text, reason="not_in_answer",
                                            detail="states what the answer does not say"))  # fmt: skip
            continue
        if _key(text) in seen:
            dropped.append(DroppedStatement(text=text, reason="repeated", detail="another statement says it"))
            continue
        seen.add(_key(text))
        kept[found.sentence].append((text, found))
    statements: list[str] = []
    spans: list[tuple[tuple[int, int], ...]] = []
    states: list[AnswerSentence] = []
    for i, sentence in enumerate(sentences):
        if not sentence.checkable:
            states.append(AnswerSentence(start=sentence.start, end=sentence.end, status="not_checkable",
                                         note=sentence.why))  # fmt: skip
            continue
        note = whole.get(i)
        if note is None:
            note = _left_out(sentence, [anchor for _, anchor in kept[i]], [text for text, _ in kept[i]])
        if note is None:
            for text, anchor in kept[i]:
                statements.append(text)
                spans.append(anchor.spans)
            states.append(AnswerSentence(start=sentence.start, end=sentence.end, status="judged"))
            continue
        statements.append(sentence.text)
        spans.append(((sentence.start, sentence.end),))
        states.append(AnswerSentence(start=sentence.start, end=sentence.end, status="judged_whole", note=note))
    return Settled(tuple(statements), tuple(spans), AnswerMap(sentences=tuple(states), dropped=tuple(dropped)))


def _left_out(sentence: SentenceSpan, anchors: Sequence[Anchor], texts: Sequence[str]) -> str | None:
    """``None`` when the kept statements state the sentence; else a note naming what they left out."""
    if not anchors:
        return "no statement of it was kept"
    source = terms(sentence.text)
    stated = {t.term for text in texts for t in terms(text)}
    missing = [t for t in source if t.term not in stated]
    if not source:
        return None
    vital = [t for t in missing if t.number or t.capitalised]
    if vital or len({t.term for t in missing}) > (1 - _COVERED) * len({t.term for t in source}):
        shown = ", ".join(dict.fromkeys(sentence.text[t.start : t.end] for t in (vital or missing)))
        return f"its statements left out: {shown}"
    return None
