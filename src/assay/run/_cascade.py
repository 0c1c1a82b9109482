"""A cascade run's plan (thresholds chosen on stored calibrations) and its summary lines.

``assay run DATA --judge local --escalate JUDGE ... [--escalate review] --agreement 0.9``:
before any judge call, :func:`plan_escalation` reads, for every judge level with
probabilities, the stored calibration of the metric by that judge with the run's settings
(``assay calibrate FILE --judge X``; matched by judge identity and settings fingerprint, as
:mod:`assay.run._trust` matches a trust figure: one measured with other settings is never
used), pairs the levels' verdicts item by item (the same labelled file, matched by id) and
chooses each level's thresholds by fixed-sequence testing
(:func:`assay.analysis.plan_cascade`). Labels that cannot support the target refuse the run,
with the reason, the calibration used and what would help. The plan is stored with the run
(:attr:`PlannedCascade.record`) so a resume can be checked against it and the summary can
state the guarantee with the labels it rests on (:func:`cascade_lines`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay._scores import Score
from assay.analysis._selective import CascadePlan, LevelThresholds, min_labels, plan_cascade
from assay.errors import ConfigError
from assay.metrics._base import Metric
from assay.metrics._escalate import EscalatingMetric, Escalation, JudgeLevel, p_yes, verdict_bit
from assay.models import ChoiceScorer, JudgeModel
from assay.models._confidence import judge_name
from assay.run._cost import PriceTable
from assay.run._judge_record import JudgeRecord
from assay.run._store import RunStore
from assay.run._trust import GUARANTEE_REACH, _describes, _elsewhere

__all__ = [
    "DEFAULT_DELTA",
    "REVIEW",
    "PlannedCascade",
    "cascade_levels",
    "cascade_lines",
    "cascade_option",
    "escalation_refusal",
    "plan_escalation",
    "prepare_cascade",
]

REVIEW = "review"
"""The level name that sends what no judge was sure of to people (``assay review``)."""
DEFAULT_DELTA = 0.1
"""The chance the guarantee may fail (``--delta``): agreement >= the target with probability 90%."""

CALIBRATED_SCORE = {"faithfulness": "statement_verifier"}
"""The per-item score a calibration stores for a metric, where it is not the metric's own name
(grounding items: one statement verdict with its P, judged by the verifier)."""
_VALUE = {1: "supported", 0: "unsupported"}


def escalation_refusal(metrics: Iterable[Metric]) -> str | None:
    """Why these metrics cannot run in a cascade (``None``: all of them can), naming each that cannot."""
    problems = []
    for metric in metrics:
        if not isinstance(metric, EscalatingMetric):
            problems.append(
                f"{metric.name} cannot escalate (its verdicts are not single questions a next judge can take alone)"
            )
        elif (problem := metric.escalation_problem()) is not None:
            problems.append(problem)
    if not problems:
        return None
    return (
        "; ".join(problems)
        + ": a cascade run judges only metrics that escalate (faithfulness); run the others without --escalate"
    )


@dataclass(frozen=True)
class _Calibrated:
    """One level's stored calibration: per item id, the label, the verdict and its P(1)."""

    run_id: str
    dataset: str
    n: int
    items: dict[str, tuple[int, int, float]]
    unscored: tuple[str, ...]


def _calibration_of(store: RunStore, metric: Metric, judge: JudgeModel, name: str) -> _Calibrated:
    spec = metric.spec()
    record = JudgeRecord.of(judge, [spec])
    stored = store.calibrations(metric.name, record.identity)
    matching = [r for r in stored if _describes(r, spec) and r.get("run_id")]
    if not matching:
        elsewhere = _elsewhere(spec, [r for r in stored if not _describes(r, spec)])
        raise ConfigError(
            f"no calibration of {metric.name} by {name} ({judge.model_id}) with this run's settings in {store.path}, "
            f"so no threshold can be chosen for it: measure it with `assay calibrate LABELS.jsonl --judge {name}`"
            + (f" ({elsewhere})" if elsewhere else "")
        )
    best = max(range(len(matching)), key=lambda i: (int(matching[i].get("n") or 0), -i))
    chosen = matching[best]
    run_id = str(chosen["run_id"])
    items: dict[str, tuple[int, int, float]] = {}
    unscored: list[str] = []
    for result in store.results(run_id):
        score = result.scores.get(CALIBRATED_SCORE.get(metric.name, metric.name))
        label = verdict_bit(result.sample.metadata.get("label"))
        if label is None:
            continue
        verdict = score.verdicts[0] if score is not None and score.is_scored and score.verdicts else None
        p = None if verdict is None else p_yes(verdict)
        bit = None if verdict is None else verdict_bit(verdict.value)
        if p is None or bit is None:
            unscored.append(result.sample.id)
            continue
        items[result.sample.id] = (label, bit, p)
    dataset = store.spec(run_id).dataset or str(chosen.get("dataset") or "(unnamed)")
    return _Calibrated(run_id, dataset, len(items), items, tuple(unscored))


