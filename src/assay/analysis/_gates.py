"""Gates that know how much the judge wobbles: P(pass), flake probability, and recommendations.

A gate is "score >= threshold", on every sample (``per_sample``) or on the run's mean.
Its pass probability P(pass) is the probability that judging the same outputs again
passes it:

- **From repeats** (a run with 2+ repeats): per sample, the share of scored repeats that
  pass, with a Wilson interval; for the run mean, a seeded simulation that builds a
  single run by drawing, for every sample independently, one of its scored repeats.
  Both use the repeats' *scores*, so they carry every kind of judge noise: verdict flips
  and a decomposition that splits the answer into different statements.
- **From one run, with the binomial noise model** (an estimate only): every statement's
  verdict flips with probability ε, independently. A statement observed 1 is 1 with
  probability 1 - ε, one observed 0 is 1 with probability ε, so the number of supported
  statements is Poisson-binomial and P(score >= t) is computed exactly
  (:func:`poisson_binomial_pmf`). The run mean is simulated (seeded) from the same model.

Flake probability = ``min(P(pass), 1 - P(pass))``: the chance that a rerun does not give
the gate's more likely outcome. With a target τ (``max_flake``, default 1%) a gate is a
*stable pass* when P(pass) >= 1 - τ, a *stable fail* when P(pass) <= τ, else *flaky*.

The outcome decides on what was seen. A single run passes or fails on its observed
outcome; its P(pass) is reported as an estimate, never turned into "flaky" (nothing
flaked: no rerun was seen). A run with repeats is flaky when its repeats disagree (the
gate passes on some repeats and fails on others) or when the observed outcome recurs
with probability below 1 - τ.

Padding defence (see ``docs/design/variance.md``): ``strict`` makes any unsupported
statement fail its sample (the gate becomes per-sample); ``min_statements`` = K makes a
sample with fewer than K statements *fail* (not unscored, so it cannot hide under the
unscored budget). Every failing sample carries the statements that sank it.

A gate never passes a run that was not finished (issue 33): given the run's
:class:`RunCoverage` (``RunStore.coverage``), a run that is ``interrupted``, ``failed`` or
still ``running``, or that has more invalid input rows than ``max_invalid_rows`` (default
0), is ``incomplete`` whatever its judged rows show, and :func:`partial_run_reasons` says
how many rows were never judged and why. Only ``allow_partial`` gates a run that is not
finished, and the result then says it gated a partial run (:attr:`GateResult.gated_partial`);
invalid rows are admitted only by ``max_invalid_rows`` (:func:`refuses_partial_run`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from assay._scores import Score
from assay.analysis._judges import answered_by, judge_models_note
from assay.analysis._repeats import RepeatReport, SampleRepeats, statement_key
from assay.analysis._stats import wilson_interval
from assay.errors import ConfigError, check_threshold, counted, did_you_mean

__all__ = [
    "DEFAULT_FLIP_RATE",
    "DEFAULT_MAX_UNSCORED",
    "GateOutcome",
    "GatePolicy",
    "GateResult",
    "Recommendation",
    "RunCoverage",
    "SampleGate",
    "Sinker",
    "Stability",
    "binomial_pass_probability",
    "classify",
    "combined_outcome",
    "evaluate_gate",
    "flake_probability",
    "is_pass_fail",
    "min_passing",
    "no_such_metric",
    "observed_rate",
    "partial_run_reasons",
    "poisson_binomial_pmf",
    "recommend_statements",
    "recommend_threshold",
    "refuses_partial_run",
    "score_pass_probability",
]

DEFAULT_FLIP_RATE = 0.05
"""The flip rate assumed for a single run when none is measured or given."""

DEFAULT_MAX_UNSCORED = 0.1
"""The unscored share above which a run is not the evaluation that was asked for.

