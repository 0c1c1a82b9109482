"""The ``assay`` pytest plugin: judge outputs inside your tests, and keep the session as a run.

Registered under the ``pytest11`` entry point ``assay``, so installing assay enables it.
It adds the ``assay_judge`` fixture (the judge named by ``--assay-judge``, else
``$ASSAY_JUDGE``, else ``local``, at the server ``--assay-base-url``, else
``$ASSAY_BASE_URL``, else the judge's own default; built once per session) and three
assertions::

    from assay.pytest_plugin import assert_faithful, assert_grade, assert_scores

    def test_answer_is_grounded(assay_judge):
        assert_faithful(sample, min=0.8, judge=assay_judge)

    def test_tone(assay_judge):
        assert_grade(sample, "The reply is polite.", judge=assay_judge)

    def test_rag_answer(assay_judge):  # several metrics at once, as DeepEval's assert_test
        assert_scores(sample, ["faithfulness", "answer_relevancy"], min={"faithfulness": 0.8}, judge=assay_judge)

A failing assertion lists every unsupported statement (or failing criterion) with the
judge's reason, and no frame of this plugin. An unscored result (parse failure, refusal,
no statements...) fails with its reason: it never passes silently. A sample is checked as
``assay run`` checks a row, before any judging: one that lacks a field the metric needs
(``contexts`` for faithfulness) fails with ``assay: invalid sample: missing or empty field
'contexts'``, and is kept in the session's run as an invalid row.

Every assertion of a session is kept as one run in the run store (``--assay-store``,
default ``.assay/runs.sqlite``; ``none`` keeps nothing), one result per assertion with
the test's id and outcome in the sample's metadata. At the end pytest prints the run id
and, per metric, the mean over scored assertions, the unscored count by reason and the
failed assertions; ``--assay-report PATH`` also writes the run's HTML report. ``assay
runs show RUN_ID``, ``assay report RUN_ID`` and ``assay gate`` read the run like any other.
A session cut short (Ctrl-C, an internal error) or with invalid samples is a partial run,
which ``assay gate`` does not pass: the summary says so, and why.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import pytest

from assay._safety import printable, redact_url
from assay._samples import Sample
from assay._scores import MetricSpec, Score, summarize
from assay.analysis import partial_run_reasons
from assay.errors import AssayError, ConfigError, JudgeCallWarning, SampleError, check_threshold, counted
from assay.metrics import BinaryJudgeGrader, Faithfulness, Metric, metrics_from
from assay.models import JudgeModel, get_judge
from assay.run import (
    EvalResult,
    JudgeRecord,
    Row,
    RunSpec,
    RunStatus,
    RunStore,
    SampleResult,
    TrustFigure,
    evaluate,
    new_run_id,
    trust_for,
)
from assay.run._data import NOTES, read_rows, required_fields

__all__ = [
    "SessionRun",
    "assay_judge",
    "assert_faithful",
    "assert_grade",
    "assert_scores",
    "pytest_addoption",
    "pytest_configure",
    "pytest_unconfigure",
    "score_sample",
]

_NO_STORE = "none"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``--assay-*`` options: judge, base URL, store, report, allow-untrusted-judge."""
    group = parser.getgroup("assay", "judging LLM outputs with assay")
    group.addoption(
        "--assay-judge",
        action="store",
        default=None,
        metavar="JUDGE",
        help="Judge for the assay_judge fixture: local, local:/path.gguf, openai:MODEL, anthropic:MODEL "
        "(default: $ASSAY_JUDGE, else local).",
    )
    group.addoption(
        "--assay-base-url",
        action="store",
        default=None,
        metavar="URL",
        help="Server of the assay_judge fixture's judge, e.g. http://127.0.0.1:8765/v1 (default: $ASSAY_BASE_URL, "
        "else the judge's own: $OPENAI_BASE_URL for openai: judges). Only the judge goes there, never your app's "
        "own OpenAI client.",
    )
    group.addoption(
        "--assay-store",
        action="store",
        default=".assay/runs.sqlite",
        metavar="PATH",
        help="Run store that keeps the session's assertions as one run (default: .assay/runs.sqlite; "
        "'none' keeps nothing).",
    )
    group.addoption(
        "--assay-report",
        action="store",
        default=None,
        metavar="PATH",
        help="Also write the session run's self-contained HTML report to PATH.",
    )
    group.addoption(
        "--assay-allow-untrusted-judge",
        action="store_true",
        default=False,
        help="Do not exit 2 when an assertion's judge agrees with people no better than chance (its measured "
        "agreement's 95%% CI reaches 0.5); by default the session exits 2, as 'assay gate' does.",
    )


