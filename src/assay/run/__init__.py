"""Running metrics over datasets: streaming input, the runner, the call cache, the run store."""

from assay.run._cache import CachedJudge, JudgeCache, cache_key
from assay.run._dataset import ALIASES, Row, count_rows, read_jsonl, sample_from_record
from assay.run._evaluate import EvalResult, Limits, SampleResult, aevaluate, evaluate
from assay.run._ray import aevaluate_ray
from assay.run._readers import from_dataframe, from_hf_dataset, read_csv, read_dataset, read_parquet
from assay.run._store import SCHEMA_VERSION, RunInfo, RunSpec, RunStatus, RunStore, new_run_id

__all__ = [
    "ALIASES",
    "SCHEMA_VERSION",
    "CachedJudge",
    "EvalResult",
    "JudgeCache",
    "Limits",
    "Row",
    "RunInfo",
    "RunSpec",
    "RunStatus",
    "RunStore",
    "SampleResult",
    "aevaluate",
    "aevaluate_ray",
    "cache_key",
    "count_rows",
    "evaluate",
    "from_dataframe",
    "from_hf_dataset",
    "new_run_id",
    "read_csv",
    "read_dataset",
    "read_jsonl",
    "read_parquet",
    "sample_from_record",
]
