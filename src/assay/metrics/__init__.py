"""Metrics: what is judged and how verdicts aggregate into scores.

Every metric is a plain value (a frozen dataclass) implementing :class:`Metric`:
``name``, ``required_fields``, ``spec()`` and ``async score(sample, judge) -> Score``.
"""

from assay.metrics._base import Metric, missing_fields, score_safely
from assay.metrics._composite import Aggregate, CompositeMetric, CompositeRun, Outputs, SubMetric, SubResult
from assay.metrics._decompose import Decomposer, Decomposition, LLMDecomposer, SentenceDecomposer
from assay.metrics._faithfulness import Faithfulness
from assay.metrics._graders import BinaryJudgeGrader, CombinedGrader, RangeJudgeGrader, Shot, TemplatedPromptJudgeGrader

__all__ = [
    "Aggregate",
    "BinaryJudgeGrader",
    "CombinedGrader",
    "CompositeMetric",
    "CompositeRun",
    "Decomposer",
    "Decomposition",
    "Faithfulness",
    "LLMDecomposer",
    "Metric",
    "Outputs",
    "RangeJudgeGrader",
    "SentenceDecomposer",
    "Shot",
    "SubMetric",
    "SubResult",
    "TemplatedPromptJudgeGrader",
    "missing_fields",
    "score_safely",
]