@dataclass(frozen=True)
class PlannedCascade:
    """A metric's cascade plan: thresholds per judge level and what they rest on.

    Attributes:
        metric: The metric's name.
        plan: The thresholds (:class:`~assay.analysis.CascadePlan`) of the levels with probabilities.
        names: Every judge level as named (``local``, ``openai:gpt-4o-mini``).
        review: Whether people answer what no judge kept.
        record: The JSON-ready plan stored with the run (thresholds, alpha, delta, the
            calibration runs and label counts).
    """

    metric: str
    plan: CascadePlan | None
    names: tuple[str, ...]
    review: bool
    record: dict[str, Any]

    def escalation(self, judges: Sequence[JudgeModel]) -> Escalation:
        """The :class:`~assay.metrics.Escalation` for ``judges`` (each level's stacked judge, in order)."""
        levels = []
        for k, (judge, name) in enumerate(zip(judges, self.names, strict=True)):
            planned = self.plan.levels[k] if self.plan is not None and k < len(self.plan.levels) else None
            thresholds = None if planned is None else {v: s.threshold for v, s in planned.sides.items()}
            levels.append(JudgeLevel(judge, thresholds, name))
        return Escalation(tuple(levels), review=self.review)

    def lines(self) -> list[str]:
        """The plan, for the start of a run: the target, the labels, each level's thresholds."""
        return plan_lines(self.record)


def _side_text(value: int, side: Mapping[str, Any]) -> str:
    what = _VALUE[value]
    if side.get("threshold") is None:
        return f"{what}: always escalates ({side.get('reason')})"
    return f"{what} kept at confidence >= {side['threshold']:.3f} ({side['kept']} of {side['labels']} labelled kept)"


def plan_lines(record: Mapping[str, Any]) -> list[str]:
    """A stored plan as lines: the target and its labels, then each level."""
    runs = ", ".join(f"{lv['judge']}: calibrate run {lv['calibration']}" for lv in record["levels"] if lv.get("sides"))
    lines = [
        f"cascade for {record['metric']}: agreement with people >= {1 - record['alpha']:.0%} with probability "
        f"{1 - record['delta']:.0%}, thresholds chosen on {record['labels']} labels of {record['dataset']} ({runs})"
    ]
    for k, level in enumerate(record["levels"]):
        if level.get("sides"):
            sides = "; ".join(_side_text(int(v), s) for v, s in sorted(level["sides"].items(), reverse=True))
            lines.append(f"  level {k} {level['judge']}: {sides}")
        else:
            lines.append(f"  level {k} {level['judge']}: decides what reaches it, outside the guarantee")
    if record.get("review"):
        lines.append(f"  then review: what no judge kept waits for a person ({record['left']} of the labelled items)")
    return lines


def _refusal(
    planned: LevelThresholds,
    k: int,
    name: str,
    calibrated: _Calibrated,
    agreement: float,
    delta: float,
    supported: float | None,
) -> str:
    reasons = "; ".join(f"{_VALUE[v]}: {s.reason}" for v, s in sorted(planned.sides.items(), reverse=True))
    need = min_labels(1 - agreement, planned.sides[1].delta)
    lower = (
        f"a lower --agreement ({supported:.2f} is the highest these labels support)"
        if supported is not None
        else "a lower --agreement (none down to 0.60 is supported by these labels)"
    )
    return (
        f"the labels cannot support --agreement {agreement:g} (delta {delta:g}) for level {k} ({name}): {reasons}. "
        f"It rests on calibrate run {calibrated.run_id} ({calibrated.dataset}, {planned.labels} labelled items "
        f"reaching this level). What would help: more labels (a level keeps nothing until at least {need} of its "
        f"verdicts of one value agree with people; `assay calibrate MORE.jsonl --judge {name}` on a larger file), "
        f"or {lower}"
    )


