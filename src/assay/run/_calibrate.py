"""Calibration: how often does the judge agree with people? Judged, measured and stored.

Two item kinds, told apart by their fields (one JSON object a line):

- grounding: ``{id, context | contexts, claim | answer, label (1/0), source?}``, judged by
  :class:`~assay.grounding.StatementVerifier` (the product's own path);
- grader: ``{id, criteria, question?, completion | answer, label (PASS/FAIL or 1/0), source?}``,
  judged by :class:`~assay.metrics.BinaryJudgeGrader` (NA is unscored ``not_applicable``);
- relevance: ``{id, question, reference, passage, label, source?}``, judged by
  :class:`~assay.metrics.ContextPrecision` (``reference=True``) on the one passage: 1 when the
  judge finds it useful for the reference answer;
- agent: ``{id, trace, goal?, label, source?}`` (``trace``: the messages), judged by
  :class:`~assay.metrics.AgentGoalAccuracy` (requirements from ``goal``, else the user's turns).

The per-source breakdown reads ``source``, else ``source_dataset``. The figures come from
:func:`assay.analysis.agreement`; see ``docs/design/calibration.md``. :func:`calibrate` is
what ``assay calibrate`` calls.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assay._safety import redact_url
from assay._samples import Sample
from assay._scores import MetricSpec, Score, UnscoredReason, Verdict
from assay._version import __version__
from assay.analysis._agreement import Agreement, agreement
from assay.errors import ConfigError, DatasetError, SampleError
from assay.grounding import StatementVerifier
from assay.metrics._agent import AgentGoalAccuracy
from assay.metrics._base import Metric
from assay.metrics._faithfulness import Faithfulness
from assay.metrics._graders import BinaryJudgeGrader
from assay.metrics._rag import ContextPrecision
from assay.metrics._spec import fields_json
from assay.models import JudgeModel, LocalJudge, close_judge, get_judge
from assay.models._confidence import judge_name
from assay.models._stack import Limits, build_judge_stack
from assay.run._data import json_lines
from assay.run._judge_record import JudgeRecord
from assay.run._plan import refuse_unread_base_url
from assay.run._progress import ProgressMode, load_local_judge, make_reporter
from assay.run._results import SampleResult
from assay.run._store import RunSpec, RunStore, new_run_id
from assay.run._trust import store_agreement

__all__ = ["Calibration", "CalibrationItem", "CalibrationOutcome", "calibrate", "judge_item", "read_items"]

GROUNDING_METRIC = "statement_verifier"
GRADER_METRIC = "binary_grader"
KINDS = ("grounding", "grader", "relevance", "agent")
"""The item kinds, told apart by their fields (``criteria``, ``trace``, ``passage``, else grounding)."""
UNKNOWN_SOURCE = "(none)"


@dataclass(frozen=True)
class CalibrationItem:
    """One human-labelled item: a grounding claim or a graded completion."""

    id: str
    line: int
    kind: Literal["grounding", "grader", "relevance", "agent"]
    label: int
    source: str
    contexts: tuple[str, ...] = ()
    claim: str = ""
    criteria: str = ""
    question: str | None = None
    completion: str = ""
    reference: str | None = None
    trace: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class CalibrationOutcome:
    """The judge's answer for one item: verdict 1/0 (``None`` if unscored), reason, P(supported)."""

    item: CalibrationItem
    score: Score
    pred: int | None
    reason: str
    probability: float | None

    @property
    def disagrees(self) -> bool:
        """Scored, and the judge's verdict differs from the human label."""
        return self.pred is not None and self.pred != self.item.label


def _label(value: object, where: str) -> int:
    if isinstance(value, bool):
        raise SampleError(f"{where}label must be 1/0 or PASS/FAIL, got {value!r}")
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str):
        text = value.strip().upper()
        mapping = {"1": 1, "0": 0, "PASS": 1, "FAIL": 0}
        if text in mapping:
            return mapping[text]
    raise SampleError(f"{where}label must be 1/0 or PASS/FAIL, got {value!r}")


