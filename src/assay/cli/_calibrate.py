"""``assay calibrate``: how often does the judge agree with people? Into the run store.

Two item kinds, told apart by their fields (one JSON object a line):

- grounding: ``{id, context | contexts, claim | answer, label (1/0), source?}``, judged by
  :class:`~assay.grounding._verify.StatementVerifier` (the product's own path);
- grader: ``{id, criteria, question?, completion | answer, label (PASS/FAIL or 1/0), source?}``,
  judged by :class:`~assay.metrics.BinaryJudgeGrader` (NA is unscored ``not_applicable``).

The per-source breakdown reads ``source``, else ``source_dataset``. The figures come from
:func:`assay.analysis._agreement.agreement`; see ``docs/design/calibration.md``.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.table import Table

from assay._safety import printable, redact_url
from assay._samples import Sample
from assay._scores import MetricSpec, Score, UnscoredReason, Verdict
from assay._version import __version__
from assay.analysis._agreement import Agreement, agreement
from assay.cli._console import EXIT_BAD_ROWS, EXIT_OK, EXIT_USAGE, err_console, fmt_score, out_console
from assay.errors import AssayError, ConfigError, DatasetError, SampleError
from assay.grounding._verify import StatementVerifier
from assay.metrics._graders import BinaryJudgeGrader
from assay.models import JUDGE_FORMS, JudgeModel, LocalJudge, close_judge, get_judge
from assay.run import Limits, RunSpec, RunStore, SampleResult, build_judge_stack, new_run_id
from assay.run._dataset import json_lines
from assay.run._progress import load_local_judge, make_reporter

__all__ = ["CalibrationItem", "CalibrationOutcome", "calibrate", "judge_item", "read_items"]

GROUNDING_METRIC = "statement_verifier"
GRADER_METRIC = "binary_grader"
UNKNOWN_SOURCE = "(none)"


@dataclass(frozen=True)
class CalibrationItem:
    """One human-labelled item: a grounding claim or a graded completion."""

    id: str
    line: int
    kind: Literal["grounding", "grader"]
    label: int
    source: str
    contexts: tuple[str, ...] = ()
    claim: str = ""
    criteria: str = ""
    question: str | None = None
    completion: str = ""


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
    contexts = row.get("contexts", row.get("context"))
    if isinstance(contexts, str):
        contexts = [contexts]
    claim = _text(row, "claim", "answer")
    if not isinstance(contexts, list) or not contexts or not all(isinstance(c, str) for c in contexts) or claim is None:
        raise SampleError(
            "a grounding item needs 'context' (a string) or 'contexts' (a list of strings) and a non-empty "
            "'claim' (or 'answer'); a grader item needs 'criteria'"
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
    meta["criteria"] = item.criteria
    return Sample(id=item.id, question=item.question, answer=item.completion, metadata=meta)


async def judge_item(item: CalibrationItem, judge: JudgeModel, verifier: StatementVerifier) -> CalibrationOutcome:
    """Ask the product's judge path for ``item`` and keep the verdict, reason and calls."""
    if item.kind == "grader":
        score = await BinaryJudgeGrader(item.criteria).score(_sample(item), judge)
        reason = score.verdicts[0].reason if score.verdicts else (score.detail or "")
        pred = None if not score.is_scored else int(score.value == 1.0)
        return CalibrationOutcome(item, score, pred, reason, None)
    spec = MetricSpec(name=GROUNDING_METRIC, params=verifier.params())
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


def _fmt_ci(value: float, ci: tuple[float, float] | list[float | None]) -> str:
    lo, hi = (math.nan if v is None else v for v in ci)
    return f"{fmt_score(value)} [{fmt_score(lo)}, {fmt_score(hi)}]"