def plan_escalation(
    store: RunStore,
    metric: Metric,
    judges: Sequence[tuple[str, JudgeModel]],
    *,
    review: bool,
    agreement: float,
    delta: float = DEFAULT_DELTA,
) -> PlannedCascade:
    """Choose ``metric``'s cascade thresholds on the stored calibrations of its judges, or refuse.

    Args:
        store: The run store holding the calibrations (``assay calibrate`` writes them).
        metric: An escalating metric (faithfulness), set as the run sets it.
        judges: Each judge level as ``(name, judge)``, cheapest first (``review`` not among them).
        review: Whether people answer what no judge kept.
        agreement: The target agreement with people (``1 - alpha``).
        delta: The chance the guarantee may fail.

    Raises:
        ConfigError: the metric cannot escalate; a judge without probabilities (an API
            judge not asked for ``+logprobs`` or ``+samples:K``) is not last (or review
            follows it); a level has no calibration with these settings; the levels'
            calibrations are not of the same labelled items; the labels cannot support the
            target at some level (with the reason and what would help).
    """
    if not 0.5 <= agreement < 1.0:
        raise ConfigError(f"--agreement must be at least 0.5 and below 1, got {agreement:g}")
    if not 0.0 < delta < 1.0:
        raise ConfigError(f"--delta must be between 0 and 1, got {delta:g}")
    if (why := escalation_refusal([metric])) is not None:
        raise ConfigError(why)
    if not judges:
        raise ConfigError("a cascade needs a first judge (--judge) before --escalate")
    names = tuple(name for name, _ in judges)
    planned_levels: list[int] = []
    for k, (name, judge) in enumerate(judges):
        last = k == len(judges) - 1
        if isinstance(judge, ChoiceScorer):
            planned_levels.append(k)
        elif not last or review:
            where = "before review" if last else "as a middle level"
            raise ConfigError(
                f"judge {name!r} gives no probability for its verdicts, so it cannot keep the verdicts it is sure of "
                f"and pass on the rest {where}: ask it for one ({name}+logprobs on an OpenAI-compatible server that "
                f"returns log-probabilities, {name}+samples:5 on any: five answers a question) and calibrate it so, "
                "or put it last with no `review` after it (it then decides what reaches it, outside the guarantee)"
            )
    calibrated = [_calibration_of(store, metric, judges[k][1], judges[k][0]) for k in planned_levels]
    record: dict[str, Any] = {
        "metric": metric.name,
        "agreement": agreement,
        "alpha": round(1 - agreement, 10),
        "delta": delta,
        "review": review,
        "levels": [],
    }
    plan: CascadePlan | None = None
    ids: list[str] = []
    if calibrated:
        ids = _common_items(calibrated, [judges[k][0] for k in planned_levels])
        labels = [calibrated[0].items[i][0] for i in ids]
        levels = [([c.items[i][1] for i in ids], [c.items[i][2] for i in ids]) for c in calibrated]
        plan = plan_cascade(levels, labels, alpha=1 - agreement, delta=delta)
        for j, level in enumerate(plan.levels):
            if all(side.threshold is None for side in level.sides.values()):
                k = planned_levels[j]
                supported = _highest_supported(levels[: j + 1], labels, delta, j)
                raise ConfigError(_refusal(level, k, judges[k][0], calibrated[j], agreement, delta, supported))
        dropped = sorted({u for c in calibrated for u in c.unscored})
        record.update(
            labels=plan.labels,
            dataset=calibrated[0].dataset,
            left=plan.left,
            kept_by_level=list(plan.kept_by_level),
            unscored_items=len(dropped),
        )
    else:
        record.update(labels=0, dataset="(none)", left=0, kept_by_level=[], unscored_items=0)
    for k, (name, judge) in enumerate(judges):
        entry: dict[str, Any] = {"judge": name, "model_id": judge.model_id, "identity": judge.identity}
        if k in planned_levels and plan is not None:
            j = planned_levels.index(k)
            entry["calibration"] = calibrated[j].run_id
            entry["sides"] = {
                str(v): {
                    "threshold": s.threshold,
                    "labels": s.labels,
                    "kept": s.kept,
                    "errors": s.errors,
                    "delta": s.delta,
                    "reason": s.reason,
                }
                for v, s in plan.levels[j].sides.items()
            }
        record["levels"].append(entry)
    return PlannedCascade(metric.name, plan, names, review, record)


