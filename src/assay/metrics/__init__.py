"""Metrics: what is judged and how verdicts aggregate into scores."""

from assay.metrics._base import Metric, missing_fields
from assay.metrics._decompose import Decomposer, Decomposition, LLMDecomposer, SentenceDecomposer
from assay.metrics._faithfulness import Faithfulness

__all__ = [
    "Decomposer",
    "Decomposition",
    "Faithfulness",
    "LLMDecomposer",
    "Metric",
    "SentenceDecomposer",
    "missing_fields",
]
