"""Repeat-run statistics: per-sample score spread, per-statement flip rates, decomposition variation.

Pure functions over stored results: the input is the record dicts that
:meth:`assay.run.RunStore.records` yields (``SampleResult.to_record()`` gives the same
shape in process). See ``docs/design/variance.md`` for the definitions.

Flip rate (one definition, used everywhere): over the R scored repeats in which a
statement was judged, the share of repeats whose verdict differs from the statement's
modal (most common) verdict, ``1 - max_v count(v) / R``. For a binary verdict with k ones
that is ``min(k, R - k) / R``: 0 is stable, 0.5 the most a binary verdict can flip. It is
the plug-in estimate of ε, the per-verdict flip probability of the binomial noise model
(:mod:`assay.analysis._gates`); with few repeats it is biased low (a statement flipping
with ε = 0.1 shows no flip in 3 repeats 73% of the time).

Flip rates see only statements present in every repeat. When an LLM splits the answer
differently from one repeat to the next, the score can move with no verdict flipping;
that is counted on its own (:attr:`RepeatReport.n_sets_changed`,
:attr:`RepeatReport.n_moved_without_flip`), and gates take P(pass) from the repeats'
scores, which carry both kinds of noise. The run's CI is :func:`~assay.analysis.bootstrap_mean_ci`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from assay._scores import Score, Verdict
from assay.analysis._stats import DEFAULT_BOOTSTRAP, bootstrap_mean_ci

__all__ = [
    "RepeatReport",
    "SampleRepeats",
    "StatementFlips",
    "analyze_repeats",
    "flip_rate",
    "metrics_in",
    "sample_repeats",
    "statement_key",
]

VerdictValue = int | str


def statement_key(text: str) -> str:
    """How statements are matched across repeats: case-folded, whitespace collapsed."""
    return " ".join(text.split()).casefold()


def flip_rate(verdicts: Sequence[VerdictValue]) -> float:
    """Share of ``verdicts`` that differ from their modal verdict: ``1 - max count / len``.

    ``flip_rate([1, 1, 0]) == 1/3``; ``flip_rate([1, 0]) == 0.5``; NaN for no verdicts.
    """
    if not verdicts:
        return math.nan
    return 1.0 - max(Counter(verdicts).values()) / len(verdicts)


@dataclass(frozen=True)
class StatementFlips:
    """One statement (or criterion) matched by text across a sample's scored repeats.

    Attributes:
        subject: The statement's text as first seen.
        verdicts: Its verdict in each scored repeat, in repeat order.
        reasons: The judge's reason in each scored repeat.
    """

    subject: str
    verdicts: tuple[VerdictValue, ...]
    reasons: tuple[str, ...]

    @property
    def flip_rate(self) -> float:
        """Share of repeats disagreeing with the modal verdict (see the module docstring)."""
        return flip_rate(self.verdicts)

    @property
    def flipped(self) -> bool:
        """Whether the verdicts are not all the same."""
        return len(set(self.verdicts)) > 1

    @property
    def minority(self) -> int:
        """Number of repeats disagreeing with the modal verdict."""
        return len(self.verdicts) - max(Counter(self.verdicts).values()) if self.verdicts else 0


@dataclass(frozen=True)
class SampleRepeats:
    """One sample's results over all its repeats, for one metric.

    Attributes:
        id: The sample id.
        line: The sample's row in the input.
        repeats: The repeat indices stored for it, ascending.
        scores: The score of each repeat (aligned with ``repeats``).
        statements: Statements present in every scored repeat, with their verdicts.
        set_change_share: Share of scored repeats whose statement set differs from the
            most common set (0 when statement extraction is stable).
    """

    id: str
    line: int
    repeats: tuple[int, ...]
    scores: tuple[Score, ...]
    statements: tuple[StatementFlips, ...] = ()
    set_change_share: float = 0.0

    @property
    def scored(self) -> tuple[Score, ...]:
        """The scored repeats' scores."""
        return tuple(s for s in self.scores if s.is_scored)

    @property
    def values(self) -> npt.NDArray[np.float64]:
        """The scored repeats' values."""
        return np.array([s.value for s in self.scored], dtype=np.float64)

    @property
    def n_scored(self) -> int:
        """Scored repeats."""
        return len(self.scored)

    @property
    def n_unscored(self) -> int:
        """Unscored repeats."""
        return len(self.scores) - self.n_scored

    @property
    def unscored_reasons(self) -> tuple[str, ...]:
        """The unscored repeats' reasons (with detail when there is one)."""
        out = []
        for s in self.scores:
            if s.unscored_reason is not None:
                out.append(s.unscored_reason.value + (f": {s.detail}" if s.detail else ""))
        return tuple(out)

    @property
    def mean(self) -> float:
        """Mean over scored repeats (NaN if none)."""
        return float(self.values.mean()) if self.n_scored else math.nan

    @property
    def std(self) -> float:
        """Sample standard deviation (ddof=1) over scored repeats; NaN with fewer than 2."""
        return float(self.values.std(ddof=1)) if self.n_scored >= 2 else math.nan

    @property
    def min(self) -> float:
        """Lowest scored value (NaN if none)."""
        return float(self.values.min()) if self.n_scored else math.nan

    @property
    def max(self) -> float:
        """Highest scored value (NaN if none)."""
        return float(self.values.max()) if self.n_scored else math.nan

    @property
    def flip_rates(self) -> dict[str, float]:
        """Statement text -> flip rate, over statements present in every scored repeat."""
        return {s.subject: s.flip_rate for s in self.statements}

    @property
    def unstable(self) -> bool:
        """Whether any statement's verdict flipped across repeats."""
        return any(s.flipped for s in self.statements)

    @property
    def sets_changed(self) -> bool:
        """Whether statement extraction gave different statement sets across scored repeats."""
        return self.set_change_share > 0

    @property
    def score_moved(self) -> bool:
        """Whether the score differs across scored repeats (from flips, decomposition, or both)."""
        return self.n_scored >= 2 and self.max > self.min


