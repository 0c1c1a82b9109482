"""assay: judge LLM outputs with binary verdicts."""

from assay._samples import Message, Sample, ToolCall
from assay._scores import Binary, JudgeCall, MetricSpec, Score, Summary, UnscoredReason, Usage, Verdict, summarize

__version__ = "0.1.0"

__all__ = [
    "Binary",
    "JudgeCall",
    "Message",
    "MetricSpec",
    "Sample",
    "Score",
    "Summary",
    "ToolCall",
    "UnscoredReason",
    "Usage",
    "Verdict",
    "__version__",
    "summarize",
]
