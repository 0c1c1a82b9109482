"""assay: judge LLM outputs with binary verdicts.

import assay
from assay.metrics import Faithfulness

result = assay.evaluate(samples, metrics=[Faithfulness()], judge="local")
result.summary(); result.to_pandas()
"""

from assay._samples import Message, Sample, ToolCall
from assay._scores import (
    AnswerMap,
    Binary,
    Decision,
    JudgeCall,
    MetricSpec,
    PendingVerdict,
    Score,
    Summary,
    UnscoredReason,
    Usage,
    Verdict,
    summarize,
)
from assay._traces import TRACE_FORMATS, detect_trace_format, load_trace
from assay._version import __version__
from assay.metrics import Faithfulness, Metric
from assay.models import JudgeModel, get_judge
from assay.run import EvalResult, SampleResult, aevaluate, calibrate, evaluate, read_jsonl

__all__ = [
    "TRACE_FORMATS",
    "AnswerMap",
    "Binary",
    "Decision",
    "EvalResult",
    "Faithfulness",
    "JudgeCall",
    "JudgeModel",
    "Message",
    "Metric",
    "MetricSpec",
    "PendingVerdict",
    "Sample",
    "SampleResult",
    "Score",
    "Summary",
    "ToolCall",
    "UnscoredReason",
    "Usage",
    "Verdict",
    "__version__",
    "aevaluate",
    "calibrate",
    "detect_trace_format",
    "evaluate",
    "get_judge",
    "load_trace",
    "read_jsonl",
    "summarize",
]
