"""Metrics: what is judged and how verdicts aggregate into scores.

Every metric is a plain value (a frozen dataclass) implementing :class:`Metric`:
``name``, ``required_fields``, ``spec()`` and ``async score(sample, judge) -> Score``.
``spec()`` is derived from the metric's fields (:func:`spec_from_fields`) and
:func:`metric_from_spec` rebuilds the metric from it.
"""

from assay.grounding._addressed import AddressedFinding, addresses_judge
from assay.grounding._decompose import Decomposer, Decomposition, LLMDecomposer, SentenceDecomposer
from assay.grounding._details import (
    DETAIL_FEATURES,
    DetailCombiner,
    DetailFeatures,
    detail_features,
    load_detail_combiner,
)
from assay.grounding._verify import StatementVerifier
from assay.metrics._agent import AgentGoalAccuracy
from assay.metrics._base import Metric, missing_fields, score_safely
from assay.metrics._composite import Aggregate, CompositeMetric, CompositeRun, Outputs, SubMetric, SubResult
from assay.metrics._endstate import Action, EndState, StateChanges, read_end_state
from assay.metrics._escalate import EscalatingMetric, Escalation, JudgeLevel
from assay.metrics._faithfulness import Faithfulness
from assay.metrics._graders import BinaryJudgeGrader, CombinedGrader, RangeJudgeGrader, Shot, TemplatedPromptJudgeGrader
from assay.metrics._holistic import HolisticGoalAccuracy
from assay.metrics._matching import ArgumentMatch
from assay.metrics._rag import AnswerRelevancy, ContextPrecision, ContextRecall, FactualCorrectness
from assay.metrics._rebuild import metric_from_spec
from assay.metrics._registry import MetricEntry, build_metric, metric_entries, metrics_from, register_metric
from assay.metrics._reviewable import Reviewable
from assay.metrics._spec import spec_from_fields
from assay.metrics._state import AgentStateMatch
from assay.metrics._tools import ToolCallAccuracy
from assay.metrics._trace import TraceFormatter

__all__ = [
    "DETAIL_FEATURES",
    "Action",
    "AddressedFinding",
    "AgentGoalAccuracy",
    "AgentStateMatch",
    "Aggregate",
    "AnswerRelevancy",
    "ArgumentMatch",
    "BinaryJudgeGrader",
    "CombinedGrader",
    "CompositeMetric",
    "CompositeRun",
    "ContextPrecision",
    "ContextRecall",
    "Decomposer",
    "Decomposition",
    "DetailCombiner",
    "DetailFeatures",
    "EndState",
    "EscalatingMetric",
    "Escalation",
    "FactualCorrectness",
    "Faithfulness",
    "HolisticGoalAccuracy",
    "JudgeLevel",
    "LLMDecomposer",
    "Metric",
    "MetricEntry",
    "Outputs",
    "RangeJudgeGrader",
    "Reviewable",
    "SentenceDecomposer",
    "Shot",
    "StateChanges",
    "StatementVerifier",
    "SubMetric",
    "SubResult",
    "TemplatedPromptJudgeGrader",
    "ToolCallAccuracy",
    "TraceFormatter",
    "addresses_judge",
    "build_metric",
    "detail_features",
    "load_detail_combiner",
    "metric_entries",
    "metric_from_spec",
    "metrics_from",
    "missing_fields",
    "read_end_state",
    "register_metric",
    "score_safely",
    "spec_from_fields",
]