@dataclass(frozen=True)
class _Assertion:
    """One assert_faithful / assert_grade call: what was judged, and whether it passed."""

    result: SampleResult
    metric: str
    spec: MetricSpec | None
    judge: str
    passed: bool


@dataclass
class SessionRun:
    """The assertions of one pytest session, stored as one run when the session ends.

    Attributes:
        store_path: The run store, or ``None`` (``--assay-store none``).
        report_path: Where to write the HTML report, or ``None``.
        root: The directory pytest was invoked from: relative paths are shown relative
            to it (they were resolved against it, so a test that changes directory
            cannot move the store).
        assertions: Every assertion so far, in the order they ran.
        run_id: The stored run's id, once stored.
        error: Why the run could not be stored or reported, if it could not.
        partial: Why ``assay gate`` would not pass the stored run (it is not finished, or
            has invalid samples), from :func:`assay.analysis.partial_run_reasons`.
        trust: Per metric, how far its judge agrees with people (the last assertion's).
        allow_untrusted_judge: ``--assay-allow-untrusted-judge``: a judge measured near
            chance does not make the session exit 2.
    """

    store_path: Path | None
    report_path: Path | None
    root: Path = field(default_factory=Path.cwd)
    assertions: list[_Assertion] = field(default_factory=list)
    invalid: list[SampleError] = field(default_factory=list)
    run_id: str | None = None
    error: str | None = None
    partial: tuple[str, ...] = ()
    notes: dict[str, list[str]] = field(default_factory=dict)
    """What was taken on trust in a sample (a key of :data:`~assay.run._data._rows.NOTES`) -> the tests, in order."""
    trust: dict[str, TrustFigure] = field(default_factory=dict)
    allow_untrusted_judge: bool = False
    _records: dict[str, JudgeRecord] = field(default_factory=dict)
    _test: str | None = None

    def note_trust(self, result: EvalResult, metrics: Sequence[Metric]) -> None:
        """Keep how far each metric's judge agrees with people, with the user's calibrations in the store."""
        new = result.judge_record
        self.trust.update(result.trust)
        if new is not None and self.store_path is not None and self.store_path.exists():
            try:
                with RunStore(self.store_path) as store:
                    for metric in metrics:
                        stored = store.calibrations(metric.name, new.identity)
                        if stored:
                            self.trust[metric.name] = trust_for(metric.spec(), new, stored)
            except AssayError:
                pass  # a store that cannot be opened is reported when the session stores its run
        if new is not None:
            known = self._records.get(new.identity)
            prompts = {**known.prompts, **new.prompts} if known is not None else new.prompts
            self._records[new.identity] = new.model_copy(update={"prompts": prompts})

    def untrusted(self) -> list[str]:
        """Why the session's judges are not trusted to decide its assertions (empty: they are)."""
        return [figure.untrusted_reason() for figure in self.trust.values() if figure.untrusted]

    @property
    def n_recorded(self) -> int:
        """Assertions and invalid samples so far (each takes one line of the run)."""
        return len(self.assertions) + len(self.invalid)

    def add(self, sample: Sample, score: Score, judge: str, check: str, passed: bool) -> None:
        """Keep one assertion's sample and score, with the test that made it."""
        metadata = {**sample.metadata, "pytest": {"test": self._test, "check": check, "passed": passed}}
        kept = sample.model_copy(update={"metadata": metadata})
        result = SampleResult(sample=kept, scores={score.metric: score}, line=self.n_recorded + 1)
        self.assertions.append(_Assertion(result, score.metric, score.spec, judge, passed))

    def add_invalid(self, problem: str) -> None:
        """Keep a sample that could not be read (it fails its test before any judging)."""
        where = f"{self._test}: " if self._test else ""
        self.invalid.append(SampleError(f"{where}invalid sample: {problem}", line=self.n_recorded + 1))

    def add_notes(self, notes: Sequence[str]) -> None:
        """Note what was taken on trust in a sample (``contexts`` given as one string), said once at the end."""
        for note in notes:
            self.notes.setdefault(note, []).append(self._test or "?")

    def note_lines(self) -> list[str]:
        """Each note once, in the words ``assay run`` and ``evaluate`` use, with the tests it came from."""
        lines = []
        for key, tests in self.notes.items():
            named = list(dict.fromkeys(tests))
            more = f" and {len(named) - _TESTS_SHOWN} more" if len(named) > _TESTS_SHOWN else ""
            rows = f"{counted(len(tests), 'sample')} ({', '.join(named[:_TESTS_SHOWN])}{more})"
            lines.append("assay: note: " + NOTES[key].format(rows=rows))
        return lines

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> object:
        """Know which test the assertions come from."""
        self._test = item.nodeid
        try:
            return (yield)
        finally:
            self._test = None

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Store the run (and write its report) once every test has run; exit 2 on an untrusted judge."""
        if self.untrusted() and not self.allow_untrusted_judge and exitstatus in (0, 1):
            session.exitstatus = 2  # as 'assay gate': a pass or a fail decided by a coin is neither
        if not self.n_recorded or self.store_path is None:
            return
        status: RunStatus = "finished"
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            status = "interrupted"
        elif exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            status = "failed"
        try:
            self.run_id = self._store(self.store_path, status)
            if self.report_path is not None:
                from assay.report import write_report

                write_report(self.store_path, self.run_id, self.report_path)
        except (AssayError, OSError) as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def _store(self, path: Path, status: RunStatus) -> str:
        from assay import __version__

        specs: dict[str, MetricSpec] = {}
        for assertion in self.assertions:
            specs.setdefault(assertion.metric, assertion.spec or MetricSpec(name=assertion.metric))
        judges = ", ".join(dict.fromkeys(a.judge for a in self.assertions)) or "none"
        spec = RunSpec(
            run_id=new_run_id(),
            dataset="pytest session",
            # A session cut short does not know how many assertions it would have made.
            n_rows=self.n_recorded if status == "finished" else None,
            judge=judges,
            judge_model=judges,
            # One judge: recorded exactly (its prompts are the metrics' own, in their specs).
            judge_record=next(iter(self._records.values())) if len(self._records) == 1 else None,
            metrics=tuple(specs.values()),
            options={"assertions": len(self.assertions), "failed_assertions": self._n_failed()},
            engine="pytest",
            assay_version=__version__,
        )
        with RunStore(path) as store:
            store.create(spec)
            for assertion in self.assertions:
                store.record(spec.run_id, assertion.result, row_key=str(assertion.result.line))
            for error in self.invalid:
                store.record_error(spec.run_id, error)
            store.set_status(spec.run_id, status)
            self.partial = partial_run_reasons(store.coverage(spec.run_id))
        return spec.run_id

    def _n_failed(self) -> int:
        return sum(not a.passed for a in self.assertions)

    def summary_lines(self) -> list[str]:
        """What the terminal summary prints: the run, then one line per metric."""
        if not self.n_recorded:
            return self.note_lines()
        n = len(self.assertions)
        judges = ", ".join(dict.fromkeys(a.judge for a in self.assertions)) or "none"
        counts = f"{n} assertion{'s' if n != 1 else ''}, {self._n_failed()} failed, judge {judges}"
        if self.invalid:
            counts += f", {len(self.invalid)} invalid sample{'s' if len(self.invalid) != 1 else ''}"
        if self.store_path is None:
            lines = [f"assay: {counts} (not stored: --assay-store none)"]
        elif self.run_id is None:
            lines = [f"assay: {counts}; the run could not be stored in {self._shown(self.store_path)}: {self.error}"]
        else:
            lines = [f"assay: run {self.run_id} stored in {self._shown(self.store_path)}: {counts}"]
            lines += [f"assay: a partial run, which 'assay gate' does not pass: {reason}" for reason in self.partial]
        names = list(dict.fromkeys(a.metric for a in self.assertions))
        for name in names:
            mine = [a for a in self.assertions if a.metric == name]
            s = summarize(name, (a.result.scores[name] for a in mine))
            mean = "—" if math.isnan(s.mean) else f"{s.mean:.3f}"
            reasons = ", ".join(f"{reason} {k}" for reason, k in s.unscored_by_reason.items())
            unscored = f"unscored {s.n_unscored}" + (f" ({reasons})" if reasons else "")
            failed = sum(not a.passed for a in mine)
            lines.append(
                f"  {name}: mean {mean}, scored {s.n_scored}, {unscored}, failed assertions {failed} of {len(mine)}"
            )
            if name in self.trust:
                lines.append(f"    {self.trust[name].text()}")
        for reason in self.untrusted():
            said = "gated anyway (--assay-allow-untrusted-judge)" if self.allow_untrusted_judge else "exit 2"
            lines.append(f"assay: {said}: {reason}")
        lines += self.note_lines()
        if self.report_path is not None:
            shown = self._shown(self.report_path)
            if self.run_id is not None and self.error is None:
                lines.append(f"assay: report written to {shown}")
            elif self.run_id is not None:
                lines.append(f"assay: the report could not be written to {shown}: {self.error}")
        return lines

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Print the run id, the per-metric summary and the report's path."""
        lines = self.summary_lines()
        if not lines:
            return
        terminalreporter.section("assay")
        for line in lines:
            terminalreporter.write_line(printable(line, markup=False))


