"""Grounding: statements and how each is checked against a context.

What faithfulness (and every metric that asks "is this statement supported?") stands on:

- decomposition (:mod:`._decompose`): an answer into atomic statements, each anchored to
  the answer sentence it comes from (:mod:`._anchor`);
- evidence selection (:mod:`._evidence`): the few context sentences that bear on a statement;
- detail checks (:mod:`._details`): numbers, dates, names, negation and quantifiers the
  evidence must hold, checked without a judge call;
- the judge-addressed guard (:mod:`._addressed`): text that speaks to the judge instead of
  about the world;
- the statement verifier (:mod:`._verify`): one yes/no verdict per statement, with its
  reason and evidence.

This layer sits on ``models``, ``prompts`` and ``parsing``; ``metrics`` builds on it, and it
imports nothing above itself.
"""

from assay.grounding._addressed import AddressedFinding, addresses_judge
from assay.grounding._anchor import (
    Anchor,
    SentenceSpan,
    anchor_statement,
    answer_sentences,
    checkable_sentences,
    content_lemmas,
    is_fragment,
    settle,
)
from assay.grounding._decompose import (
    AnchoredDecomposer,
    Decomposer,
    Decomposition,
    HybridDecomposer,
    LLMDecomposer,
    SentenceDecomposer,
    anchored,
    packs_facts,
)
from assay.grounding._details import (
    DETAIL_FEATURES,
    DetailCombiner,
    DetailFeatures,
    detail_features,
    load_detail_combiner,
)
from assay.grounding._evidence import ContextIndex, Evidence, EvidenceSpan
from assay.grounding._verify import (
    StatementCheck,
    StatementJudgement,
    StatementOutcome,
    StatementVerifier,
)

__all__ = [
    "DETAIL_FEATURES",
    "AddressedFinding",
    "Anchor",
    "AnchoredDecomposer",
    "ContextIndex",
    "Decomposer",
    "Decomposition",
    "DetailCombiner",
    "DetailFeatures",
    "Evidence",
    "EvidenceSpan",
    "HybridDecomposer",
    "LLMDecomposer",
    "SentenceDecomposer",
    "SentenceSpan",
    "StatementCheck",
    "StatementJudgement",
    "StatementOutcome",
    "StatementVerifier",
    "addresses_judge",
    "anchor_statement",
    "anchored",
    "answer_sentences",
    "checkable_sentences",
    "content_lemmas",
    "detail_features",
    "is_fragment",
    "load_detail_combiner",
    "packs_facts",
    "settle",
]