One budget for ``assay run`` (exit 3) and ``assay gate`` (exit 2, "unscored"): the two
used to differ (10% and 5%), so a run that ``assay run`` called evaluated could fail its
gate for being unscored. Why a tenth: unjudged results can move the true mean by at most
their share (0.1, had each of them scored 0, or 1), about the full width of the 95%
bootstrap CI of a 100-sample run with a typical spread (SD 0.3: +-0.06)."""

_EPS = 1e-9


def no_such_metric(run_id: str, name: str, known: Sequence[str]) -> ConfigError:
    """The error for gating a metric the run does not have, in every door (``assay gate``, ``EvalResult.gate``).

    ``run r has no metric 'faithfullness'; did you mean 'faithfulness'? its metrics: faithfulness``.
    """
    names = ", ".join(known) or "none"
    return ConfigError(f"run {run_id} has no metric {name!r};{did_you_mean(name, known)} its metrics: {names}")


Stability = Literal["stable_pass", "stable_fail", "flaky"]
GateOutcome = Literal["pass", "fail", "flaky", "unscored", "incomplete", "untrusted"]


def poisson_binomial_pmf(probs: Sequence[float]) -> npt.NDArray[np.float64]:
    """Exact distribution of the number of successes of independent trials with ``probs``.

    ``pmf[k] = P(K = k)`` for k = 0..n, by convolving the trials one at a time
    (O(n²), exact up to floating point).
    """
    pmf = np.zeros(len(probs) + 1, dtype=np.float64)
    pmf[0] = 1.0
    for i, p in enumerate(probs, start=1):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probabilities must be in [0, 1], got {p}")
        pmf[1 : i + 1] = pmf[1 : i + 1] * (1 - p) + pmf[0:i] * p
        pmf[0] *= 1 - p
    return pmf


def min_passing(n: int, threshold: float) -> int:
    """The fewest supported statements out of ``n`` whose score k/n reaches ``threshold``."""
    return max(0, math.ceil(threshold * n - _EPS))


def score_pass_probability(verdicts: Sequence[int], threshold: float, flip_rate: float) -> float:
    """P(score >= threshold) when each observed verdict flips with probability ``flip_rate``.

    A statement observed 1 is 1 with probability 1 - ε, one observed 0 is 1 with
    probability ε; the count of 1s is Poisson-binomial (exact). No verdicts: NaN.
    """
    if not verdicts:
        return math.nan
    if not 0.0 <= flip_rate <= 1.0:
        raise ValueError(f"flip_rate must be in [0, 1], got {flip_rate}")
    pmf = poisson_binomial_pmf([1 - flip_rate if v == 1 else flip_rate for v in verdicts])
    return float(min(1.0, pmf[min_passing(len(verdicts), threshold) :].sum()))


def observed_rate(true_rate: float, flip_rate: float) -> float:
    """The rate at which a noisy judge says 1: q = p(1 - ε) + (1 - p)ε."""
    return true_rate * (1 - flip_rate) + (1 - true_rate) * flip_rate


def binomial_pass_probability(n: int, true_rate: float, flip_rate: float, threshold: float) -> float:
    """P(score >= threshold) for n statements, each truly supported with probability p, then flipped with ε.

    The judge's verdicts are i.i.d. Bernoulli(q), q = :func:`observed_rate`, so::

        P(pass) = sum_{k >= ceil(t·n)} C(n, k) q^k (1 - q)^(n - k)
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    q = observed_rate(true_rate, flip_rate)
    return float(
        min(1.0, sum(math.comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(min_passing(n, threshold), n + 1)))
    )


def flake_probability(p_pass: float) -> float:
    """``min(P(pass), 1 - P(pass))``: the chance a rerun gives the less likely outcome."""
    return min(p_pass, 1.0 - p_pass)


def classify(p_pass: float, target: float = 0.01) -> Stability:
    """Stable pass (P >= 1 - target), stable fail (P <= target), else flaky."""
    if p_pass >= 1.0 - target - _EPS:
        return "stable_pass"
    if p_pass <= target + _EPS:
        return "stable_fail"
    return "flaky"


@dataclass(frozen=True)
class Recommendation:
    """For a true support rate and a flip rate: the statements a threshold needs to be stable.

    Attributes:
        threshold: The gate's threshold.
        true_rate: The answer's true support rate p.
        flip_rate: The judge's flip rate ε.
        n_statements: The smallest n from which every n' <= ``n_max`` is stable in one
            direction (``None``: none up to ``n_max``, e.g. when q is close to the threshold).
        p_pass: P(pass) at ``n_statements`` (NaN if none).
        stability: ``stable_pass`` or ``stable_fail`` at that n, or ``flaky``.
    """

    threshold: float
    true_rate: float
    flip_rate: float
    n_statements: int | None
    p_pass: float
    stability: Stability


def recommend_statements(
    true_rate: float,
    flip_rate: float,
    thresholds: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.9),
    *,
    target: float = 0.01,
    n_max: int = 200,
) -> tuple[Recommendation, ...]:
    """Per threshold: the fewest statements that make the gate stable (:class:`Recommendation`).

    P(pass) is :func:`binomial_pass_probability`. Because ceil(t·n) is a step function,
    P(pass) is not monotone in n; the recommended n is the smallest from which *every*
    larger n up to ``n_max`` is stable in the same direction.
    """
    rows = []
    for t in thresholds:
        probs = [binomial_pass_probability(n, true_rate, flip_rate, t) for n in range(1, n_max + 1)]
        kinds = [classify(p, target) for p in probs]
        found: int | None = None
        if kinds[-1] != "flaky":
            found = n_max
            while found > 1 and kinds[found - 2] == kinds[-1]:
                found -= 1
        rows.append(
            Recommendation(
                threshold=t,
                true_rate=true_rate,
                flip_rate=flip_rate,
                n_statements=found,
                p_pass=probs[found - 1] if found else math.nan,
                stability=kinds[found - 1] if found else "flaky",
            )
        )
    return tuple(rows)


def recommend_threshold(n: int, true_rate: float, flip_rate: float, *, target: float = 0.01) -> float | None:
    """The highest threshold k/n that an answer with support rate p passes with P >= 1 - target.

    ``None`` when even ``threshold = 0`` is not that stable (never: P(score >= 0) = 1) or
    ``n < 1``. The search is over k = n, n-1, ..., 0.
    """
    if n < 1:
        return None
    for k in range(n, -1, -1):
        if binomial_pass_probability(n, true_rate, flip_rate, k / n) >= 1 - target - _EPS:
            return k / n
    return None