_TESTS_SHOWN = 3

_SESSIONS: list[tuple[pytest.Config, SessionRun]] = []
"""The active sessions, innermost last (pytester runs sessions inside a session)."""


def pytest_configure(config: pytest.Config) -> None:
    """Start keeping this session's assertions."""
    store = str(config.getoption("--assay-store"))
    report = config.getoption("--assay-report")
    if report is not None and store.lower() == _NO_STORE:
        raise pytest.UsageError("--assay-report needs the run store; drop '--assay-store none'")
    root = config.invocation_params.dir
    session = SessionRun(
        store_path=None if store.lower() == _NO_STORE else root / store,
        report_path=root / str(report) if report is not None else None,
        root=root,
        allow_untrusted_judge=bool(config.getoption("--assay-allow-untrusted-judge")),
    )
    config.pluginmanager.register(session, "assay-session-run")
    _SESSIONS.append((config, session))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop keeping assertions for this session."""
    _SESSIONS[:] = [(c, s) for c, s in _SESSIONS if c is not config]


def _current() -> SessionRun | None:
    return _SESSIONS[-1][1] if _SESSIONS else None


@pytest.fixture(scope="session")
def assay_judge(request: pytest.FixtureRequest) -> JudgeModel:
    """The judge named by ``--assay-judge``, else ``$ASSAY_JUDGE``, else ``local`` (built once per session).

    Its server is ``--assay-base-url``, else ``$ASSAY_BASE_URL``, else the judge's own
    default (``$OPENAI_BASE_URL`` for ``openai:``).
    """
    spec = request.config.getoption("--assay-judge") or os.environ.get("ASSAY_JUDGE") or "local"
    base_url = request.config.getoption("--assay-base-url") or os.environ.get("ASSAY_BASE_URL") or None
    judge = get_judge(str(spec), base_url=str(base_url) if base_url else None)
    if base_url and judge.model_id.startswith("local:"):
        # get_judge has nowhere to send it: the run would silently be the local model's.
        raise pytest.UsageError(
            f"assay: --assay-base-url (or $ASSAY_BASE_URL) {redact_url(str(base_url))} is the server of an "
            f"openai: or anthropic: judge, but the judge is {judge.model_id}, which runs in-process: name the "
            "server's judge with --assay-judge (e.g. openai:fake-word-overlap for 'assay judges fake')"
        )
    return judge


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _without_assay_frames(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """``function`` raising assay's own errors from the caller's line, with no frame of assay below it.

    ``__tracebackhide__`` hides only the frame that sets it: a ``ConfigError`` raised in
    ``check_threshold`` (errors.py) or the metric registry still showed their whole source.
    An :class:`~assay.errors.AssayError` is a mistake the person fixes from its message (a
    bad ``min``, a misspelt metric, an invalid sample), so it is raised afresh here, its
    traceback and chain dropped; any other exception is assay's bug and keeps every frame.
    """

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        __tracebackhide__ = True
        try:
            return function(*args, **kwargs)
        except AssayError as exc:
            raise exc.with_traceback(None) from None

    return wrapper


def _as_sample(sample: Sample | Mapping[str, Any], metrics: Sequence[Metric]) -> Sample:
    """The sample, checked as every door checks a row (a field ``metrics`` need included), or a failure.

    What the check took on trust (``contexts`` given as one string) is noted once for the
    session, in the words ``assay run`` and ``evaluate`` use.
    """
    __tracebackhide__ = True
    (item,) = read_rows([sample], required=required_fields(metrics), source=None)
    session = _current()
    if isinstance(item, Row):
        if session is not None:
            session.add_notes(item.notes)
        return item.sample
    problem = item.detail
    if session is not None:
        session.add_invalid(problem)
    raise SampleError(f"assay: invalid sample: {problem}")


def _evaluate_one(sample: Sample, metrics: Sequence[Metric], judge: JudgeModel | str | None) -> EvalResult:
    """``evaluate`` on one sample; a failed call's warning is left to the assertion, which shows the reason."""
    __tracebackhide__ = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeCallWarning)
        return evaluate([sample], metrics, judge, progress=False)


