"""Running metrics over datasets: streaming input, the runner, the run store, calibration, judge benches."""

from assay.models._cache import CachedJudge, CacheInfo, JudgeCache, cache_key, is_cacheable
from assay.models._stack import Limits, build_judge_stack
from assay.run._bench import BENCH_SETS, BenchCell, BenchResult, BenchSet, bench_judges, bench_sets
from assay.run._calibrate import Calibration, CalibrationItem, CalibrationOutcome, calibrate
from assay.run._cascade import PlannedCascade, cascade_lines, plan_escalation
from assay.run._data import (
    ALIASES,
    DEFAULT_MAX_FIELD_CHARS,
    DEFAULT_MAX_ROW_CHARS,
    IDEAL_CONTEXT_COLUMNS,
    MAX_NESTING,
    DatasetSource,
    Row,
    SizeLimits,
    count_rows,
    from_arrow,
    from_dataframe,
    from_hf_dataset,
    open_dataset,
    read_csv,
    read_dataset,
    read_jsonl,
    read_parquet,
    sample_from_record,
)
from assay.run._evaluate import aevaluate, evaluate
from assay.run._judge_record import JudgeRecord
from assay.run._outcome import EvalResult
from assay.run._progress import ProgressMode
from assay.run._ray import aevaluate_ray
from assay.run._results import SampleResult
from assay.run._session import ResumeError, RunOptions
from assay.run._store import SCHEMA_VERSION, RunInfo, RunSpec, RunStatus, RunStore, new_run_id
from assay.run._summary import RunSummary, summarize_results
from assay.run._trust import TrustFigure, store_agreement, trust_for, trust_for_run

__all__ = [
    "ALIASES",
    "BENCH_SETS",
    "DEFAULT_MAX_FIELD_CHARS",
    "DEFAULT_MAX_ROW_CHARS",
    "IDEAL_CONTEXT_COLUMNS",
    "MAX_NESTING",
    "SCHEMA_VERSION",
    "BenchCell",
    "BenchResult",
    "BenchSet",
    "CacheInfo",
    "CachedJudge",
    "Calibration",
    "CalibrationItem",
    "CalibrationOutcome",
    "DatasetSource",
    "EvalResult",
    "JudgeCache",
    "JudgeRecord",
    "Limits",
    "PlannedCascade",
    "ProgressMode",
    "ResumeError",
    "Row",
    "RunInfo",
    "RunOptions",
    "RunSpec",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "SampleResult",
    "SizeLimits",
    "TrustFigure",
    "aevaluate",
    "aevaluate_ray",
    "bench_judges",
    "bench_sets",
    "build_judge_stack",
    "cache_key",
    "calibrate",
    "cascade_lines",
    "count_rows",
    "evaluate",
    "from_arrow",
    "from_dataframe",
    "from_hf_dataset",
    "is_cacheable",
    "new_run_id",
    "open_dataset",
    "plan_escalation",
    "read_csv",
    "read_dataset",
    "read_jsonl",
    "read_parquet",
    "sample_from_record",
    "store_agreement",
    "summarize_results",
    "trust_for",
    "trust_for_run",
]