def _print_report(
    overall: Agreement, by_source: dict[str, Agreement], outcomes: Sequence[CalibrationOutcome], n_show: int
) -> None:
    c = overall.confusion
    out_console.print(
        f"[bold]balanced accuracy[/bold] {_fmt_ci(overall.balanced_accuracy, overall.balanced_accuracy_ci)}  "
        f"[bold]Cohen's kappa[/bold] {_fmt_ci(overall.kappa, overall.kappa_ci)}  (n={overall.n}, 95% bootstrap CI)"
    )
    matrix = Table(title="confusion (rows: people, columns: judge)", title_justify="left")
    for column in ("", "judge 1", "judge 0"):
        matrix.add_column(column, justify="right")
    matrix.add_row("label 1", str(c.tp), str(c.fn))
    matrix.add_row("label 0", str(c.fp), str(c.tn))
    out_console.print(matrix)
    classes = Table(title="per class", title_justify="left")
    for column in ("class", "precision", "recall", "f1", "support"):
        classes.add_column(column, justify="right")
    for cls in (1, 0):
        s = overall.per_class[cls]
        classes.add_row(str(cls), fmt_score(s.precision), fmt_score(s.recall), fmt_score(s.f1), str(s.support))
    out_console.print(classes)
    sources = Table(title="per source", title_justify="left")
    for column in ("source", "n", "balanced acc.", "kappa", "TP", "FN", "FP", "TN"):
        sources.add_column(column, justify="right")
    for name, a in by_source.items():
        k = a.confusion
        sources.add_row(
            printable(name),
            str(a.n),
            _fmt_ci(a.balanced_accuracy, a.balanced_accuracy_ci),
            _fmt_ci(a.kappa, a.kappa_ci),
            *(str(v) for v in (k.tp, k.fn, k.fp, k.tn)),
        )
    out_console.print(sources)
    unscored = Counter(o.score.unscored_reason.value for o in outcomes if o.score.unscored_reason is not None)
    if unscored:
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(unscored.items()))
        out_console.print(f"[yellow]unscored {sum(unscored.values())}[/yellow] ({reasons}): left out of the figures")
    disagreements = [o for o in outcomes if o.disagrees]
    if disagreements and n_show > 0:
        table = Table(
            title=f"disagreements ({len(disagreements)}, showing {min(n_show, len(disagreements))})",
            title_justify="left",
            show_lines=True,
        )
        for column in ("id", "label", "judge", "P(supported)", "judge's reason"):
            table.add_column(column)
        for o in disagreements[:n_show]:
            p = "—" if o.probability is None else f"{o.probability:.2f}"
            table.add_row(printable(o.item.id, breaks=False), str(o.item.label), str(o.pred), p, printable(o.reason))
        out_console.print(table)


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
        await close_judge(judge)


def calibrate(
    data: Annotated[Path, typer.Argument(help="JSONL of human-labelled grounding or grader items.")],
    judge: Annotated[str, typer.Option("--judge", "-j", envvar="ASSAY_JUDGE", help=f"Judge: {JUDGE_FORMS}.")] = "local",
    base_url: Annotated[
        str | None, typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="Server URL for openai: judges.")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Verifier: P(supported) at or above which a claim is supported."),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Judge only the first N valid items.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap confidence intervals.")] = 0,
    store_path: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    disagreements: Annotated[int, typer.Option(min=0, help="Show at most N disagreements.")] = 20,
) -> None:
    """Measure the judge against human labels: balanced accuracy, kappa, confusion, disagreements.

    Exit codes: 0 every row judged; 1 could not run (unreadable input, bad option);
    2 judged, but some input rows were invalid.
    """
    try:
        verifier = StatementVerifier() if threshold is None else StatementVerifier(threshold=threshold)
        items, errors = read_items(data, limit=limit)
        if not items:
            raise ConfigError(f"{data} holds no valid item" + (f" (first error: {errors[0]})" if errors else ""))
        judge_model = get_judge(judge, base_url=base_url)
        store = RunStore(store_path)
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    kinds = sorted({i.kind for i in items})
    metrics: list[MetricSpec] = []
    if "grounding" in kinds:
        metrics.append(MetricSpec(name=GROUNDING_METRIC, params=verifier.params()))
    criteria = dict.fromkeys(i.criteria for i in items if i.kind == "grader")
    metrics.extend(BinaryJudgeGrader(c).spec() for c in criteria)
    run_id = new_run_id()
    store.create(
        RunSpec(
            run_id=run_id,
            dataset=str(data),
            judge=judge,
            judge_model=judge_model.model_id,
            base_url=redact_url(base_url),  # never a credential in the store
            metrics=tuple(metrics),
            options={"threshold": threshold, "limit": limit, "seed": seed, "kinds": kinds},
            engine="calibrate",
            assay_version=__version__,
        )
    )
    for error in errors:
        store.record_error(run_id, error)
        err_console.print(f"[red]skipped[/red] {printable(str(error))}")
    try:
        reporter = make_reporter("auto", err_console)
        try:
            if isinstance(judge_model, LocalJudge):
                load_local_judge(judge_model, reporter)
            runner = build_judge_stack(judge_model, limits=Limits())
            reporter.start(f"judging ({run_id})", len(items), 0)

            def on_done(outcome: CalibrationOutcome) -> None:
                result = SampleResult(_sample(outcome.item), {outcome.score.metric: outcome.score}, outcome.item.line)
                store.record(run_id, result)
                reporter.advance(1, "")

            outcomes = asyncio.run(_judge_all(items, runner, verifier, on_done))
        finally:
            reporter.close()
    except KeyboardInterrupt:
        store.set_status(run_id, "interrupted")
        err_console.print("[yellow]interrupted[/yellow]: the items judged so far are stored")
        raise typer.Exit(130) from None
    except AssayError as exc:
        store.set_status(run_id, "failed")
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
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
    store.annotate(run_id, "_calibration", _calibration(outcomes, overall, by_source))
    store.set_status(run_id, "finished")
    store.close()
    out_console.print(f"calibration of [bold]{printable(judge_model.model_id)}[/bold] on {printable(data)}")
    _print_report(overall, by_source, outcomes, disagreements)
    out_console.print(f"stored in {printable(store_path)} as run [bold]{run_id}[/bold] · 'assay runs show {run_id}'")
    raise typer.Exit(EXIT_BAD_ROWS if errors else EXIT_OK)