@dataclass(frozen=True)
class GatePolicy:
    """What a gate checks and how much flakiness it tolerates.

    Attributes:
        threshold: The gate is "score >= threshold".
        per_sample: Gate every sample instead of the run's mean.
        strict: Any unsupported statement fails its sample (implies ``per_sample``).
        min_statements: A sample with fewer statements fails (0: no rule).
        max_flake: The flake target τ: stable means P(pass) >= 1 - τ or <= τ.
        max_unscored: The highest tolerated share of unscored (sample, repeat) results
            (:data:`DEFAULT_MAX_UNSCORED`, the same budget as ``assay run``'s).
        flip_rate: ε for the binomial model (``None``: measured from repeats, else
            :data:`DEFAULT_FLIP_RATE`).
        simulations: Simulated runs for the run-mean P(pass).
        seed: Seed of those simulations.
        allow_partial: Gate a run that is not finished (interrupted, failed, still
            running) on the rows it judged, instead of calling it ``incomplete``; the result
            says it gated a partial run (``assay gate --allow-partial``). Invalid rows are
            ``max_invalid_rows``' business.
        max_invalid_rows: The most invalid input rows (never judged) a run may have and
            still be gated (``assay gate --max-invalid-rows``; default 0).
        allow_untrusted_judge: Gate a metric whose judge's measured agreement has a CI
            reaching chance (``assay gate --allow-untrusted-judge``) instead of calling it
            ``untrusted``; the result says so.
    """

    threshold: float = 0.8
    per_sample: bool = False
    strict: bool = False
    min_statements: int = 0
    max_flake: float = 0.01
    max_unscored: float = DEFAULT_MAX_UNSCORED
    flip_rate: float | None = None
    simulations: int = 10_000
    seed: int = 0
    allow_partial: bool = False
    max_invalid_rows: int = 0
    allow_untrusted_judge: bool = False

    def __post_init__(self) -> None:
        check_threshold(self.threshold, "threshold")  # the one check of every door's pass mark
        for name in ("max_flake", "max_unscored"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if self.flip_rate is not None and not 0.0 <= self.flip_rate <= 0.5:
            raise ValueError(f"flip_rate must be in [0, 0.5], got {self.flip_rate}")
        if self.min_statements < 0:
            raise ValueError(f"min_statements must be >= 0, got {self.min_statements}")
        if self.simulations < 1:
            raise ValueError(f"simulations must be >= 1, got {self.simulations}")
        if self.max_invalid_rows < 0:
            raise ValueError(f"max_invalid_rows must be >= 0, got {self.max_invalid_rows}")

    @property
    def gates_samples(self) -> bool:
        """Whether every sample is gated (``per_sample`` or ``strict``)."""
        return self.per_sample or self.strict


@dataclass(frozen=True)
class RunCoverage:
    """How much of a stored run's input was judged: what a gate needs to refuse a partial run.

    Built from the store (``RunStore.coverage(run_id)``); the gate's rule is
    :func:`partial_run_reasons`.

    Attributes:
        run_id: The run.
        status: The store's status: ``finished``, ``interrupted``, ``failed`` or ``running``.
        n_judged: Input rows with a stored result (a row counts once, whatever its repeats).
        n_rows: Rows the input held when the run started, valid and invalid (``RunSpec.n_rows``);
            ``None`` when the run did not record it (stored by an older assay, or a pytest
            session cut short).
        n_invalid: Input rows that were invalid and never judged.
        invalid_lines: Their lines (all of them, or the first few when fewer are known).
        resumable: Whether ``assay run --resume`` can continue the run (a pytest session cannot).
        invalid_tests: For a pytest session's run, which has no lines: the tests whose
            samples were invalid, named in place of lines.
    """

    run_id: str
    status: str
    n_judged: int
    n_rows: int | None = None
    n_invalid: int = 0
    invalid_lines: tuple[int, ...] = ()
    resumable: bool = True
    invalid_tests: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        """Whether the run ran to its end."""
        return self.status == "finished"

    @property
    def n_never_judged(self) -> int | None:
        """Rows neither judged nor invalid: what an unfinished run left out (``None``: the input's size is unknown)."""
        if self.n_rows is None:
            return None
        return max(0, self.n_rows - self.n_judged - self.n_invalid)


_LINES_SHOWN = 10


def _lines(run: RunCoverage, n: int) -> str:
    """Where the invalid rows are: `` (lines 9, 11)``, or the tests of a pytest session (which has no lines)."""
    places: Sequence[object] = run.invalid_tests or run.invalid_lines
    shown = ", ".join(str(place) for place in places[:_LINES_SHOWN])
    if not shown:
        return ""
    more = f", … ({n} in all)" if n > min(len(places), _LINES_SHOWN) else ""
    unit = "test" if run.invalid_tests else "line"
    return f" ({unit if n == 1 else unit + 's'} {shown}{more})"


def _rows(n: int) -> str:
    return f"{n} row{'s' if n != 1 else ''}"


def _unfinished(run: RunCoverage, allowed: bool) -> str | None:
    """Why a run that is not ``finished`` is partial: its rows judged and never judged, and what to do."""
    if run.finished:
        return None
    if run.n_rows is None:
        counts = f"{_rows(run.n_judged)} judged; the input's size was not recorded"
    else:
        counts = f"{run.n_judged} of {_rows(run.n_rows)} judged, {run.n_never_judged} never judged"
        if run.n_invalid:
            counts += f", {run.n_invalid} invalid"
    resume = f"resume it with 'assay run --resume {run.run_id}'" if run.resumable else "run it again"
    state, advice = {
        "interrupted": ("is interrupted", resume),
        "failed": ("failed (an error stopped it)", resume),
        "running": (
            "is still running (or its process died before it could say so)",
            f"let it finish (if its process is gone, {resume})",
        ),
    }.get(run.status, (f"is {run.status}, not finished", resume))
    return f"run {run.run_id} {state}: {counts}; {advice}{'' if allowed else ', or pass --allow-partial'}"


def _invalid(run: RunCoverage, max_invalid_rows: int) -> str | None:
    """Why a run with more invalid rows than tolerated is partial."""
    n = run.n_invalid
    if n <= max_invalid_rows:
        return None
    were = "input row was" if n == 1 else "input rows were"
    limit = f" (the limit is {max_invalid_rows})" if max_invalid_rows else ""
    return (
        f"{n} {were} invalid{_lines(run, n)} and not judged{limit}; fix {'it' if n == 1 else 'them'} "
        f"and run again, or pass --max-invalid-rows {n}"
    )


def partial_run_reasons(run: RunCoverage, policy: GatePolicy | None = None) -> tuple[str, ...]:
    """Why ``run`` is not the whole evaluation (empty: it is), each reason with its counts and what to do.

    A run that is not ``finished`` (interrupted, failed, still running): how many rows it
    judged of how many, and how many it never judged (or that the input's size was not
    recorded). More invalid input rows than ``policy.max_invalid_rows`` (default 0): how
    many, on which lines. The option names are ``assay gate``'s (:class:`GatePolicy`'s
    ``allow_partial`` and ``max_invalid_rows``). Whether a gate refuses the run is
    :func:`refuses_partial_run`.
    """
    policy = policy or GatePolicy()
    reasons = (_unfinished(run, policy.allow_partial), _invalid(run, policy.max_invalid_rows))
    return tuple(reason for reason in reasons if reason)


def refuses_partial_run(run: RunCoverage, policy: GatePolicy | None = None) -> bool:
    """Whether a gate under ``policy`` refuses ``run`` (its outcome is ``incomplete``, whatever was judged).

    It does when the run is not finished (unless ``allow_partial``) or has more invalid
    rows than ``max_invalid_rows`` (``allow_partial`` does not admit those: only the
    option named for them does).
    """
    policy = policy or GatePolicy()
    return (not run.finished and not policy.allow_partial) or run.n_invalid > policy.max_invalid_rows


def _errors(report: RepeatReport, run: RunCoverage | None) -> tuple[str, ...]:
    """Why results that are errors (:data:`~assay._scores.ERROR_REASONS`) refuse the gate, naming them; or ``()``.

    An error is not what the judge said of the sample: the judge could not be asked, or
    assay raised. No option tolerates it (``--allow-partial`` and ``--max-unscored`` do
    not): the sample must be judged again.
    """
    found = [
        f"line {sample.line}: {score.unscored_reason}" + (f" — {_one_line(score.detail)}" if score.detail else "")
        for sample in report.samples
        for score in sample.scores
        if score.is_error
    ]
    if not found:
        return ()
    n = len(found)
    shown = "; ".join(found[:_LINES_SHOWN]) + (f"; … ({n} in all)" if n > _LINES_SHOWN else "")
    again = (
        f"judge {'it' if n == 1 else 'them'} again with 'assay run --resume {run.run_id}'"
        if run is not None and run.resumable
        else "run it again"
    )
    were = "result of" if n == 1 else "results of"
    return (f"{n} {were} {report.metric} {'is an error' if n == 1 else 'are errors'}, not verdicts ({shown}); {again}",)


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _tolerated_rows(run: RunCoverage, max_invalid_rows: int) -> str | None:
    """The note for invalid rows within ``max_invalid_rows``: tolerated, never silent."""
    n = run.n_invalid
    if not n or n > max_invalid_rows:
        return None
    were = "input row was" if n == 1 else "input rows were"
    return (
        f"{n} {were} invalid{_lines(run, n)} and not judged: tolerated by --max-invalid-rows "
        f"{max_invalid_rows}; the gate covers the {_rows(run.n_judged)} judged"
    )


@dataclass(frozen=True)
class Sinker:
    """A statement that counted against a sample.

    Attributes:
        subject: The statement (or criterion) text.
        reason: The judge's reason (from the first repeat in which it failed).
        failed: Repeats in which it was judged unsupported (or FAIL).
        repeats: Scored repeats of the sample.
    """

    subject: str
    reason: str
    failed: int
    repeats: int


@dataclass(frozen=True)
class SampleGate:
    """One sample under the gate.

    Attributes:
        id: Sample id.
        line: Input row.
        score: Mean over scored repeats (NaN if unscored in every repeat).
        n_statements: Statements in its scored repeats (fewest over repeats).
        passed: The observed outcome: the majority of its scored repeats pass.
        p_pass: P(the sample passes) (from repeats, or from the binomial model).
        interval: Wilson interval of ``p_pass`` when it comes from repeats.
        stability: With repeats, :func:`classify` of ``p_pass``; for a single run, the
            observed outcome (``stable_pass`` or ``stable_fail``): nothing flaked where
            nothing was repeated.
        why: Why it fails (below threshold, unsupported statement, too few statements).
        sinkers: The statements that sank it, most often failing first.
        unscored: The unscored repeats' reasons.
    """

    id: str
    line: int
    score: float
    n_statements: int
    passed: bool
    p_pass: float
    interval: tuple[float, float] | None
    stability: Stability
    why: str
    sinkers: tuple[Sinker, ...]
    unscored: tuple[str, ...]

    @property
    def is_scored(self) -> bool:
        """Whether any repeat of the sample is scored."""
        return not math.isnan(self.score)


@dataclass(frozen=True)
class GateResult:
    """A gate's verdict with its evidence.

    Attributes:
        metric: The gated metric.
        policy: The policy applied.
        outcome: ``pass`` or ``fail``: the observed outcome (with repeats: every repeat
            agrees and the outcome recurs with P >= 1 - max_flake); ``flaky``: repeats
            disagree, or the observed outcome recurs with P < 1 - max_flake;
            ``unscored``: unscored share above ``max_unscored``, or nothing scored; or
            ``incomplete``: the run is not the whole evaluation (``partial``) and the
            policy does not ``allow_partial``, whatever its judged rows show.
        observed_pass: What this run shows (per-sample: every sample's observed outcome).
        p_pass: P(the gate passes on a rerun): from the repeats' scores, or for a single
            run the binomial model's estimate.
        method: ``repeats`` or ``binomial`` (a single run; the noise model estimates P).
        flip_rate: ε used by the binomial model and the recommendation.
        flip_rate_source: ``measured``, ``given`` or ``default``; ``no judge call`` (ε = 0)
            when no scored result of the metric came from a judge call (state match,
            tool-call accuracy, retrieval measures): computed verdicts cannot flip.
        mean: The run's mean (per-sample means averaged).
        ci: Its bootstrap CI.
        samples: Every sample's gate.
        unscored_share: Unscored (sample, repeat) results / all results.
        n_repeats: Repeats in the run.
        notes: Things a reader should know (assumptions, defaults used, how P(pass) was
            computed), the ``caveats`` among them.
        repeat_passes: Per repeat index (ascending), whether the gate passes on that
            repeat's results alone (empty for a single run).
        partial: Why the run is not the whole evaluation (:func:`partial_run_reasons`):
            the outcome is then ``incomplete`` (:func:`refuses_partial_run`), unless the
            policy allows it (``allow_partial``, for a run that is not finished).
        coverage: The run's coverage the gate was given (``None``: not checked).
        untrusted: Why the metric's judge is not trusted to gate (its measured agreement's CI
            reaches chance), or ``None``. The outcome is then ``untrusted`` unless the policy
            allows it (``allow_untrusted_judge``), or nothing was scored (``unscored``).
        caveats: The notes that bear on what the verdict is worth, not on how it was
            computed: more than one model answered the judge's calls, invalid rows were
            tolerated, samples had too few statements. A short gate output shows these
            and leaves the other notes to ``assay gate --explain``.
    """

    metric: str
    policy: GatePolicy
    outcome: GateOutcome
    observed_pass: bool
    p_pass: float
    method: Literal["repeats", "binomial"]
    flip_rate: float
    flip_rate_source: Literal["measured", "given", "default", "no judge call"]
    mean: float
    ci: tuple[float, float]
    samples: tuple[SampleGate, ...]
    unscored_share: float
    n_repeats: int
    notes: tuple[str, ...]
    repeat_passes: tuple[bool, ...] = ()
    partial: tuple[str, ...] = ()
    coverage: RunCoverage | None = None
    untrusted: str | None = None
    caveats: tuple[str, ...] = ()

    @property
    def nothing_scored(self) -> bool:
        """Whether no sample of the metric was scored: the run shows no outcome, only unscored reasons."""
        return not any(s.is_scored for s in self.samples)

    @property
    def observed(self) -> Literal["pass", "fail"] | None:
        """What the scored results show (``observed_pass`` as a word), or ``None`` when nothing was scored.

        Every door words it from here: a metric unscored in every sample has observed
        nothing, and saying "observed fail" of it (as ``observed_pass`` is ``False``) read as
        a verdict on the system.
        """
        if self.nothing_scored:
            return None
        return "pass" if self.observed_pass else "fail"

    @property
    def shaky(self) -> bool:
        """Whether the judge's noise could change this outcome: it is flaky, or a rerun reverses it with P > max_flake.

        Only a verdict from a judge's calls can be shaky (computed verdicts do not flip), and
        only a ``pass`` or ``fail`` (or ``flaky``) one: the statement-count advice is then part of
        the verdict, not a detail (``assay gate`` shows it without ``--explain``).
        """
        if self.outcome == "flaky":
            return True
        if self.outcome not in ("pass", "fail") or self.flip_rate_source == "no judge call":
            return False
        return not math.isnan(self.p_pass) and self.reversal_probability > self.policy.max_flake + _EPS

    @property
    def gated_partial(self) -> bool:
        """Whether this verdict was given on a partial run because the policy allowed it."""
        return bool(self.partial) and self.outcome != "incomplete"

    @property
    def flake_probability(self) -> float:
        """``min(P(pass), 1 - P(pass))``."""
        return flake_probability(self.p_pass)

    @property
    def reversal_probability(self) -> float:
        """P(a rerun reverses the observed outcome): ``1 - p_pass`` after a pass, ``p_pass`` after a fail."""
        return 1.0 - self.p_pass if self.observed_pass else self.p_pass

    @property
    def stability(self) -> Stability:
        """Stable pass, stable fail or flaky.

        With repeats, :func:`classify` of ``p_pass`` at the policy's ``max_flake``; for a
        single run, the observed outcome (it decides on what it observed: nothing flaked).
        """
        if self.method == "binomial":
            return _observed(self.observed_pass)
        return classify(self.p_pass, self.policy.max_flake)

    @property
    def failing(self) -> tuple[SampleGate, ...]:
        """Scored samples whose observed outcome is a fail, lowest score first."""
        return tuple(sorted((s for s in self.samples if s.is_scored and not s.passed), key=lambda s: s.score))

    @property
    def unscored_samples(self) -> tuple[SampleGate, ...]:
        """Samples unscored in every repeat."""
        return tuple(s for s in self.samples if not s.is_scored)


def _binary(value: int | str) -> int | None:
    if value in (1, "PASS"):
        return 1
    if value in (0, "FAIL"):
        return 0
    return None


def _repeat_passes(score: Score, policy: GatePolicy) -> tuple[bool, str]:
    n = len(score.verdicts)
    if policy.min_statements and n < policy.min_statements:
        return False, f"{n} statement{'s' if n != 1 else ''}, fewer than the minimum {policy.min_statements}"
    if policy.strict and score.failing:
        return False, "an unsupported statement (strict)"
    if score.value < policy.threshold - _EPS:
        # No verdict against it (an extra tool call lowers tool_call_accuracy): its explanation says why.
        reason = f": {score.explanation}" if not score.failing and score.explanation else ""
        return False, f"score below {policy.threshold:g}{reason}"
    return True, ""


def _sinkers(failing_scores: Sequence[Score], scored: Sequence[Score]) -> tuple[Sinker, ...]:
    """The unsupported statements of the repeats that failed, each with how often it failed over every repeat.

    A statement is listed when it failed in a failing repeat; ``failed`` counts the scored
    repeats (passing ones too) in which it was judged unsupported, as its label says.
    """
    found: dict[str, Sinker] = {}
    for score in failing_scores:
        for v in score.failing:
            found.setdefault(statement_key(v.subject), Sinker(v.subject, v.reason, 0, len(scored)))
    counts = {key: sum(key in {statement_key(v.subject) for v in s.failing} for s in scored) for key in found}
    sinkers = (replace(sinker, failed=counts[key]) for key, sinker in found.items())
    return tuple(sorted(sinkers, key=lambda s: -s.failed))


def _model_bits(score: Score) -> list[int] | None:
    """The verdicts as 0/1, or None when the score is not (verdicts that are 1) / (verdicts).

    None too when no judge call made the score: its verdicts were computed (a state match,
    a verbatim sentence) and a rerun gives them again, so the noise model must not flip them.
    """
    if not score.all_calls:
        return None
    bits = [_binary(v.value) for v in score.verdicts]
    clean = [b for b in bits if b is not None]
    if not bits or len(clean) != len(bits) or abs(sum(clean) / len(clean) - score.value) > 1e-6:
        return None
    return clean


def _too_few(sample: SampleRepeats, policy: GatePolicy) -> bool:
    """Whether most scored repeats of the sample have fewer than ``min_statements`` statements."""
    if not policy.min_statements or not sample.n_scored:
        return False
    short = sum(len(s.verdicts) < policy.min_statements for s in sample.scored)
    return short * 2 > sample.n_scored or (sample.n_scored == 1 and short == 1)


def _sample_gate(sample: SampleRepeats, policy: GatePolicy, method: str, flip_rate: float) -> SampleGate:
    scored = sample.scored
    if not scored:
        return SampleGate(
            id=sample.id,
            line=sample.line,
            score=math.nan,
            n_statements=0,
            passed=False,
            p_pass=math.nan,
            interval=None,
            stability="flaky",
            why="unscored",
            sinkers=(),
            unscored=sample.unscored_reasons,
        )
    outcomes = [_repeat_passes(s, policy) for s in scored]
    n_pass = sum(ok for ok, _ in outcomes)
    passed = n_pass * 2 > len(scored) if len(scored) > 1 else outcomes[0][0]
    failing_scores = [s for s, (ok, _) in zip(scored, outcomes, strict=True) if not ok]
    whys = [why for ok, why in outcomes if not ok]
    why = max(set(whys), key=whys.count) if whys else ""
    interval: tuple[float, float] | None = None
    if method == "repeats":
        p_pass = n_pass / len(scored)
        interval = wilson_interval(n_pass, len(scored))
    else:
        score = scored[0]
        bits = _model_bits(score)
        if policy.min_statements and len(score.verdicts) < policy.min_statements:
            p_pass = 0.0
        elif bits is None:
            p_pass = 1.0 if outcomes[0][0] else 0.0
        else:
            pmf = poisson_binomial_pmf([1 - flip_rate if b else flip_rate for b in bits])
            need = len(bits) if policy.strict else min_passing(len(bits), policy.threshold)
            p_pass = float(min(1.0, pmf[need:].sum()))
    return SampleGate(
        id=sample.id,
        line=sample.line,
        score=sample.mean,
        n_statements=min(len(s.verdicts) for s in scored),
        passed=passed,
        p_pass=p_pass,
        interval=interval,
        # A single run decides on what it observed: the binomial estimate never makes a sample flaky.
        stability=classify(p_pass, policy.max_flake) if method == "repeats" else _observed(passed),
        why=why,
        sinkers=_sinkers(failing_scores, scored),
        unscored=sample.unscored_reasons,
    )


def _observed(passed: bool) -> Stability:
    return "stable_pass" if passed else "stable_fail"


def _simulate_run_mean(samples: Sequence[SampleRepeats], policy: GatePolicy, method: str, flip_rate: float) -> float:
    """Share of seeded simulated runs whose mean reaches the threshold (and meets min_statements)."""
    rng = np.random.default_rng(policy.seed)
    sims = policy.simulations
    total = np.zeros(sims, dtype=np.float64)
    ok = np.ones(sims, dtype=bool)
    n = 0
    for sample in samples:
        scored = sample.scored
        if not scored:
            continue
        n += 1
        enough = np.array(
            [not policy.min_statements or len(s.verdicts) >= policy.min_statements for s in scored], dtype=bool
        )
        if method == "repeats" or len(scored) > 1:
            pick = rng.integers(0, len(scored), size=sims)
            total += sample.values[pick]
            ok &= enough[pick]
            continue
        score = scored[0]
        ok &= bool(enough[0])
        bits = _model_bits(score)
        if bits is None:
            total += score.value
            continue
        ones = sum(bits)
        k = rng.binomial(ones, 1 - flip_rate, size=sims) + rng.binomial(len(bits) - ones, flip_rate, size=sims)
        total += k / len(bits)
    if n == 0:
        return math.nan
    return float(np.mean(ok & (total / n >= policy.threshold - _EPS)))


def _repeat_outcomes(samples: Sequence[SampleRepeats], policy: GatePolicy) -> tuple[bool, ...]:
    """Per repeat index, whether the gate passes on that repeat's scored results alone.

    Per-sample gate: every sample scored in the repeat passes it. Run-mean gate: the mean
    over the samples scored in the repeat reaches the threshold and none of them has
    fewer than ``min_statements`` statements. Repeats in which nothing is scored are left out.
    """
    by_repeat: dict[int, list[Score]] = {}
    for sample in samples:
        for repeat, score in zip(sample.repeats, sample.scores, strict=True):
            if score.is_scored:
                by_repeat.setdefault(repeat, []).append(score)
    outcomes = []
    for repeat in sorted(by_repeat):
        scores = by_repeat[repeat]
        if policy.gates_samples:
            outcomes.append(all(_repeat_passes(s, policy)[0] for s in scores))
        else:
            mean = sum(s.value for s in scores) / len(scores)
            enough = not policy.min_statements or all(len(s.verdicts) >= policy.min_statements for s in scores)
            outcomes.append(enough and mean >= policy.threshold - _EPS)
    return tuple(outcomes)


def evaluate_gate(
    report: RepeatReport,
    policy: GatePolicy,
    run: RunCoverage | None = None,
    *,
    untrusted: str | None = None,
    cascade: bool = False,
) -> GateResult:
    """Apply ``policy`` to a run's :class:`RepeatReport` (and, given its :class:`RunCoverage`, to the run).

    Method: ``repeats`` when some sample has 2+ scored repeats, else ``binomial`` with ε
    = ``policy.flip_rate``, else the run's measured flip rate, else
    :data:`DEFAULT_FLIP_RATE` (noted).

    Per-sample gates (``per_sample`` or ``strict``): P(gate) = Π P(sample passes),
    samples being independent. Run-mean gate: P(gate) from a seeded simulation (see the
    module docstring); the observed outcome is ``mean >= threshold`` with every sample
    meeting ``min_statements``.

    Outcome: ``unscored`` if the unscored share exceeds ``max_unscored`` or nothing is
    scored. A single run (``binomial``) then decides on what it observed: ``pass`` or
    ``fail``, with P(pass) as the model's estimate. With repeats: ``pass`` if observed
    pass, every repeat passes and P(pass) >= 1 - max_flake; ``fail`` if observed fail,
    every repeat fails and P(pass) <= max_flake; else ``flaky``.

    ``run`` (``RunStore.coverage(run_id)``): a run that is not finished, or has more invalid
    rows than ``max_invalid_rows``, is ``incomplete`` whatever the rows judged show (the
    verdict they would give stays in ``observed_pass``); with ``allow_partial`` a run that
    is not finished is gated on those rows and the result says so (``gated_partial``).
    Every door that gates a stored run passes it; without it, nothing is known of rows
    never judged and nothing is checked.

    ``untrusted`` (``TrustFigure.untrusted_reason()`` of the metric's judge, when its measured
    agreement's CI reaches chance): the outcome is ``untrusted`` whatever the scores show,
    unless ``allow_untrusted_judge`` (then it is a note). A partial run stays ``incomplete``, and a
    metric with nothing scored ``unscored`` (its judge's agreement spoils no verdict; the reason
    stays in ``untrusted``).

    A metric whose scored results' judge calls were answered by more than one model (a
    proxy that fell back to another model for some) is ``untrusted`` the same way: its
    scores mix judges, so its verdict is no one judge's. Not for a ``cascade`` metric, whose
    levels are judges of its own plan, each verdict kept with the level that decided it.
    """
    notes: list[str] = []
    caveats: list[str] = []
    has_repeats = any(s.n_scored >= 2 for s in report.samples)
    method: Literal["repeats", "binomial"] = "repeats" if has_repeats else "binomial"
    measured = report.flip_rate
    source: Literal["measured", "given", "default", "no judge call"]
    scored_results = [score for sample in report.samples for score in sample.scored]
    judge_free = bool(scored_results) and not any(score.all_calls for score in scored_results)
    mixed = judge_models_note(answered_by(c for score in scored_results for c in score.all_calls))
    if mixed:
        caveats.append(f"{report.metric}: {mixed}")
        if not cascade and untrusted is None:
            untrusted = f"{mixed}, so no one judge's verdict can be read off them"
    if judge_free:
        flip, source = 0.0, "no judge call"
        notes.append(
            f"no scored result of {report.metric} came from a judge call: its verdicts are computed and "
            "cannot flip on a rerun (ε = 0, P(pass) is the observed outcome)"
        )
    elif policy.flip_rate is not None:
        flip, source = policy.flip_rate, "given"
    elif not math.isnan(measured):
        flip, source = measured, "measured"
    else:
        flip, source = DEFAULT_FLIP_RATE, "default"
        notes.append(
            f"no repeats to measure the judge's flip rate: assumed ε = {DEFAULT_FLIP_RATE} "
            "(measure it with 'assay run --repeats 3', or pass --flip-rate)"
        )
    if policy.strict:
        notes.append("strict: any unsupported statement fails its sample")
    samples = tuple(_sample_gate(s, policy, method, flip) for s in report.samples)
    gated = [s for s in samples if s.is_scored]
    if policy.gates_samples:
        observed = all(s.passed for s in gated)
        p_pass = float(np.prod([s.p_pass for s in gated])) if gated else math.nan
        if method == "repeats":
            notes.append("P(pass) per sample is the share of its scored repeats that pass; the gate's is their product")
    else:
        enough = not any(_too_few(s, policy) for s in report.samples)
        if not enough:
            caveats.append(f"some samples have fewer than {policy.min_statements} statements: the gate fails")
        observed = bool(gated) and report.mean >= policy.threshold - _EPS and enough
        p_pass = _simulate_run_mean(report.samples, policy, method, flip)
        if not judge_free:
            notes.append(
                f"P(pass) of the run mean: {policy.simulations:,} simulated runs (seed {policy.seed}), "
                + (
                    "each drawing one scored repeat per sample"
                    if method == "repeats"
                    else "each statement's verdict flipped with probability ε"
                )
            )
    repeat_passes = _repeat_outcomes(report.samples, policy) if method == "repeats" else ()
    if method == "repeats" and report.n_sets_changed:
        notes.append(
            f"statement sets differed across repeats in {report.n_sets_changed} of "
            f"{counted(report.n_compared, 'sample')} "
            f"({report.n_moved_without_flip} moved a score with no verdict flip); P(pass) comes from the "
            "repeats' scores, which include that, while the flip rate counts matched statements only"
        )
    errors = _errors(report, run)
    # Errors are refused below, whatever the budget: they do not spend it.
    n_errors = sum(score.is_error for sample in report.samples for score in sample.scores)
    unscored_share = (report.n_unscored - n_errors) / report.n_records if report.n_records else math.nan
    outcome: GateOutcome
    if not gated or math.isnan(p_pass) or unscored_share > policy.max_unscored + _EPS:
        outcome = "unscored"
    elif method == "binomial":
        outcome = "pass" if observed else "fail"
        if not judge_free:
            notes.append(
                "a single run decides on what it observed; P(pass) is the binomial model's estimate, not a "
                "measurement (measure the judge's noise with 'assay run --repeats 3')"
            )
    elif observed and all(repeat_passes) and p_pass >= 1 - policy.max_flake - _EPS:
        outcome = "pass"
    elif not observed and not any(repeat_passes) and p_pass <= policy.max_flake + _EPS:
        outcome = "fail"
    else:
        outcome = "flaky"
    if untrusted is not None:
        if policy.allow_untrusted_judge:
            notes.append(f"gated on an untrusted judge (allow_untrusted_judge): {untrusted}")
        elif gated:  # nothing scored stays unscored: there is no verdict the judge's agreement could spoil
            outcome = "untrusted"
    partial = (() if run is None else partial_run_reasons(run, policy)) + errors
    if (run is not None and refuses_partial_run(run, policy)) or errors:
        outcome = "incomplete"
    tolerated = _tolerated_rows(run, policy.max_invalid_rows) if run is not None else None
    if tolerated:
        caveats.append(tolerated)
    return GateResult(
        metric=report.metric,
        policy=policy,
        outcome=outcome,
        observed_pass=observed,
        p_pass=p_pass,
        method=method,
        flip_rate=flip,
        flip_rate_source=source,
        mean=report.mean,
        ci=report.ci,
        samples=samples,
        unscored_share=unscored_share,
        n_repeats=report.n_repeats,
        notes=tuple(caveats + notes),
        repeat_passes=repeat_passes,
        partial=partial,
        coverage=run,
        untrusted=untrusted,
        caveats=tuple(caveats),
    )


_SEVERITY: dict[GateOutcome, int] = {"pass": 0, "flaky": 1, "unscored": 2, "untrusted": 3, "incomplete": 4, "fail": 5}


def combined_outcome(outcomes: Sequence[GateOutcome]) -> GateOutcome:
    """The outcome of several gates on one run (one per metric): the worst of them.

    Worst first: ``fail`` (a metric was seen to fail), ``incomplete`` (the run is partial),
    ``untrusted`` (a metric's judge agrees with people no better than chance),
    ``unscored`` (a metric could not be decided), ``flaky``, ``pass``. No gate at all is
    ``unscored``: nothing passed.
    """
    if not outcomes:
        return "unscored"
    return max(outcomes, key=lambda outcome: _SEVERITY[outcome])


def is_pass_fail(report: RepeatReport) -> bool:
    """Whether the metric is pass/fail: every value 0 or 1, and not a share of statements that happened to be.

    A pass/fail metric (a grader's PASS/FAIL, answer relevancy) has a run mean that is the
    share of samples that pass, and no statement count that could make a gate stable:
    gates and summaries word it as a pass rate. Told from the scores alone: every scored
    value is 0 or 1, and either its verdicts are labels (``PASS``/``FAIL``), or some
    score's verdicts disagree while its value is 0 or 1 (so the value is not their share).
    Faithfulness whose answers were all wholly supported or wholly not (one-statement
    answers, say) is still a share of statements and keeps the statement-count advice,
    which is exactly what such a run needs.
    """
    scores = [score for sample in report.samples for score in sample.scored]
    if not scores or any(score.value not in (0.0, 1.0) for score in scores):
        return False
    verdicts = [v for score in scores for v in score.verdicts]
    if verdicts and all(isinstance(v.value, str) for v in verdicts):
        return True
    return any(len({_binary(v.value) for v in score.verdicts}) > 1 for score in scores)