def _judged(sample: Sample, metric: Metric, judge: JudgeModel | str | None) -> tuple[Score, str]:
    __tracebackhide__ = True
    result = _evaluate_one(sample, [metric], judge)
    if result.errors:
        raise AssertionError(f"assay: invalid sample: {result.errors[0]}")
    session = _current()
    if session is not None:
        session.note_trust(result, [metric])
    return result.results[0].scores[metric.name], result.judge


@_without_assay_frames
def score_sample(sample: Sample | Mapping[str, Any], metric: Metric, judge: JudgeModel | str | None = None) -> Score:
    """Score one sample with one metric (judge: a model, a judge string, or ``None`` for the default)."""
    __tracebackhide__ = True
    return _judged(_as_sample(sample, [metric]), metric, judge)[0]


def _describe(score: Score, sample: Sample, what: str) -> str:
    # The judge's words and the sample's text are untrusted: no raw control character
    # reaches the terminal that shows the failure (assay._safety.printable).
    def shown(text: object) -> str:
        return printable(text, markup=False)

    lines = [f"assay {shown(score.metric)} of sample {shown(repr(sample.id))}: {what}"]
    if score.unscored_reason is not None:
        lines.append(f"  unscored ({score.unscored_reason.value}): {shown(score.detail or 'no detail')}")
    for verdict in score.failing:
        lines.append(f"  ✗ {shown(verdict.subject)}\n      judge: {shown(verdict.reason or '(no reason given)')}")
    if score.is_scored and not score.failing and score.explanation:
        lines.append(f"  {shown(score.explanation)}")  # below its minimum with no verdict against it: why
    supported = [v for v in score.verdicts if v.value in (1, "PASS")]
    if supported:
        lines.append(f"  ({len(supported)} of {len(score.verdicts)} verdicts positive)")
    return "\n".join(lines)