def _text(row: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = row.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _item(row: object, line: int) -> CalibrationItem:
    if not isinstance(row, dict):
        raise SampleError("a row must be a JSON object")
    item_id = str(row.get("id") if row.get("id") is not None else f"line-{line}")
    source = str(row.get("source") or row.get("source_dataset") or UNKNOWN_SOURCE)
    if "label" not in row:
        raise SampleError("missing field 'label' (1/0 or PASS/FAIL)")
    label = _label(row["label"], "")
    if "criteria" in row:
        criteria = _text(row, "criteria")
        completion = _text(row, "completion", "answer")
        if criteria is None or completion is None:
            raise SampleError("a grader item needs non-empty 'criteria' and 'completion' (or 'answer')")
        question = _text(row, "question")
        return CalibrationItem(
            item_id, line, "grader", label, source, criteria=criteria, question=question, completion=completion
        )
    if "trace" in row:
        trace = row["trace"]
        if not isinstance(trace, list) or not trace or not all(isinstance(m, dict) for m in trace):
            raise SampleError("an agent item needs 'trace': a non-empty list of messages (JSON objects)")
        goal = _text(row, "goal", "reference")
        return CalibrationItem(item_id, line, "agent", label, source, reference=goal, trace=tuple(trace))
    if "passage" in row:
        passage, question, reference = _text(row, "passage"), _text(row, "question"), _text(row, "reference")
        if passage is None or question is None or reference is None:
            raise SampleError("a relevance item needs non-empty 'passage', 'question' and 'reference' (the answer)")
        return CalibrationItem(
            item_id, line, "relevance", label, source, contexts=(passage,), question=question, reference=reference
        )
    contexts = row.get("contexts", row.get("context"))
    if isinstance(contexts, str):
        contexts = [contexts]
    claim = _text(row, "claim", "answer")
    if not isinstance(contexts, list) or not contexts or not all(isinstance(c, str) for c in contexts) or claim is None:
        raise SampleError(
            "a grounding item needs 'context' (a string) or 'contexts' (a list of strings) and a non-empty "
            "'claim' (or 'answer'); a grader item needs 'criteria', a relevance item 'passage', an agent item 'trace'"
        )
    return CalibrationItem(item_id, line, "grounding", label, source, contexts=tuple(contexts), claim=claim)


def read_items(path: Path, *, limit: int | None = None) -> tuple[list[CalibrationItem], list[SampleError]]:
    """Parse a JSONL of labelled items; invalid rows come back as errors with file and line.

    Read by the same reader as ``assay run`` (byte-order mark, bytes that are not UTF-8,
    nesting too deep, a key given twice), and an id used twice is a row error naming the
    line that used it first: per-item agreement and disagreements key on ids.

    Raises:
        ConfigError: the file cannot be read.
    """
    items: list[CalibrationItem] = []
    errors: list[SampleError] = []
    first_line: dict[str, int] = {}
    try:
        for entry in json_lines(path):
            if isinstance(entry, SampleError):
                errors.append(entry)
                continue
            if limit is not None and len(items) >= limit:
                break
            line, row = entry
            try:
                item = _item(row, line)
                first = first_line.setdefault(item.id, line)
                if first != line:
                    raise SampleError(f"id {item.id!r} already used on line {first}; ids must be unique")
                items.append(item)
            except SampleError as exc:
                errors.append(SampleError(exc.detail, source=str(path), line=line))
    except DatasetError as exc:
        raise ConfigError(str(exc)) from None
    return items, errors


def _sample(item: CalibrationItem) -> Sample:
    meta: dict[str, Any] = {"label": item.label, "kind": item.kind, "source": item.source}
    if item.kind == "grounding":
        return Sample(id=item.id, answer=item.claim, contexts=item.contexts, metadata=meta)
    if item.kind == "relevance":
        return Sample(
            id=item.id, question=item.question, reference=item.reference, contexts=item.contexts, metadata=meta
        )
    if item.kind == "agent":
        return Sample(id=item.id, trace=list(item.trace), reference=item.reference, metadata=meta)
    meta["criteria"] = item.criteria
    return Sample(id=item.id, question=item.question, answer=item.completion, metadata=meta)


RELEVANCE_METRIC = ContextPrecision(reference=True)
"""Judges a relevance item: context precision of its one passage against the reference answer."""
AGENT_METRIC = AgentGoalAccuracy()
"""Judges an agent item: the default ``agent_goal_accuracy``."""


def _metric(item: CalibrationItem) -> Metric | None:
    """The metric that judges ``item`` (``None`` for grounding items: the verifier does)."""
    if item.kind == "grader":
        return BinaryJudgeGrader(item.criteria)
    if item.kind == "relevance":
        return RELEVANCE_METRIC
    if item.kind == "agent":
        return AGENT_METRIC
    return None


async def judge_item(item: CalibrationItem, judge: JudgeModel, verifier: StatementVerifier) -> CalibrationOutcome:
    """Ask the product's judge path for ``item`` and keep the verdict, reason and calls.

    A metric's score is the verdict: 1 when it is 1.0, 0 otherwise (one passage's context
    precision is 1 or 0; agent goal accuracy is 1 or 0).
    """
    metric = _metric(item)
    if metric is not None:
        if isinstance(metric, BinaryJudgeGrader):  # with P(PASS) where the judge gives one: a cascade's thresholds
            score = await metric.score_with_confidence(_sample(item), judge)
        else:
            score = await metric.score(_sample(item), judge)
        reason = score.verdicts[0].reason if item.kind == "grader" and score.verdicts else ""
        reason = reason or score.explanation or score.detail or ""
        pred = None if not score.is_scored else int(score.value == 1.0)
        details = score.verdicts[0].details if score.verdicts else None
        p_pass = (details or {}).get("p_pass")
        return CalibrationOutcome(item, score, pred, reason, float(p_pass) if p_pass is not None else None)
    spec = MetricSpec(name=GROUNDING_METRIC, params=fields_json(verifier))
    (outcome,) = await verifier.verify(item.contexts, [item.claim], judge)
    if outcome.verdict is None:
        reason, detail = UnscoredReason.JUDGE_ERROR, "no verdict"
        if outcome.failure is not None:
            reason, detail = outcome.failure.reason, outcome.failure.detail
        score = Score.unscored(GROUNDING_METRIC, reason, detail, calls=outcome.calls, spec=spec)
        return CalibrationOutcome(item, score, None, detail, None)
    verdict: Verdict = outcome.verdict
    score = Score.scored(
        GROUNDING_METRIC,
        float(verdict.value),
        verdicts=[verdict],
        explanation=verdict.reason,
        calls=outcome.calls,
        spec=spec,
    )
    return CalibrationOutcome(item, score, int(verdict.value), verdict.reason, outcome.probability)


def _calibration(
    outcomes: Sequence[CalibrationOutcome], overall: Agreement, by_source: dict[str, Agreement]
) -> dict[str, Any]:
    """Agreement with the labels, kept with the run (its per-metric summary is computed from its records)."""
    return {
        **overall.to_dict(),
        "by_source": {name: a.to_dict() for name, a in by_source.items()},
        "unscored": dict(Counter(o.score.unscored_reason.value for o in outcomes if o.score.unscored_reason)),
        "disagreements": [o.item.id for o in outcomes if o.disagrees],
    }


async def _judge_all(
    items: Sequence[CalibrationItem],
    judge: JudgeModel,
    verifier: StatementVerifier,
    on_done: Any,
) -> list[CalibrationOutcome]:
    gate = asyncio.Semaphore(max(1, judge.max_concurrency))

    async def one(item: CalibrationItem) -> CalibrationOutcome:
        async with gate:
            outcome = await judge_item(item, judge, verifier)
        on_done(outcome)
        return outcome

    try:
        return list(await asyncio.gather(*(one(i) for i in items)))
    finally:
        await close_judge(judge)  # as evaluate() does: an HTTP judge opens a new client in the next event loop


@dataclass
class Calibration:
    """What :func:`calibrate` measured: agreement with the labels, per item, stored as a run.

    Attributes:
        run_id: The stored run (``assay runs show RUN_ID``).
        store_path: The run store it is in.
        judge: The judge's model id.
        outcomes: Every judged item, in input order, with its verdict, reason and calls.
        errors: Input rows that were not items (file and line in each).
        overall: Balanced accuracy, kappa, confusion and per-class figures over scored items.
        by_source: The same per ``source``.
    """

    run_id: str
    store_path: Path
    judge: str
    outcomes: list[CalibrationOutcome]
    errors: list[SampleError]
    overall: Agreement
    by_source: dict[str, Agreement] = field(default_factory=dict)
    attached_to: tuple[str, ...] = ()
    """The metrics this calibration was stored for (:func:`~assay.run.store_agreement`): later runs
    of them with the same judge and the settings it measured show it beside their scores."""
    attached_with: dict[str, str] = field(default_factory=dict)
    """The ``--set`` options (``strategy``, ``threshold``) a run of the attached metric needs for
    this figure to describe it, beyond the metric's defaults (empty: its defaults, with this judge)."""
    items_total: int | None = None
    """Valid items in the file; more than were judged when ``limit`` cut it (a partial calibration)."""
    limit: int | None = None
    """The ``limit`` it was run with."""

    @property
    def partial(self) -> bool:
        """Judged fewer items than the file holds (``limit``): stored and shown as partial."""
        return self.items_total is not None and len(self.outcomes) < self.items_total

    @property
    def disagreements(self) -> list[CalibrationOutcome]:
        """Scored items where the judge and the label differ, in input order."""
        return [o for o in self.outcomes if o.disagrees]

    @property
    def unscored(self) -> Counter[str]:
        """Unscored items by reason (left out of the figures)."""
        return Counter(o.score.unscored_reason.value for o in self.outcomes if o.score.unscored_reason is not None)


def calibrate(
    data: str | Path,
    judge: JudgeModel | str = "local",
    *,
    base_url: str | None = None,
    threshold: float | None = None,
    limit: int | None = None,
    seed: int = 0,
    store: str | Path = ".assay/runs.sqlite",
    progress: ProgressMode | bool | None = "auto",
    on_error: Callable[[SampleError], None] | None = None,
) -> Calibration:
    """Judge human-labelled items with the product's own judge path and measure agreement.

    Every judged item is stored as it finishes (a run with ``engine="calibrate"``), so an
    interrupted calibration keeps what it judged; the agreement figures are stored with
    the run.

    Args:
        data: JSONL of grounding or grader items (see the module docstring).
        judge: A judge string (``"local"``, ``"openai:gpt-4o-mini"``) or a judge.
        base_url: Server URL for ``openai:`` judges.
        threshold: The verifier's P(supported) threshold (default: the verifier's).
        limit: Judge only the first N valid items.
        seed: Seed of the bootstrap confidence intervals.
        store: The run store (SQLite path).
        progress: How to show progress (as :func:`assay.evaluate`).
        on_error: Called with each invalid input row (it is also stored and returned).

    Raises:
        ConfigError: the file cannot be read or holds no valid item, or an option is wrong.
        KeyboardInterrupt: interrupted; the run is stored as ``interrupted`` with what was judged.
    """
    verifier = StatementVerifier() if threshold is None else StatementVerifier(threshold=threshold)
    path = Path(data)
    items, errors = read_items(path, limit=limit)
    if not items:
        raise ConfigError(f"{path} holds no valid item" + (f" (first error: {errors[0]})" if errors else ""))
    # How many the file holds: a limited run is partial, and says so wherever it is shown.
    total = len(read_items(path)[0]) if limit is not None and len(items) >= limit else len(items)
    named = judge_name(judge)
    if base_url is not None:
        refuse_unread_base_url(judge)  # else stored with the calibration and never used
    judge_model = get_judge(judge, base_url=base_url) if isinstance(judge, str) else judge
    kinds = sorted({i.kind for i in items})
    metrics: list[MetricSpec] = []
    if "grounding" in kinds:
        metrics.append(MetricSpec(name=GROUNDING_METRIC, params=fields_json(verifier)))
    specs: dict[str, MetricSpec] = {}
    for metric in filter(None, map(_metric, items)):
        spec = metric.spec()
        specs.setdefault(spec.model_dump_json(), spec)
    metrics.extend(specs.values())
    run_id = new_run_id()
    store_path = Path(store)
    record = JudgeRecord.of(judge_model, metrics)
    with RunStore(store_path) as run_store:
        run_store.create(
            RunSpec(
                run_id=run_id,
                dataset=str(path),
                judge=named,
                judge_model=judge_model.model_id,
                judge_record=record,
                base_url=redact_url(base_url),  # never a credential in the store
                metrics=tuple(metrics),
                options={
                    "threshold": threshold,
                    "limit": limit,
                    "seed": seed,
                    "kinds": kinds,
                    "items": len(items),
                    "items_total": total,
                },
                engine="calibrate",
                assay_version=__version__,
            )
        )
        for error in errors:
            run_store.record_error(run_id, error)
            if on_error is not None:
                on_error(error)
        try:
            reporter = make_reporter(progress)
            try:
                if isinstance(judge_model, LocalJudge):
                    load_local_judge(judge_model, reporter)
                runner = build_judge_stack(judge_model, limits=Limits())
                reporter.start(f"judging ({run_id})", len(items), 0)

                def on_done(outcome: CalibrationOutcome) -> None:
                    result = SampleResult(
                        _sample(outcome.item), {outcome.score.metric: outcome.score}, outcome.item.line
                    )
                    run_store.record(run_id, result)
                    reporter.advance(1, "")

                outcomes = asyncio.run(_judge_all(items, runner, verifier, on_done))
            finally:
                reporter.close()
        except KeyboardInterrupt:
            run_store.set_status(run_id, "interrupted")
            raise
        except BaseException:
            run_store.set_status(run_id, "failed")
            raise
        scored = [o for o in outcomes if o.pred is not None]
        overall = agreement([o.item.label for o in scored], [o.pred for o in scored if o.pred is not None], seed=seed)
        by_source = {
            name: agreement(
                [o.item.label for o in scored if o.item.source == name],
                [o.pred for o in scored if o.item.source == name and o.pred is not None],
                seed=seed,
            )
            for name in sorted({o.item.source for o in scored})
        }
        counts = {"items": len(items), "items_total": total, "limit": limit, "partial": len(items) < total}
        run_store.annotate(run_id, "_calibration", _calibration(outcomes, overall, by_source) | counts)
        attached, needs = _attach(
            run_store, items, verifier, judge_model, record, overall, path, run_id, total=total, limit=limit
        )
        run_store.set_status(run_id, "finished")
    return Calibration(
        run_id,
        store_path,
        judge_model.model_id,
        outcomes,
        errors,
        overall,
        by_source,
        attached,
        needs,
        items_total=total,
        limit=limit,
    )


def _attach(
    store: RunStore,
    items: Sequence[CalibrationItem],
    verifier: StatementVerifier,
    judge_model: JudgeModel,
    judge: JudgeRecord,
    overall: Agreement,
    path: Path,
    run_id: str,
    *,
    total: int,
    limit: int | None,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """Store the agreement for the metric whose verdicts it measured, with the settings it measured.

    Grounding items measure the statement verifier one statement a call, which gives
    ``faithfulness`` its verdicts when it runs ``per_statement`` (``auto`` is that with a
    judge that prefers it: the local one) at this threshold, its other settings the
    defaults; grader items of one criteria measure that grader. A file mixing kinds or
    criteria measures no single metric and attaches to none.

    Returns:
        The metrics it was stored for, and the ``--set`` options a run of it needs beyond
        its defaults for the figure to describe it.
    """
    kinds = {i.kind for i in items}
    criteria = {i.criteria for i in items if i.kind == "grader"}
    if math.isnan(overall.balanced_accuracy) or len(kinds) != 1:
        return (), {}
    needs: dict[str, str] = {}
    resolves: dict[str, str] = {}
    if kinds == {"grounding"}:
        spec = Faithfulness(strategy="per_statement", verifier=verifier).spec()
        resolves["strategy"] = "per_statement" if judge_model.prefers_per_statement else "batch"
        if not judge_model.prefers_per_statement:
            needs["strategy"] = "per_statement"
        if verifier.threshold != StatementVerifier().threshold:
            needs["threshold"] = f"{verifier.threshold:g}"
    elif len(criteria) == 1:
        spec = BinaryJudgeGrader(next(iter(criteria))).spec()
    else:
        return (), {}
    store_agreement(
        store,
        spec,
        judge,
        overall,
        dataset=path.name,
        run_id=run_id,
        resolves=resolves,
        items=len(items),
        items_total=total,
        limit=limit,
    )
    return (spec.name,), needs
