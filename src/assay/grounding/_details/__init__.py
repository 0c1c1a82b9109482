"""Deterministic detail checks between a statement and its evidence, and the calibrated combiner.

The offline judge's typical mistake is to call a statement supported when one detail is
wrong: a changed number, date, name or place, a dropped or added negation, an antonym
("increased" for "decreased"), a quantifier ("all" for "some"). :func:`detail_features`
looks for exactly those with plain string rules (no model, a fraction of a millisecond for
a sentence against a paragraph). Three of them veto a "supported" P in the verifier
(:data:`assay.grounding._verify.VETO_CHECKS`). :class:`DetailCombiner` is the logistic
regression over P and every feature that ``benchmarks/fit_detail_combiner.py`` fits and
writes; it was measured and not made the decision (``docs/design/grounding/verifier.md``), so no
combiner ships with the package.

The features (:data:`DETAIL_FEATURES`, the order of :meth:`DetailFeatures.vector`):

==========================  ==========  ==================================================
name                        range       meaning
==========================  ==========  ==================================================
``missing_numbers``         0, 1, 2...  distinct numbers and dates of the statement that the
                                        evidence does not contain (see below)
``missing_entities``        0, 1, 2...  distinct names (capitalised runs, acronyms, quoted
                                        titles) of the statement of which no part is in the
                                        evidence
``negation_mismatches``     0 to the    statement sentences with a word negated on one side
                            sentences   and not on the other, where its contexts agree
``antonym_mismatches``      0, 1, 2...  antonym pairs with one side in the statement and the
                                        other nearby in the evidence
``quantifier_mismatches``   0 to the    statement sentences with a quantifier (all / some /
                            sentences   none) whose class no nearby evidence quantifier has
``uncovered_share``         [0, 1]      share of the statement's distinct content words that
                                        are not in the evidence (0 without content words)
``longest_uncovered_run``   0, 1, 2...  longest run of consecutive statement content words
                                        (stopwords skipped) that are not in the evidence
==========================  ==========  ==================================================

How each check reads text (case-insensitive unless said otherwise):

- **Numbers and dates.** Digits (``1,000`` = ``1000``, ``3.5``, ``1990s`` = 1990,
  ``3rd`` = 3, ``5k`` = 5,000, ``2bn`` = 2e9, ``2018-19`` = 2018 and 2019), number words
  (``three`` = 3, ``twenty-five`` = 25, ``two hundred thousand`` = 200,000, ``third`` = 3;
  a lone "one" is skipped, it is mostly a pronoun), scale words (``5 million``), ``%`` /
  ``percent`` / ``per cent``, currency signs, month names (capitalised, or any case next
  to a number; "May" only next to a number), ISO dates (``2020-03-05``: year, month, day)
  and slash dates (either of the first two parts may be the month). Digits glued to a
  word (``A380``, ``COVID-19``) are names, not numbers. A statement number is in the
  evidence when the evidence has the same value, or the same number before its scale
  word when one side has no scale word ("5" matches "5 million"; "5 million" does not
  match "5 billion"). Units and currencies are shown in :meth:`DetailFeatures.problems`
  but do not decide a match. Repeated values count once.
- **Names.** Runs of capitalised words (joined by "of", "the", "de", "van", "von"...;
  leading stopwords dropped), all-caps acronyms (``NASA``, ``U.S.``) and quoted titles
  (quoted text starting with a capital or a digit; a quoted lower-case phrase is a
  quotation, not a name). A run that starts a sentence and is one word long counts only
  if the word is also written capitalised mid-sentence somewhere in the statement or
  evidence, so "Researchers found" is not a name (a missing sentence-initial name still
  shows in the coverage). A name is in the evidence when any of its distinctive words is
  (generic words such as "University", "New", "Mr" are not distinctive), so "Eiffel"
  matches "Gustave Eiffel"; a hyphenated word when one of its parts is ("Sims-based");
  a word of five letters or more also matches an evidence word differing only in its last
  letters (at most three more or fewer, all but one letter of the shorter shared:
  "Libyan" and "Libya"). An acronym also matches the initials of a capitalised run ("UN"
  and "United Nations"); a quoted title matches when its text or all its content words
  are in the evidence. Month names are left to the number check. A statement that is
  mostly capitalised (a headline) has no names: case says nothing there.
- **Negation, antonyms, quantifiers** compare *local contexts*: a word's context is the
  set of content words within six tokens of it in its sentence. An evidence occurrence
  of a word is *nearby* when its context shares a content word with the statement
  word's context. A statement sentence found word for word in the evidence has no
  mismatch. Local contexts rather than whole sentences, because summaries merge several
  evidence sentences into one.

  - A content word is *negated* when it is the first content word after a negation cue
    (not, no, never, n't, cannot, none, neither, nor, without, nobody, nothing, nowhere,
    unable, fail(s/ed/ing) to) within three tokens, in the same clause (clauses end at
    , ; : and "but", "although", "however", "while", "whereas"). A statement sentence
    mismatches when one of its negated words occurs in the evidence, nearby, and only
    un-negated; or when one of its un-negated words occurs in the evidence with two
    shared context words (stricter: evidence negates many things), and only negated.
  - An antonym pair (:data:`ANTONYM_PAIRS`, exact word forms) mismatches when the
    statement uses a form of one side and none of the other in that sentence, the
    evidence has a form of the other side nearby and no form of the same side nearby,
    with the same polarity ("did not increase" vs "decreased" is not flagged).
  - Quantifier classes: universal (all, every, always, everyone...), partial (some, many,
    few, most, several, often...), none (never, none, nobody, nothing). A statement
    quantifier mismatches when there are quantifiers nearby in the evidence and none of
    its class; a partial one is satisfied by a universal one ("some" of "all" holds).
    "the most" and "at all" are not quantifiers.
- **Content words** are word tokens that are not stopwords (:data:`STOPWORDS`), number
  words, month names or single letters, crudely lemmatised on both sides the same way
  (lower case, possessive and plural -s removed, -ing/-ed and a final -e removed, about 60
  common irregular forms mapped to their base: "won" to "win"). An acronym counts as
  covered when it is the initials of a capitalised run of the evidence.

Check a statement against the whole evidence it was judged on (every chunk), not against
one chunk: what one chunk lacks another may hold.
"""

from assay.grounding._details._combiner import (
    COMBINER_SCHEMA,
    FEATURES_VERSION,
    LOGIT_P,
    DetailCombiner,
    load_detail_combiner,
)
from assay.grounding._details._features import DETAIL_FEATURES, DetailFeatures, detail_features
from assay.grounding._details._lexicon import ANTONYM_PAIRS, STOPWORDS

__all__ = [
    "ANTONYM_PAIRS",
    "COMBINER_SCHEMA",
    "DETAIL_FEATURES",
    "FEATURES_VERSION",
    "LOGIT_P",
    "STOPWORDS",
    "DetailCombiner",
    "DetailFeatures",
    "detail_features",
    "load_detail_combiner",
]