def _check(sample: Sample, score: Score, judge: str, check: str, failure: str | None) -> Score:
    """Keep the assertion in the session run, then pass it or fail it with ``failure``."""
    __tracebackhide__ = True
    session = _current()
    if session is not None:
        session.add(sample, score, judge, check, passed=failure is None)
    if failure is not None:
        raise AssertionError(_describe(score, sample, failure))
    return score


def _faithfulness_failure(score: Score, min: float, strict: bool, min_statements: int) -> str | None:
    if not score.is_scored:
        return "unscored, which never passes"
    n = len(score.verdicts)
    if min_statements and n < min_statements:
        return f"{counted(n, 'statement')}, fewer than the required {min_statements}"
    if strict and score.failing:
        return f"{len(score.failing)} unsupported statement(s) (strict)"
    if math.isnan(score.value) or score.value < min - 1e-9:
        return f"score {score.value:.3f} < {min:g}"
    return None


@_without_assay_frames
def assert_faithful(
    sample: Sample | Mapping[str, Any],
    min: float = 0.8,
    judge: JudgeModel | str | None = None,
    strict: bool = False,
    *,
    min_statements: int = 0,
    metric: Faithfulness | None = None,
) -> Score:
    """Assert the answer's faithfulness to its contexts is at least ``min``; return the score.

    Args:
        sample: A :class:`~assay.Sample` or a dict with the same fields.
        min: The lowest passing score.
        judge: A judge model or string (``None``: ``$ASSAY_JUDGE``, else local).
        strict: Any unsupported statement fails, whatever the score.
        min_statements: Fewer statements than this fails (a padding defence).
        metric: A configured :class:`~assay.metrics.Faithfulness` (default ``Faithfulness()``).

    Raises:
        AssertionError: below ``min``, an unsupported statement in strict mode, too few
            statements, or unscored; the message lists each unsupported statement with
            the judge's reason.
    """
    __tracebackhide__ = True
    min = check_threshold(min, "min")  # before any judge call: min=80 is refused, not a failed assertion
    metric = metric or Faithfulness()
    chosen = _as_sample(sample, [metric])
    score, judge_id = _judged(chosen, metric, judge)
    check = f"assert_faithful(min={min:g}{', strict' if strict else ''})"
    return _check(chosen, score, judge_id, check, _faithfulness_failure(score, min, strict, min_statements))