def _common_items(calibrated: Sequence[_Calibrated], names: Sequence[str]) -> list[str]:
    """The item ids every level's calibration judged, in the first's order; refuses other files."""
    first = calibrated[0]
    for c, name in zip(calibrated[1:], names[1:], strict=True):
        if Path(c.dataset).name != Path(first.dataset).name:
            raise ConfigError(
                f"the levels were calibrated on different files ({names[0]}: {first.dataset}, {name}: {c.dataset}): "
                f"a cascade's thresholds are chosen on the same labelled items; calibrate {name} on {first.dataset}"
            )
        every = set(first.items) | set(first.unscored)
        theirs = set(c.items) | set(c.unscored)
        for missing, who, has in ((every - theirs, name, names[0]), (theirs - every, names[0], name)):
            if missing:
                shown = ", ".join(sorted(missing)[:5]) + (" ..." if len(missing) > 5 else "")
                raise ConfigError(
                    f"{len(missing)} labelled items judged for {has} are missing from {who}'s calibration "
                    f"({shown}): calibrate both on the whole of {first.dataset} (no --limit)"
                )
        differ = [i for i in c.items if i in first.items and c.items[i][0] != first.items[i][0]]
        if differ:
            raise ConfigError(f"items {', '.join(differ[:5])} carry other labels in {name}'s calibration: recalibrate")
    dropped = {u for c in calibrated for u in c.unscored}
    return [i for i in first.items if i not in dropped]


_TRIED = (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6)


def _highest_supported(
    levels: Sequence[tuple[Sequence[int], Sequence[float]]], labels: Sequence[int], delta: float, j: int
) -> float | None:
    """The highest agreement of a few round targets at which level ``j`` gets a threshold on these labels."""
    for target in _TRIED:
        plan = plan_cascade(levels, labels, alpha=1 - target, delta=delta)
        if any(side.threshold is not None for side in plan.levels[j].sides.values()):
            return target
    return None


def cascade_lines(record: Mapping[str, Any], scores: Iterable[Score], prices: PriceTable | None = None) -> list[str]:
    """Under a cascade metric's score: the share decided per level, the guarantee, review, calls saved.

    ``record`` is the stored plan (:attr:`PlannedCascade.record`); ``scores`` the metric's
    scores; ``prices`` the price table for the cost line (default: the built-in one), shown
    only when every judge of the cascade is priced.
    """
    scores = list(scores)
    names = [lv["judge"] for lv in record["levels"]]
    by_level: Counter[int] = Counter()
    guaranteed = outside = pending = 0
    reached: Counter[int] = Counter()
    for score in scores:
        for verdict in score.verdicts:
            decision = verdict.decision
            if decision is None:
                continue
            by_level[decision.level] += 1
            for k in range(decision.level + 1):
                reached[k] += 1
            if decision.guaranteed:
                guaranteed += 1
            else:
                outside += 1
        for wait in score.pending:
            pending += 1
            for k in range(len(wait.tried)):
                reached[k] += 1
    total = sum(by_level.values()) + pending
    if total == 0:
        return ["cascade: no verdict decided"]
    shares = [f"{names[k]} {by_level[k]} ({by_level[k] / total:.0%})" for k in range(len(names))]
    if record.get("review"):
        shares.append(f"review {pending} ({pending / total:.0%})")
    lines = [f"decided: {', '.join(shares)} of {total} questions"]
    runs = ", ".join(f"calibrate run {lv['calibration']}" for lv in record["levels"] if lv.get("calibration"))
    if record.get("labels"):
        lines.append(
            f"guarantee: agreement with people >= {1 - record['alpha']:.0%} with probability {1 - record['delta']:.0%} "
            f"on the {guaranteed} verdicts kept, resting on {record['labels']} labels: {runs}, {record['dataset']} "
            f"({GUARANTEE_REACH})"
        )
    if outside:
        lines.append(f"outside the guarantee: {outside} verdicts decided by {names[-1]} with no threshold")
    if record.get("review"):
        lines.append(f"left for review: {pending} (`assay review RUN`)")
    if len(names) > 1:
        last = len(names) - 1
        saved = total - reached[last]
        calls = sum(reached.values())
        lines.append(
            f"calls: {calls} verdict questions asked over {len(names)} judges; {reached[last]} reached {names[-1]}, "
            f"{saved} fewer than sending all {total} to it"
        )
        cost = _cost_line(record, scores, reached[last], total, prices or PriceTable())
        if cost:
            lines.append(cost)
    return lines


