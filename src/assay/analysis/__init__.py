"""Analysis: the judge is noisy, so measure the noise.

Pure functions over stored results (``RunStore.records`` or ``SampleResult.to_record``):

- :func:`analyze_repeats`: per sample, the score's mean, standard deviation, min and max
  across repeats and each statement's flip rate; for the run, the mean with a seeded
  bootstrap CI, the share of unstable samples, and how often statement extraction changed.
- :func:`bootstrap_mean_ci` / :func:`paired_bootstrap_ci` / :func:`wilson_interval`: the
  one home of assay's intervals, used by analysis, gates, the job summary and the report.
- :func:`evaluate_gate`: a gate "score >= t" (per sample or on the run mean) with its
  pass probability from repeats or from the binomial noise model, its flake probability,
  and the statements that sank each failing sample.
- :func:`recommend_statements` / :func:`recommend_threshold`: how many statements (and
  which threshold) keep the flake probability under a target.
- :func:`simulate_gates`: a seeded noisy-judge simulator with the closed form beside it.
- :func:`agreement`: judge vs people (balanced accuracy, Cohen's kappa, per-class
  precision/recall, confusion, seeded bootstrap CIs), behind ``assay calibrate``.

Definitions and assumptions: ``docs/design/variance.md``.
"""

from assay.analysis._agreement import (
    Agreement,
    ClassStats,
    Confusion,
    agreement,
    balanced_accuracy,
    bootstrap_ci,
    cohen_kappa,
    confusion,
    precision_recall,
)
from assay.analysis._gates import (
    DEFAULT_FLIP_RATE,
    DEFAULT_MAX_UNSCORED,
    GateOutcome,
    GatePolicy,
    GateResult,
    Recommendation,
    RunCoverage,
    SampleGate,
    Sinker,
    Stability,
    binomial_pass_probability,
    classify,
    combined_outcome,
    evaluate_gate,
    flake_probability,
    is_pass_fail,
    min_passing,
    no_such_metric,
    observed_rate,
    partial_run_reasons,
    poisson_binomial_pmf,
    recommend_statements,
    recommend_threshold,
    refuses_partial_run,
    score_pass_probability,
)
from assay.analysis._judges import answered_by, judge_models_note
from assay.analysis._repeats import (
    RepeatReport,
    SampleRepeats,
    StatementFlips,
    analyze_repeats,
    flip_rate,
    metrics_in,
    sample_repeats,
    statement_key,
)
from assay.analysis._simulate import Simulation, simulate_gate, simulate_gates, simulation_svg
from assay.analysis._stats import DEFAULT_BOOTSTRAP, bootstrap_mean_ci, paired_bootstrap_ci, wilson_interval

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_FLIP_RATE",
    "DEFAULT_MAX_UNSCORED",
    "Agreement",
    "ClassStats",
    "Confusion",
    "GateOutcome",
    "GatePolicy",
    "GateResult",
    "Recommendation",
    "RepeatReport",
    "RunCoverage",
    "SampleGate",
    "SampleRepeats",
    "Simulation",
    "Sinker",
    "Stability",
    "StatementFlips",
    "agreement",
    "analyze_repeats",
    "answered_by",
    "balanced_accuracy",
    "binomial_pass_probability",
    "bootstrap_ci",
    "bootstrap_mean_ci",
    "classify",
    "cohen_kappa",
    "combined_outcome",
    "confusion",
    "evaluate_gate",
    "flake_probability",
    "flip_rate",
    "is_pass_fail",
    "judge_models_note",
    "metrics_in",
    "min_passing",
    "no_such_metric",
    "observed_rate",
    "paired_bootstrap_ci",
    "partial_run_reasons",
    "poisson_binomial_pmf",
    "precision_recall",
    "recommend_statements",
    "recommend_threshold",
    "refuses_partial_run",
    "sample_repeats",
    "score_pass_probability",
    "simulate_gate",
    "simulate_gates",
    "simulation_svg",
    "statement_key",
    "wilson_interval",
]
