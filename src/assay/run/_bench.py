"""``assay judges bench``: several judges on the same small labelled public sets, side by side.

The sets ship with the package (``bench_sets/``, built by ``benchmarks/bench_sets.py`` from
the project's dev data; their licences and provenance are in ``bench_sets/MANIFEST.json``):
grounding claims (human labels), retrieval relevance (labelled by construction) and agent
trajectories (the environment's reward). Each is balanced and ordered so that its first N
items stay balanced (``limit``).

Every (judge, set) pair is one :func:`~assay.run.calibrate` call: the same item reader,
the same product metric path, the same agreement figures
(:func:`assay.analysis.agreement`), stored the same way as ``assay calibrate`` stores a
calibration. What is added here is the bookkeeping across judges: calls, tokens, cost
(:class:`~assay.run.CostReport`) and seconds per pair, and a judge whose every call failed
is an error for that judge, never a column of figures.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from assay.analysis._agreement import Agreement
from assay.errors import AssayError, ConfigError
from assay.grounding import StatementVerifier
from assay.models import FunctionJudge, JudgeModel, JudgeRequest, LocalJudge, get_judge
from assay.models._confidence import judge_name
from assay.run._calibrate import Calibration, CalibrationItem, calibrate, judge_item, read_items
from assay.run._cost import CostReport, PriceTable
from assay.run._plan import refuse_unread_base_url
from assay.run._progress import ProgressMode, load_local_judge, make_reporter
from assay.testing import minimal_instance

__all__ = ["BENCH_SETS", "BenchCell", "BenchResult", "BenchSet", "bench_judges", "bench_sets"]

BENCH_SETS = ("grounding", "retrieval", "agents")
"""The shipped sets, in the order they are run and shown."""

_PACKAGE = "assay.run"
_FOLDER = "bench_sets"


@dataclass(frozen=True)
class BenchSet:
    """One shipped labelled set, as its manifest describes it.

    Attributes:
        name: ``grounding``, ``retrieval`` or ``agents``.
        path: The JSONL file (calibration items).
        items: Items in the file (half labelled 1, half 0).
        task: What is judged, and by which metric.
        labels: Where the labels come from (people, construction, an environment).
        licences: Source -> its licence.
    """

    name: str
    path: Path
    items: int
    task: str
    labels: str
    licences: dict[str, str]


def _folder() -> Path:
    return Path(str(resources.files(_PACKAGE).joinpath(_FOLDER)))


def bench_sets() -> dict[str, BenchSet]:
    """The shipped sets by name, read from their manifest.

    Raises:
        ConfigError: the manifest is missing or damaged (a broken install).
    """
    folder = _folder()
    try:
        manifest = json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))
        return {
            name: BenchSet(
                name=name,
                path=folder / entry["file"],
                items=int(entry["items"]),
                task=str(entry["task"]),
                labels=str(entry["labels"]),
                licences={source: str(s["licence"]) for source, s in entry["sources"].items()},
            )
            for name, entry in manifest["sets"].items()
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the bench sets in {folder} cannot be read ({exc}); reinstall assay") from None


def dev_note() -> str:
    """What the manifest says about where the items come from (they are dev items)."""
    manifest = json.loads((_folder() / "MANIFEST.json").read_text(encoding="utf-8"))
    return str(manifest["note"])


@dataclass
class BenchCell:
    """One judge on one set.

    Attributes:
        judge: The judge as given (``local``, ``openai:gpt-4o-mini``).
        set: The set's name.
        calibration: What :func:`~assay.run.calibrate` measured (``None`` when it could not run).
        cost: Calls, tokens and cost of this judge on this set.
        seconds: Wall time of the judging (the local model's loading not included).
        error: Why this pair has no figures (every call failed, nothing scored, the judge
            could not be built); ``None`` when it has them.
    """

    judge: str
    set: str
    calibration: Calibration | None
    cost: CostReport
    seconds: float
    error: str | None = None

    @property
    def agreement(self) -> Agreement | None:
        """The figures over scored items; ``None`` for an error."""
        return None if self.error is not None or self.calibration is None else self.calibration.overall

    @property
    def unscored(self) -> int:
        """Items judged without a verdict (left out of the figures)."""
        return 0 if self.calibration is None else sum(self.calibration.unscored.values())

    @property
    def run_id(self) -> str | None:
        """The stored calibration run (``assay runs show RUN_ID``)."""
        return None if self.calibration is None else self.calibration.run_id


@dataclass
class BenchResult:
    """Every judge on every chosen set.

    Attributes:
        judges: The judges as given, in order (the columns).
        sets: The chosen sets, in order (the rows).
        cells: ``(judge, set name)`` -> its figures or its error.
        limit: The per-set item limit, if any.
    """

    judges: list[str]
    sets: list[BenchSet]
    cells: dict[tuple[str, str], BenchCell] = field(default_factory=dict)
    limit: int | None = None

    def cell(self, judge: str, set_name: str) -> BenchCell:
        """The figures (or error) of ``judge`` on ``set_name``."""
        return self.cells[(judge, set_name)]

    @property
    def failed(self) -> dict[str, str]:
        """Judge -> its first error, for every judge with an error on some set."""
        out: dict[str, str] = {}
        for (judge, _), cell in self.cells.items():
            if cell.error is not None:
                out.setdefault(judge, cell.error)
        return out


def _error(cal: Calibration, cost: CostReport) -> str | None:
    """Why a calibration gave no figures, or ``None`` if it did."""
    if cost.every_call_failed:
        return cost.failure()  # the words every door uses
    if cal.overall.n == 0:
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(cal.unscored.items())) or "none judged"
        return f"no item got a verdict ({reasons})" + (
            f"; first call error: {cost.first_error}" if cost.first_error else ""
        )
    return None


def _minimal_answer(_: object, request: JudgeRequest) -> str:
    schema = request.schema.model_json_schema() if request.schema is not None else {}
    return json.dumps(minimal_instance(schema))


def _warm_up(sets: Sequence[BenchSet], limit: int | None, progress: ProgressMode | bool | None) -> None:
    """Judge every item to be judged once with a scripted judge (instant answers), nothing stored.

    The model-free work of a metric is done once per process and kept: the verifier's
    sentence encoder loads on first use and embeds each long context once (cached by
    text). Without this pass, the first judge's seconds would carry all of that and the
    judges' seconds would not compare.
    """
    judge = FunctionJudge(_minimal_answer, name="warm-up", record=False)
    verifier = StatementVerifier()
    todo = [item for s in sets for item in read_items(s.path, limit=limit)[0]]
    reporter = make_reporter(progress)
    reporter.start("preparing the items (model-free steps, once)", len(todo), 0)

    async def one(item: CalibrationItem) -> None:
        await judge_item(item, judge, verifier)
        reporter.advance(1, "")

    async def every() -> None:
        await asyncio.gather(*(one(item) for item in todo))

    try:
        asyncio.run(every())
    finally:
        reporter.close()


def bench_judges(
    judges: Sequence[str | JudgeModel],
    *,
    sets: Sequence[str] | None = None,
    base_url: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    store: str | Path = ".assay/runs.sqlite",
    prices: PriceTable | None = None,
    progress: ProgressMode | bool | None = "auto",
    on_start: Callable[[str, BenchSet], None] | None = None,
) -> BenchResult:
    """Run each judge on the same shipped labelled items and measure its agreement.

    Each (judge, set) pair is a :func:`~assay.run.calibrate` run, stored in ``store``
    like any calibration (so its figures attach to that judge as a calibration does).
    A judge that cannot be built, or whose every call fails on a set, gets an error in
    its cells; it is not asked again on the next sets.

    Args:
        judges: Judge strings (``"local"``, ``"openai:gpt-4o-mini"``) or judges, one column
            each (a judge's column is named by its model id, and its confidence if it has
            one: ``openai:gpt-4o-mini+samples:5``).
        sets: Which sets (default :data:`BENCH_SETS`, all of them).
        base_url: Server URL for ``openai:`` judges.
        limit: Judge only the first N items of each set (the files keep any prefix balanced).
        seed: Seed of the bootstrap confidence intervals.
        store: The run store (SQLite path).
        prices: Token prices for the cost (default :meth:`PriceTable.load`).
        progress: How to show progress (as :func:`assay.evaluate`).
        on_start: Called before each judge starts on each set.

    Raises:
        ConfigError: an unknown set, a duplicate judge, or no judge at all.
        KeyboardInterrupt: interrupted; what was judged is stored.
    """
    if not judges:
        raise ConfigError("name at least one judge (--judge local, --judge openai:MODEL)")
    names = [judge_name(j) for j in judges]
    if len(set(names)) != len(names):
        raise ConfigError(f"a judge is named twice: {', '.join(names)}")
    available = bench_sets()
    chosen = list(dict.fromkeys(sets or BENCH_SETS))
    unknown = [s for s in chosen if s not in available]
    if unknown:
        raise ConfigError(f"unknown set {', '.join(unknown)}; the sets are {', '.join(available)}")
    if base_url is not None:
        refuse_unread_base_url(*judges)
    prices = prices or PriceTable.load()
    result = BenchResult(names, [available[s] for s in chosen], limit=limit)
    _warm_up(result.sets, limit, progress)
    for name, given in zip(names, judges, strict=True):
        failure: str | None = None
        model: JudgeModel | None = None
        try:
            model = get_judge(given, base_url=base_url) if isinstance(given, str) else given
            if isinstance(model, LocalJudge):
                reporter = make_reporter(progress)
                try:
                    load_local_judge(model, reporter)
                finally:
                    reporter.close()
        except AssayError as exc:
            failure = f"{type(exc).__name__}: {exc}"
        for bench_set in result.sets:
            if failure is not None or model is None:
                why = failure or "the judge could not be built"
                result.cells[(name, bench_set.name)] = BenchCell(
                    name, bench_set.name, None, CostReport(prices), 0.0, why
                )
                continue
            if on_start is not None:
                on_start(name, bench_set)
            started = time.perf_counter()
            cal = calibrate(bench_set.path, model, limit=limit, seed=seed, store=store, progress=progress)
            seconds = time.perf_counter() - started
            cost = CostReport(prices)
            for outcome in cal.outcomes:
                cost.add(outcome.score.calls)
            error = _error(cal, cost)
            result.cells[(name, bench_set.name)] = BenchCell(name, bench_set.name, cal, cost, seconds, error)
            if cost.every_call_failed:
                failure = f"not asked: every call failed on {bench_set.name}"
    return result