@_without_assay_frames
def assert_grade(
    sample: Sample | Mapping[str, Any],
    grader: Metric | str,
    min: float = 1.0,
    judge: JudgeModel | str | None = None,
) -> Score:
    """Assert a grader scores the sample at least ``min`` (default 1.0: PASS); return the score.

    Args:
        sample: A :class:`~assay.Sample` or a dict with the same fields.
        grader: A grader metric, or a criteria string for a
            :class:`~assay.metrics.BinaryJudgeGrader`.
        min: The lowest passing score.
        judge: A judge model or string (``None``: ``$ASSAY_JUDGE``, else local).

    Raises:
        AssertionError: below ``min`` or unscored (NA included), with the judge's reasoning.
    """
    __tracebackhide__ = True
    min = check_threshold(min, "min")
    metric = BinaryJudgeGrader(grader) if isinstance(grader, str) else grader
    chosen = _as_sample(sample, [metric])
    score, judge_id = _judged(chosen, metric, judge)
    failure = None
    if not score.is_scored:
        failure = "unscored, which never passes"
    elif score.value < min - 1e-9:
        failure = f"score {score.value:.3f} < {min:g}"
    return _check(chosen, score, judge_id, f"assert_grade(min={min:g})", failure)


@_without_assay_frames
def assert_scores(
    sample: Sample | Mapping[str, Any],
    metrics: Sequence[Metric | str],
    min: float | Mapping[str, float] = 0.8,
    judge: JudgeModel | str | None = None,
) -> dict[str, Score]:
    """Assert every metric scores the sample at least its minimum; return the scores by metric name.

    In the spirit of DeepEval's ``assert_test(test_case, metrics=[...])``: the metrics are
    judged together (one evaluation), and the assertion fails if any one of them is below
    its minimum or unscored, listing every failing metric (not only the first) with its
    unsupported statements or failing criteria and the judge's reasons.

    Args:
        sample: A :class:`~assay.Sample` or a dict with the same fields.
        metrics: Metrics, or registry names (``"faithfulness"``, ``"answer_relevancy"``;
            see ``assay metrics``).
        min: The lowest passing score of every metric, or per metric name (metrics not
            named get 0.8, ``assay gate``'s default).
        judge: A judge model or string (``None``: ``$ASSAY_JUDGE``, else local).

    Raises:
        AssertionError: a metric below its minimum or unscored (NA included).
        ConfigError: an unknown metric name, a metric named twice, or a minimum for a
            metric that is not asserted.
    """
    __tracebackhide__ = True
    built = metrics_from(metrics)
    names = [m.name for m in built]
    if isinstance(min, Mapping):
        minimums = {name: check_threshold(value, f"min[{name!r}]") for name, value in min.items()}
    else:
        minimums = dict.fromkeys(names, check_threshold(min, "min"))
    stray = sorted(set(minimums) - set(names))
    if stray:
        raise ConfigError(f"min names {stray[0]!r}, which is not among the metrics asserted ({', '.join(names)})")
    chosen = _as_sample(sample, built)
    result = _evaluate_one(chosen, built, judge)
    if result.errors:
        raise AssertionError(f"assay: invalid sample: {result.errors[0]}")
    scores = dict(result.results[0].scores)
    failures: list[str] = []
    failed: list[str] = []
    session = _current()
    if session is not None:
        session.note_trust(result, built)
    for name in names:
        score, floor = scores[name], minimums.get(name, _DEFAULT_MIN)
        failure = None
        if not score.is_scored:
            failure = "unscored, which never passes"
        elif score.value < floor - 1e-9:
            failure = f"score {score.value:.3f} < {floor:g}"
        if session is not None:
            session.add(chosen, score, result.judge, f"assert_scores(min={floor:g})", passed=failure is None)
        if failure is not None:
            failed.append(name)
            failures.append(_describe(score, chosen, failure))
    if failures:
        passed = [n for n in names if n not in failed]
        tail = f"\n(passed: {', '.join(passed)})" if passed else ""
        raise AssertionError(
            f"{len(failures)} of {counted(len(names), 'metric')} failed\n" + "\n".join(failures) + tail
        )
    return scores


_DEFAULT_MIN = 0.8