@dataclass(frozen=True)
class RepeatReport:
    """A run's repeat statistics for one metric.

    Attributes:
        metric: The metric's name.
        samples: Per-sample statistics, in input order.
        mean: Mean over samples of each sample's mean over its scored repeats.
        ci: Percentile bootstrap CI of ``mean`` (samples resampled, not repeats).
        confidence: The CI's coverage.
        seed: The bootstrap seed.
        n_records: Stored (sample, repeat) results of the metric.
        n_unscored: Of those, how many are unscored.
    """

    metric: str
    samples: tuple[SampleRepeats, ...]
    mean: float
    ci: tuple[float, float]
    confidence: float
    seed: int
    n_records: int
    n_unscored: int

    @property
    def n_repeats(self) -> int:
        """The most repeats any sample has."""
        return max((len(s.repeats) for s in self.samples), default=0)

    @property
    def unscored_share(self) -> float:
        """Unscored (sample, repeat) results / all results (NaN for an empty run)."""
        return self.n_unscored / self.n_records if self.n_records else math.nan

    @property
    def unscored_by_reason(self) -> dict[str, int]:
        """Unscored (sample, repeat) results per machine-readable reason, most frequent first."""
        counts = Counter(
            s.unscored_reason.value for sample in self.samples for s in sample.scores if s.unscored_reason is not None
        )
        return dict(counts.most_common())

    @property
    def pending(self) -> tuple[int, int]:
        """(questions, results): what waits for a person (``needs_review``), in no mean until answered."""
        waiting = [len(s.pending) for sample in self.samples for s in sample.scores if s.pending]
        return sum(waiting), len(waiting)

    @property
    def unstable_share(self) -> float:
        """Share of samples with 2+ scored repeats in which any statement flipped (NaN if none)."""
        eligible = [s for s in self.samples if s.n_scored >= 2]
        return sum(s.unstable for s in eligible) / len(eligible) if eligible else math.nan

    @property
    def set_change_share(self) -> float:
        """Over samples with 2+ scored repeats: repeats whose statement set differs from the sample's modal set."""
        eligible = [s for s in self.samples if s.n_scored >= 2]
        total = sum(s.n_scored for s in eligible)
        changed = sum(s.set_change_share * s.n_scored for s in eligible)
        return changed / total if total else math.nan

    @property
    def n_compared(self) -> int:
        """Samples with 2+ scored repeats: the support of every across-repeat figure."""
        return sum(s.n_scored >= 2 for s in self.samples)

    @property
    def n_sets_changed(self) -> int:
        """Decomposition variation: samples whose statement sets differ across their scored repeats."""
        return sum(s.n_scored >= 2 and s.sets_changed for s in self.samples)

    @property
    def n_scores_moved(self) -> int:
        """Samples whose score differs across their scored repeats."""
        return sum(s.score_moved for s in self.samples)

    @property
    def n_moved_without_flip(self) -> int:
        """Samples whose score moved although no matched statement's verdict flipped: the decomposition moved it."""
        return sum(s.score_moved and not s.unstable for s in self.samples)

    @property
    def flip_rate(self) -> float:
        """Pooled flip rate: minority verdicts / verdicts, over every matched statement (NaN if none)."""
        statements = [st for s in self.samples if s.n_scored >= 2 for st in s.statements]
        total = sum(len(st.verdicts) for st in statements)
        return sum(st.minority for st in statements) / total if total else math.nan

    @property
    def n_statements_compared(self) -> int:
        """Statements matched across 2+ scored repeats (the flip rate's support)."""
        return sum(len(s.statements) for s in self.samples if s.n_scored >= 2)


