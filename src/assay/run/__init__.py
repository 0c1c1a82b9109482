"""Running metrics over datasets."""

from assay.run._dataset import ALIASES, Row, count_rows, read_jsonl, sample_from_record
from assay.run._evaluate import EvalResult, SampleResult, aevaluate, evaluate

__all__ = [
    "ALIASES",
    "EvalResult",
    "Row",
    "SampleResult",
    "aevaluate",
    "count_rows",
    "evaluate",
    "read_jsonl",
    "sample_from_record",
]