def _cost_line(record: Mapping[str, Any], scores: Sequence[Score], reached: int, total: int, prices: PriceTable) -> str:
    """What the cascade cost, and about what sending every question to the last judge would (all priced, else "")."""
    models = [str(lv.get("model_id")) for lv in record["levels"]]
    spent: dict[str, float] = dict.fromkeys(models, 0.0)
    for score in scores:
        for call in score.calls:
            if call.model in spent:
                usd = prices.cost(call.model, call.usage)
                if usd is None:
                    return ""
                spent[call.model] += usd
    if reached == 0 or any(prices.rate(m) is None for m in models):
        return ""
    each = spent[models[-1]] / reached
    last = record["levels"][-1]["judge"]
    spent_all = f"${sum(spent.values()):.4f}"
    return f"cost: {spent_all}; about ${each * total:.4f} sending all {total} to {last} (${each:.5f} a question there)"


def cascade_levels(escalate: Sequence[str | JudgeModel]) -> tuple[list[str | JudgeModel], bool]:
    """``--escalate`` values as the judge levels after the first, and whether ``review`` ends them.

    Raises:
        ConfigError: ``review`` anywhere but last, or given twice.
    """
    levels = list(escalate)
    named = [lv for lv in levels if isinstance(lv, str) and lv.strip().lower() == REVIEW]
    review = bool(named)
    if len(named) > 1 or (review and not (isinstance(levels[-1], str) and levels[-1].strip().lower() == REVIEW)):
        raise ConfigError("`review` can only be the last --escalate level, once: people answer what no judge kept")
    return [lv for lv in levels if lv not in named], review


def prepare_cascade(
    store: RunStore,
    metrics: Sequence[Metric],
    first: tuple[str, JudgeModel],
    escalate: Sequence[str | JudgeModel],
    *,
    agreement: float | None,
    delta: float | None,
) -> tuple[dict[str, PlannedCascade], list[tuple[str, JudgeModel]]]:
    """Every metric's plan and every judge level, or the refusal, before any judge call.

    ``first`` is the run's own judge (``--judge``, built with ``--base-url``); ``escalate`` the
    levels after it (judge strings or judges; ``review`` last): a level named by a string is
    built from it alone (``$OPENAI_BASE_URL`` for an ``openai:`` level).

    Raises:
        ConfigError: no ``agreement``; a metric that cannot escalate (named); a bad level; or
            the plan's refusals (:func:`plan_escalation`).
    """
    from assay.models import get_judge

    if agreement is None:
        raise ConfigError("--escalate needs --agreement A (the target agreement with people, e.g. 0.9)")
    if (why := escalation_refusal(metrics)) is not None:
        raise ConfigError(why)
    after, review = cascade_levels(escalate)
    judges = [first]
    for level in after:
        judge = get_judge(level) if isinstance(level, str) else level
        judges.append((judge_name(level), judge))
    planned = {
        m.name: plan_escalation(
            store, m, judges, review=review, agreement=agreement, delta=DEFAULT_DELTA if delta is None else delta
        )
        for m in metrics
    }
    return planned, judges


def cascade_option(planned: Mapping[str, PlannedCascade]) -> dict[str, Any]:
    """What a cascade run stores in its spec's options: every metric's plan (compared on resume)."""
    return {name: plan.record for name, plan in planned.items()}