def metrics_in(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The metric names present in ``records``, in first-seen order."""
    seen: dict[str, None] = {}
    for record in records:
        for name in record.get("scores", {}):
            seen.setdefault(name, None)
    return list(seen)


def _match_statements(scored: Sequence[Score]) -> tuple[tuple[StatementFlips, ...], float]:
    if not scored:
        return (), 0.0
    keyed: list[dict[str, Verdict]] = []
    order: list[str] = []
    for i, score in enumerate(scored):
        seen: Counter[str] = Counter()
        by_key: dict[str, Verdict] = {}
        for v in score.verdicts:
            base = statement_key(v.subject)
            seen[base] += 1
            key = base if seen[base] == 1 else f"{base}#{seen[base]}"
            by_key[key] = v
            if i == 0:
                order.append(key)
        keyed.append(by_key)
    sets = Counter(frozenset(k) for k in keyed)
    set_change = (len(keyed) - max(sets.values())) / len(keyed)
    common = [k for k in order if all(k in by_key for by_key in keyed)]
    statements = tuple(
        StatementFlips(
            subject=keyed[0][k].subject,
            verdicts=tuple(by_key[k].value for by_key in keyed),
            reasons=tuple(by_key[k].reason for by_key in keyed),
        )
        for k in common
    )
    return statements, set_change


def sample_repeats(sample_id: str, line: int, by_repeat: Mapping[int, Score]) -> SampleRepeats:
    """Build one sample's :class:`SampleRepeats` from its scores keyed by repeat index."""
    repeats = tuple(sorted(by_repeat))
    scores = tuple(by_repeat[r] for r in repeats)
    statements, set_change = _match_statements([s for s in scores if s.is_scored])
    return SampleRepeats(
        id=sample_id, line=line, repeats=repeats, scores=scores, statements=statements, set_change_share=set_change
    )


def analyze_repeats(
    records: Iterable[Mapping[str, Any]],
    metric: str,
    *,
    confidence: float = 0.95,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> RepeatReport:
    """Per-sample spread and flip rates, and the run's mean with a bootstrap CI, for ``metric``.

    Records are grouped by (line, id); each sample's repeats are averaged first, then the
    per-sample means are averaged (each sample weighs the same whatever its number of
    scored repeats) and bootstrapped over samples (:func:`bootstrap_mean_ci`).

    Args:
        records: Stored records (``RunStore.records(run_id)`` or ``SampleResult.to_record()``).
        metric: The metric to analyse.
        confidence: The CI's coverage.
        n_boot: Bootstrap resamples.
        seed: Bootstrap seed.

    Raises:
        KeyError: no record has ``metric``.
    """
    grouped: dict[tuple[int, str], dict[int, Score]] = {}
    n_records = 0
    n_unscored = 0
    for record in records:
        raw = record.get("scores", {}).get(metric)
        if raw is None:
            continue
        score = Score.model_validate(raw)
        key = (int(record.get("line", 0)), str(record.get("id", "")))
        grouped.setdefault(key, {})[int(record.get("repeat", 0))] = score
        n_records += 1
        n_unscored += not score.is_scored
    if not grouped:
        raise KeyError(metric)
    samples = tuple(sample_repeats(sid, line, grouped[(line, sid)]) for line, sid in sorted(grouped))
    means = np.array([s.mean for s in samples if s.n_scored], dtype=np.float64)
    mean = float(means.mean()) if means.size else math.nan
    ci = bootstrap_mean_ci(means, confidence=confidence, n_boot=n_boot, seed=seed)
    return RepeatReport(
        metric=metric,
        samples=samples,
        mean=mean,
        ci=ci,
        confidence=confidence,
        seed=seed,
        n_records=n_records,
        n_unscored=n_unscored,
    )
