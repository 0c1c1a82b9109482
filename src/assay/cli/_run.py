"""``assay run``: evaluate a dataset with one or more metrics, into the run store."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Annotated, Any, NoReturn

import typer
from rich.table import Table
from rich.text import Text

from assay._safety import REDACTED, printable, redact_url
from assay._scores import Score, Verdict
from assay._sqlite import storage_error
from assay.analysis import DEFAULT_MAX_UNSCORED, judge_models_note
from assay.cli._console import (
    EXIT_BAD_ROWS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNSCORED,
    EXIT_USAGE,
    end_state_lines,
    err_console,
    fmt_score,
    out_console,
)
from assay.cli._envvars import base_url_for, given_for_command
from assay.cli._runs import print_cascade, print_trust, write_export
from assay.errors import (
    AssayError,
    ConfigError,
    JudgeCallWarning,
    JudgeUnavailableError,
    StorageError,
    counted,
    did_you_mean,
)
from assay.integrations.traces import ExportReport
from assay.metrics import Metric, metric_from_spec
from assay.metrics._registry import build_metric
from assay.models import JUDGE_FORMS, ConfidentJudge, Limits
from assay.run import RunSpec, RunStore, SampleResult, new_run_id
from assay.run._cost import PriceTable
from assay.run._data import DEFAULT_MAX_FIELD_CHARS, DEFAULT_MAX_ROW_CHARS, check_format
from assay.run._dryrun import EstimatingJudge, estimate
from assay.run._evaluate import DEFAULT_CACHE_PATH, run_plan
from assay.run._judge_record import JudgeRecord
from assay.run._outcome import EvalResult
from assay.run._plan import RunPlan, judge_kind, plan_run
from assay.run._session import RunOptions
from assay.run._summary import RunSummary
from assay.run._trust import TrustFigure

__all__ = ["DEFAULT_MAX_UNSCORED", "build_metrics", "exit_code", "run"]


def _parse_sets(sets: list[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = defaultdict(dict)
    for item in sets:
        key, eq, value = item.partition("=")
        metric, dot, option = key.partition(".")
        if not eq or not dot or not metric or not option:
            raise ConfigError(f"--set takes METRIC.OPTION=VALUE, got {item!r}")
        options[metric][option] = value
    return dict(options)


def _metric_names(given: list[str] | None) -> list[str]:
    """The metrics ``-m`` names, each option split on commas (``-m faithfulness,context_recall``)."""
    if not given:
        return ["faithfulness"]
    names = [name.strip() for item in given for name in item.split(",") if name.strip()]
    if not names:
        raise ConfigError(f"-m names no metric (got {', '.join(repr(item) for item in given)}); see 'assay metrics'")
    return names


def _parse_mapping(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        source, eq, target = pair.partition("=")
        if not eq or not source or not target:
            raise ConfigError(f"--map takes COLUMN=FIELD (e.g. response=answer), got {pair!r}")
        mapping[source] = target
    return mapping


def build_metrics(names: list[str], options: dict[str, dict[str, str]]) -> list[Metric]:
    """The metrics named on the command line, with their ``--set`` options.

    An error about an option names the ``--set`` it came from (``--set
    faithfulness.threshold=abc: could not convert ...``), and a misspelt metric or option
    gets a suggestion.
    """
    stray = sorted(set(options) - set(names))
    if stray:
        hint = did_you_mean(stray[0], names)
        among = f"--set names metric {stray[0]!r}, which is not among the -m metrics ({', '.join(names)})"
        raise ConfigError(f"{among};{hint}" if hint else among)
    metrics = []
    for name in names:
        given = options.get(name) or {}
        try:
            metrics.append(build_metric(name, given))
        except ConfigError as exc:
            culprit = _culprit(name, given)
            if culprit is None:
                raise
            option, value = culprit
            raise ConfigError(f"--set {name}.{option}={value}: {exc}") from None
    return metrics


def _culprit(name: str, given: dict[str, str]) -> tuple[str, str] | None:
    """The ``--set`` option that makes building metric ``name`` fail, if one alone does."""
    if not given:
        return None
    try:
        build_metric(name)
    except ConfigError:
        return None  # the metric itself is the problem (unknown, or needs an option)
    for option, value in given.items():
        try:
            build_metric(name, {option: value})
        except ConfigError:
            return option, value
    return None


def _print_summary(
    summary: RunSummary,
    run_id: str,
    judge: str,
    elapsed: float,
    store: Path,
    repeats: int = 1,
    *,
    trust: Mapping[str, TrustFigure] | None = None,
    record: JudgeRecord | None = None,
) -> None:
    """The run's summary, computed from every stored record (a resumed run's earlier part too).

    ``trust``: per metric, how far its judge agrees with people, printed under the table;
    ``record``: the judge exactly (weights and layout, build, prompts), printed under its title.
    """
    table = Table(title=f"run {run_id} · judge {printable(judge)} · {elapsed:.1f}s", title_justify="left")
    table.add_column("metric", no_wrap=True, min_width=max((len(n) for n in summary.metrics), default=6))
    table.add_column("mean", justify="right", no_wrap=True)
    table.add_column("scored", justify="right", no_wrap=True)
    table.add_column("unscored (by reason)")
    for name, s in summary.metrics.items():
        first = summary.first_unscored.get(name, {})
        said = [
            f"{r}: {n}" + (f" — first: {printable(_said(first[r]), breaks=False)}" if r in first else "")
            for r, n in s.unscored_by_reason.items()
        ]
        reasons = ("\n" if first else ", ").join(said) or "0"
        table.add_row(printable(name), fmt_score(s.mean), str(s.n_scored), reasons)
    out_console.print(table)
    print_trust(trust or {}, record)
    cost = summary.cost
    invalid = f" · {counted(summary.n_row_errors, 'invalid input row')} (not judged)" if summary.n_row_errors else ""
    out_console.print(
        f"{counted(summary.n_results, 'result')}{invalid} · judge calls {cost.calls} (cached {cost.cached_calls}, "
        f"failed {cost.failed_calls}) · tokens {cost.usage.prompt_tokens:,} in / {cost.usage.completion_tokens:,} "
        f"out · cost {printable(cost.describe())}"
    )
    failure = cost.failure()  # the words evaluate() raises or warns with
    if failure is not None:
        colour = "red" if cost.every_call_failed else "yellow"
        err_console.print(f"[{colour}]{printable(failure, breaks=False)}[/{colour}]", soft_wrap=True)
    models = judge_models_note(cost.models, judge)
    if models:
        err_console.print(f"[bold yellow]warning[/bold yellow]: {printable(models)}", soft_wrap=True)
    for name in summary.metrics:
        lowest = [r for r in summary.lowest.get(name, ())[:5] if r.scores[name].value < 1.0]
        if not lowest:
            continue
        once = f" (each sample once: its lowest of {repeats} repeats)" if repeats > 1 else ""
        title = f"lowest {printable(name)}{once}"
        low = Table(title=title, title_justify="left", show_lines=True)
        low.add_column("line", justify="right", no_wrap=True)
        low.add_column("id", overflow="fold")
        low.add_column("score", justify="right", no_wrap=True)
        low.add_column("failing verdicts (judge's reason)")
        anchored = any(any(v.spans for v in r.scores[name].verdicts) for r in lowest)
        if anchored:
            low.add_column("in the answer (unsupported in red)")
        for r in lowest:
            score = r.scores[name]
            failing = "\n".join(_failing_line(v) for v in score.failing)
            end = end_state_lines(score.model_dump(mode="json", include={"details"}))
            if end:  # an agent score: what was done, then the requirements not met
                failing = "\n".join([*end, failing]) if failing else "\n".join(end)
            if not failing and score.explanation:
                # No verdict counts against it, yet it is below 1 (an extra tool call lowers
                # tool_call_accuracy's precision): its explanation is the reason.
                failing = f"[dim]{printable(score.explanation, breaks=False)}[/dim]"
            row: list[str | Text] = [str(r.line), printable(r.sample.id, breaks=False), fmt_score(score.value)]
            row.append(failing or "—")
            if anchored:
                row.append(_unsupported_in_answer(r.sample.answer or "", score))
            low.add_row(*row)
        out_console.print(low)
    out_console.print(f"stored in {printable(str(store))} as run [bold]{run_id}[/bold] · 'assay runs show {run_id}'")


_EVIDENCE_CHARS = 120
_SENTENCE_CHARS = 240
_SAID_CHARS = 400
_JUDGE_ERROR_NAME = re.compile(r"^((?:[a-z][a-z ]*: )?)_?\w*Judge\w*Error: ")  # after a step ("statement extraction: ")


def _said(detail: str) -> str:
    """An unscored result's detail or a call's error as one summary line, without the judge error's class name."""
    text = " ".join(_JUDGE_ERROR_NAME.sub(r"\1", detail, count=1).split())
    return text if len(text) <= _SAID_CHARS else text[: _SAID_CHARS - 1] + "…"


def _unsupported_in_answer(answer: str, score: Score) -> Text:
    """The answer's sentences that hold an unsupported statement, its words in red; what was dropped, dimmed.

    Built as rich ``Text`` from sanitised pieces (never markup), so answer text cannot style the terminal.
    """
    out = Text()
    failing = [span for v in score.failing for span in v.spans if 0 <= span[0] < span[1] <= len(answer)]
    sentences = score.decomposition.sentences if score.decomposition is not None else ()
    shown: list[tuple[int, int]] = []
    for start, end in failing:
        bounds = next(((s.start, s.end) for s in sentences if s.start <= start and end <= s.end), (start, end))
        if bounds not in shown:
            shown.append(bounds)
    for k, (lo, hi) in enumerate(sorted(shown)):
        if k:
            out.append("\n")
        if hi - lo > _SENTENCE_CHARS:
            hi = lo + _SENTENCE_CHARS
        cuts = sorted({lo, hi, *(p for a, b in failing for p in (a, b) if lo <= p <= hi)})
        for a, b in itertools.pairwise(cuts):
            bad = any(x <= a and b <= y for x, y in failing)
            out.append(printable(answer[a:b], markup=False, breaks=False), style="bold red" if bad else "")
        if hi < next((s.end for s in sentences if s.start == lo), hi):
            out.append("…")
    if score.decomposition is not None and score.decomposition.dropped:
        n = len(score.decomposition.dropped)
        out.append(f"\n{n} statement{'s' if n != 1 else ''} dropped: not what the answer says", style="dim")
    return out if out else Text("—")


def _failing_line(verdict: Verdict) -> str:
    """``✗ statement (reason)``, its flags, and the closest context sentence it was judged against."""
    flags = f" [yellow]{printable(', '.join(verdict.flags))}[/yellow]" if verdict.flags else ""
    subject, reason = printable(verdict.subject, breaks=False), printable(verdict.reason, breaks=False)
    line = f"[red]✗[/red] {subject}{flags} [dim]({reason})"
    if verdict.evidence:
        cited = verdict.evidence[0]
        text = " ".join(cited.text.split())
        text = text if len(text) <= _EVIDENCE_CHARS else text[: _EVIDENCE_CHARS - 1] + "…"
        line += f"\n    closest, context {cited.context + 1}: {printable(repr(text), breaks=False)}"
    calls = (verdict.details or {}).get("cited") or []
    if calls:  # an agent requirement: the tool calls its verdict rests on
        line += "\n    cites " + printable(" | ".join(str(c) for c in calls), breaks=False)
    return line + "[/dim]"


def exit_code(summary: RunSummary, max_unscored: float, run_id: str | None = None) -> tuple[int, str | None]:
    """``assay run``'s exit code for a finished run, and why it is not 0.

    3 when nothing was scored, when any result is an error (the judge could not be
    asked, or assay raised: never tolerated, whatever ``max_unscored``), or when more than
    ``max_unscored`` of the (sample, metric) results are unscored (a grader's NA is a
    verdict and does not count); else 2 when some input rows were invalid; else 0.
    """
    if summary.n_results == 0 and summary.n_row_errors:
        return EXIT_UNSCORED, (
            f"nothing was judged: every input row ({summary.n_row_errors}) was invalid; each is listed above"
        )
    if summary.n_scored == 0:
        return EXIT_UNSCORED, f"nothing was scored: {summary.n_unscored} unscored results, 0 scored"
    if summary.n_errors:
        n = summary.n_errors
        again = f"'assay run --resume {run_id}'" if run_id else "'assay run --resume RUN'"
        return EXIT_UNSCORED, (
            f"{n} result{'s are errors' if n != 1 else ' is an error'}, not verdicts (first: "
            f"{_said(summary.first_error() or '')}); {again} judges {'them' if n != 1 else 'it'} again"
        )
    share = summary.unscored_share
    if share > max_unscored:
        return EXIT_UNSCORED, (
            f"{summary.n_unscored} of {summary.n_scored + summary.n_unscored} results are unscored "
            f"({share:.1%}, above --max-unscored {max_unscored:.0%}); the mean covers only what was judged"
        )
    if summary.n_row_errors:
        return (
            EXIT_BAD_ROWS,
            f"{counted(summary.n_row_errors, 'input row')} {'was' if summary.n_row_errors == 1 else 'were'} "
            "invalid and not judged",
        )
    return EXIT_OK, None


INTERRUPT_GRACE_S = 15.0
"""After Ctrl-C, how long in-flight calls may take to wind down before the process exits anyway."""


class _bounded_interrupt:
    """Ctrl-C raises KeyboardInterrupt as usual, and also arms a watchdog.

    Every finished sample is already committed, so nothing is lost by not waiting: if the
    run has not wound down within ``INTERRUPT_GRACE_S`` (a call that ignores
    cancellation, a stuck connection), ``give_up`` marks the run interrupted and the
    process exits 130. A Ctrl-C must never hang the terminal or a CI job.
    """

    def __init__(self, give_up: Callable[[], None]) -> None:
        self.give_up = give_up
        self.previous: Any = None
        self.fired = False

    def _handler(self, signum: int, frame: Any) -> None:
        self.fired = True
        timer = threading.Timer(INTERRUPT_GRACE_S, self.give_up)
        timer.daemon = True
        timer.start()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C interrupts the clean-up
        raise KeyboardInterrupt

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handler)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        if self.fired and error is not None and not isinstance(error, KeyboardInterrupt):
            # The KeyboardInterrupt can land inside a library that wraps what it raises (pydantic's
            # serializer turns it into PydanticSerializationError): it is still the Ctrl-C.
            raise KeyboardInterrupt from error


def _mark_interrupted(store_path: Path, run_id: str) -> None:
    """What the CLI tells the user ("interrupted, resume with ...") is what the store says.

    The run's own clean-up records the interruption; a fresh connection makes sure of it
    even when that clean-up was cut short (a full-suite run once left a Ctrl-C'd run
    'running' after exit 130).
    """
    if not store_path.is_file():  # interrupted before the run existed: nothing to mark, nothing to create
        return
    with RunStore(store_path) as store:
        store.mark_interrupted(run_id)


def _give_up(store_path: Path, run_id: str) -> None:
    """The watchdog's end: record the interruption from this thread, then exit at once."""
    try:
        _mark_interrupted(store_path, run_id)
    finally:
        err_console.print(
            f"[yellow]interrupted[/yellow] (in-flight calls did not stop within {INTERRUPT_GRACE_S:g} s): every "
            f"finished sample is stored. Continue with [bold]assay run --resume {run_id}[/bold]"
        )
        os._exit(EXIT_INTERRUPTED)


def _dry_run(plan: RunPlan, prices: PriceTable) -> int:
    """Estimate the run; its exit code is the one the real run's rows would give (2: some invalid, 3: all)."""
    judge_id, data, metrics = plan.judge.model_id, plan.data, list(plan.metrics)
    estimator = EstimatingJudge(judge_id, per_statement=plan.judge.prefers_per_statement)
    confidence = plan.judge.confidence if isinstance(plan.judge, ConfidentJudge) else None
    # Read and checked as a real run reads it: a field no row has stops the dry run too.
    result = estimate(
        data,
        metrics,
        estimator,
        progress=plan.progress,
        prices=prices,
        confidence=confidence,
        mapping=plan.mapping,
        repeats=plan.repeats,
        reasks=0,
        max_field_chars=plan.max_field_chars,
        max_row_chars=plan.max_row_chars,
    )
    usd = prices.cost(judge_id, estimator.usage)
    named = judge_id if confidence is None else f"{judge_id}+{confidence.spec} ({confidence.calls} calls per P)"
    table = Table(title=f"dry run · {data} · judge {named} · nothing was called", title_justify="left")
    for column in ("samples", "invalid rows", "judge calls", "prompt tokens", "completion tokens", "cost"):
        table.add_column(column, justify="right")
    table.add_row(
        str(result.n_samples),
        str(len(result.errors)),
        f"{estimator.calls:,}",
        f"~{estimator.usage.prompt_tokens:,}",
        f"~{estimator.usage.completion_tokens:,}",
        "unknown (no price)" if usd is None else f"~${usd:.4f}",
    )
    out_console.print(table)
    out_console.print(
        "[dim]Estimates: statements counted as sentences, reasons of typical length, 4 characters a "
        "token; the cache would make repeated calls free.[/dim]"
    )
    if result.errors and not result.n_samples:
        err_console.print(f"nothing would be judged: every row of {printable(str(data))} is invalid")
        return EXIT_UNSCORED
    return EXIT_BAD_ROWS if result.errors else EXIT_OK


_DRY_RUN_KEY = "dry-run: no call is made"

# Options that change results: a resumed run uses the stored ones, so giving one of
# these with --resume is an error rather than silently ignored or silently applied.
_RESULT_OPTIONS = (
    "metric",
    "set_",
    "judge",
    "strategy",
    "decomposer",
    "map_",
    "timeout",
    "retries",
    "reasks",
    "repeats",
    "temperature",
    "cache",
    "engine",
    "max_field_chars",
    "max_row_chars",
    "escalate",
    "agreement",
    "delta",
)


def _given(ctx: typer.Context, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` were given on the command line (or by environment variable)."""
    given: list[str] = []
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            given.append("--" + name.rstrip("_").replace("_", "-") if name != "data" else "DATA")
    return given


def _resume_base_url(stored: str | None, given: str | None, run_id: str) -> str | None:
    """The base URL to resume with: the stored one, or the given one when credentials were redacted.

    Another URL is another judge (another server may serve another model under the name):
    refused, as another ``--judge`` is, never silently replaced by the stored one.
    """
    if given is not None and redact_url(given) != stored:
        raise ConfigError(
            f"run {run_id} was judged at {stored or 'the judge default URL'}; --resume keeps the run's judge, so "
            f"--base-url {redact_url(given)} (or OPENAI_BASE_URL) would mix two judges in one run. Drop it to "
            "resume at the run's own URL, or start a new run for the other server"
        )
    if stored is None or REDACTED not in stored:
        return stored
    if given is None or redact_url(given) != stored:
        raise ConfigError(
            f"run {run_id} was judged at {stored}, whose credentials were not stored; pass the same "
            "--base-url (or OPENAI_BASE_URL) again to resume it"
        )
    return given


def _stored_metrics(spec: RunSpec) -> list[Metric]:
    """The run's own metrics, rebuilt from their stored specs (any metric, not only registry names)."""
    return [metric_from_spec(m) for m in spec.metrics]


DataArg = Annotated[
    Path | None,
    typer.Argument(
        help="JSONL, CSV, Parquet or a JSON array: id, question, answer, contexts, reference; "
        "or an OTLP JSON export of spans (one row per trace)."
    ),
]
MetricOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--metric", "-m", help="Metric to compute (repeatable, or a comma-separated list); see 'assay metrics'."
    ),
]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="A metric option: METRIC.OPTION=VALUE (repeatable).")]
JudgeOpt = Annotated[
    str,
    typer.Option(
        "--judge",
        "-j",
        envvar="ASSAY_JUDGE",
        help=f"Judge: {JUDGE_FORMS}. An API judge gives a confidence for its verdicts with +logprobs or "
        "+samples:K after the model (openai:gpt-4o-mini+logprobs).",
    ),
]
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", envvar="OPENAI_BASE_URL", help="Server URL for openai: judges.")
]
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Also write one JSON line per sample here.")]
ExportOpt = Annotated[
    str | None,
    typer.Option(
        "--export",
        help="Also send each result as it finishes to otlp, phoenix or langfuse, as 'assay export' would (same ids).",
    ),
]
StoreOpt = Annotated[Path, typer.Option("--store", help="The run store (SQLite).")]
ResumeOpt = Annotated[
    str | None, typer.Option("--resume", help="Continue run RUN_ID; finished samples are not judged again.")
]
StrategyOpt = Annotated[str | None, typer.Option(help="Faithfulness verdicts: auto, per_statement, batch.")]
DecomposerOpt = Annotated[
    str | None,
    typer.Option(help="How faithfulness finds statements: anchored (the default), llm, sentences or hybrid."),
]
MapOpt = Annotated[list[str] | None, typer.Option("--map", help="Rename an input column: COLUMN=FIELD (repeatable).")]
ConcurrencyOpt = Annotated[int | None, typer.Option(min=1, help="Samples and calls in flight at once.")]
RpmOpt = Annotated[float | None, typer.Option(min=0.001, help="Requests-per-minute budget.")]
TpmOpt = Annotated[float | None, typer.Option(min=1, help="Tokens-per-minute budget.")]
TimeoutOpt = Annotated[float, typer.Option(min=0.001, help="Seconds per judge call before it is retried.")]
RetriesOpt = Annotated[int, typer.Option(min=0, help="Retries of a call after 429/5xx/timeouts.")]
ReasksOpt = Annotated[int, typer.Option(min=0, help="Re-asks of a judge whose answer is invalid.")]
RepeatsOpt = Annotated[int, typer.Option(min=1, help="Judge each sample this many times.")]
TemperatureOpt = Annotated[
    float | None,
    typer.Option(min=0.0, help="Sampling temperature of every judge call (default: 0); use with --repeats."),
]
MaxUnscoredOpt = Annotated[
    float,
    typer.Option(
        min=0.0, max=1.0, help="Exit 3 when more than this share of results is unscored (a grader's NA does not count)."
    ),
]
CacheOpt = Annotated[
    bool, typer.Option(help="Answer identical judge calls, and the scores made only of them, from .assay/cache.sqlite.")
]
CachePathOpt = Annotated[Path, typer.Option(help="The judge-call cache.")]
PricesOpt = Annotated[
    Path | None, typer.Option(envvar="ASSAY_PRICES", help="JSON price table overriding the built-in one.")
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Estimate calls, tokens and cost; call nothing.")]
EngineOpt = Annotated[str, typer.Option(help="Where judge calls run: local or ray.")]
AddressOpt = Annotated[
    str | None, typer.Option(envvar="RAY_ADDRESS", help="Ray cluster: auto, HOST:PORT or ray://HOST:10001.")
]
WorkersOpt = Annotated[int, typer.Option(min=1, help="Ray engine: worker processes (each builds the judge once).")]
ProgressOpt = Annotated[str, typer.Option(help="auto (a bar on a terminal, plain lines in logs), bar, plain or none.")]
MaxFieldOpt = Annotated[
    int,
    typer.Option(min=1, help="Longest text a field may hold (characters); a row with a longer one is an invalid row."),
]
EscalateOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--escalate",
        help="A cascade: the next judge for what the one before is not sure of (repeatable, cheapest first); "
        "'review' last leaves the rest to people. Needs --agreement and each judge's stored calibration; an API "
        "judge before the last level needs a confidence (openai:MODEL+logprobs, MODEL+samples:K).",
    ),
]
AgreementOpt = Annotated[
    float | None,
    typer.Option("--agreement", help="A cascade's target agreement with people on the verdicts kept (e.g. 0.9)."),
]
DeltaOpt = Annotated[
    float | None, typer.Option("--delta", help="A cascade's chance that the guarantee fails (default 0.1).")
]
MaxRowOpt = Annotated[
    int, typer.Option(min=1, help="Most text a row may hold in all (characters); a row with more is invalid.")
]


def run(
    ctx: typer.Context,
    data: DataArg = None,
    metric: MetricOpt = None,
    set_: SetOpt = None,
    judge: JudgeOpt = "local",
    base_url: BaseUrlOpt = None,
    out: OutOpt = None,
    export: ExportOpt = None,
    store_path: StoreOpt = Path(".assay/runs.sqlite"),
    resume: ResumeOpt = None,
    strategy: StrategyOpt = None,
    decomposer: DecomposerOpt = None,
    map_: MapOpt = None,
    concurrency: ConcurrencyOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    timeout: TimeoutOpt = 120.0,
    retries: RetriesOpt = 5,
    reasks: ReasksOpt = 1,
    repeats: RepeatsOpt = 1,
    temperature: TemperatureOpt = None,
    max_unscored: MaxUnscoredOpt = DEFAULT_MAX_UNSCORED,
    cache: CacheOpt = True,
    cache_path: CachePathOpt = DEFAULT_CACHE_PATH,
    prices: PricesOpt = None,
    dry_run: DryRunOpt = False,
    engine: EngineOpt = "local",
    address: AddressOpt = None,
    workers: WorkersOpt = 2,
    progress: ProgressOpt = "auto",
    max_field_chars: MaxFieldOpt = DEFAULT_MAX_FIELD_CHARS,
    max_row_chars: MaxRowOpt = DEFAULT_MAX_ROW_CHARS,
    escalate: EscalateOpt = None,
    agreement: AgreementOpt = None,
    delta: DeltaOpt = None,
) -> None:
    """Evaluate DATA with the chosen metrics and judge; every sample is committed to the run store.

    Exit codes: 0 every row evaluated; 1 could not run (bad option, unreadable or empty
    input, a resume that does not match); 2 evaluated, but some input rows were invalid;
    3 nothing was scored, or more than --max-unscored of the results are unscored;
    130 interrupted (continue with --resume).
    """
    # Nothing is created until every option and the data path are checked: a mistyped
    # path or option must not leave an empty run store (.assay/runs.sqlite) behind.
    sink = _OutSink(out, append=resume is not None)
    try:
        plan, store, price_table = _plan(ctx, sink)
        if dry_run:
            raise typer.Exit(_dry_run(plan, price_table))
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    started = time.perf_counter()
    result, code = _carry_out(plan, store_path, sink)
    sent = result.export if result is not None else None
    if store is None:
        if not store_path.is_file():  # stopped before the run existed (a Ctrl-C while loading)
            raise typer.Exit(code if code is not None else EXIT_USAGE)
        store = RunStore(store_path)
    assert plan.run_id is not None
    out_ok = _write_out_from_store(store, plan.run_id, out)
    if code is not None or result is None:
        _say_stopped(store, plan.run_id, store_path, code)
    summary = store.summary(plan.run_id, price_table)
    elapsed = time.perf_counter() - started
    _print_summary(
        summary,
        plan.run_id,
        result.judge,
        elapsed,
        store_path,
        plan.repeats,
        trust=result.trust,
        record=result.judge_record,
    )
    if result.cascade:
        print_cascade(result.cascade, store.results(plan.run_id))
    _say_notes(store, plan.run_id, summary, result, progress)
    code, why = exit_code(summary, max_unscored, plan.run_id)
    if not out_ok and code == EXIT_OK:
        code, why = EXIT_USAGE, f"--out {out} was not written (see above); the run itself is complete in the store"
    code, why = _say_sent(sent, code, why)
    if why:
        err_console.print(f"[yellow]exit {code}[/yellow]: {printable(why)}")
    raise typer.Exit(code)


def _plan(ctx: typer.Context, sink: _OutSink) -> tuple[RunPlan, RunStore | None, PriceTable]:
    """The run the command line describes (or the stored run it resumes), checked, with its store and prices."""
    p = ctx.params
    if p["engine"] not in ("local", "ray"):
        raise ConfigError(f"--engine is local or ray, got {p['engine']!r}")
    if p["progress"] not in ("auto", "bar", "plain", "none"):
        raise ConfigError(f"--progress is auto, bar, plain or none, got {p['progress']!r}")
    if p["resume"]:
        settings, store = _resumed(ctx)
    else:
        settings, store = _fresh(p), None
    _refuse_unused(ctx, settings)
    if store is None:  # the file is checked last of the command line, so the data goes on into the plan from here
        check_format(settings["data"])
    price_table = PriceTable.load(p["prices"])
    # A dry run calls nothing, so it needs no key: the judge is built only to name it.
    keyed = judge_kind(settings["judge"]) in ("openai", "anthropic")
    plan = plan_run(
        **settings,
        api_key=_DRY_RUN_KEY if p["dry_run"] and keyed else None,
        # a new run's store is created by evaluate once the data and metrics are checked:
        # a refused run leaves no empty store behind
        store=store if store is not None else p["store_path"],
        resume=p["resume"],
        run_id=p["resume"] or new_run_id(),
        progress=p["progress"],
        ray_address=p["address"],
        ray_workers=p["workers"],
        prices=price_table,
        on_result=sink.write,
        keep_results=False,
        export=p["export"],
    )
    return plan, store, price_table


def _say_sent(report: ExportReport | None, code: int, why: str | None) -> tuple[int, str | None]:
    """``--export``'s report, after the run's summary (or its stop); a send that failed makes a clean run exit 1."""
    if report is None:
        return code, why
    for line in report.lines():
        style = "yellow" if report.error is not None else "dim"
        err_console.print(f"[{style}]export[/{style}]: {printable(line)}", soft_wrap=True)
    if not report.ok and code == EXIT_OK:
        return EXIT_USAGE, f"--export {report.to} did not send every result (see above); the run is complete"
    return code, why


def _fresh(p: Mapping[str, Any]) -> dict[str, Any]:
    """A new run's settings for :func:`plan_run`, from the command line."""
    if p["data"] is None:
        raise ConfigError("give a DATA file to evaluate (or --resume RUN_ID)")
    names = _metric_names(p["metric"])
    sets = _parse_sets(p["set_"] or [])
    if p["strategy"] is not None:
        sets.setdefault("faithfulness", {})["strategy"] = p["strategy"]
    if p["decomposer"] is not None:
        sets.setdefault("faithfulness", {})["decomposer"] = p["decomposer"]
    mapping = _parse_mapping(p["map_"] or [])
    metrics = build_metrics(names, sets)
    return {
        "data": p["data"],
        "metrics": metrics,
        "judge": p["judge"],
        "base_url": p["base_url"],
        "engine": p["engine"],
        "mapping": mapping,
        "repeats": p["repeats"],
        "reasks": p["reasks"],
        "temperature": p["temperature"],
        "cache": p["cache_path"] if p["cache"] else None,
        "max_field_chars": p["max_field_chars"],
        "max_row_chars": p["max_row_chars"],
        "limits": _limits(p, timeout_s=p["timeout"], max_attempts=p["retries"] + 1),
        "escalate": tuple(p["escalate"] or ()),
        "agreement": p["agreement"],
        "delta": p["delta"],
    }


def _resumed(ctx: typer.Context) -> tuple[dict[str, Any], RunStore]:
    """A stored run's own settings for :func:`plan_run`: its data, metrics, judge and compared options."""
    p = ctx.params
    store_path, resume = p["store_path"], p["resume"]
    if not store_path.is_file():  # a mistyped --store must not create an empty one
        raise ConfigError(f"no run store at {store_path} (--store); 'assay runs list --store PATH' shows runs")
    store = RunStore(store_path)
    clashing = _given(ctx, _RESULT_OPTIONS)
    if clashing:
        raise ConfigError(
            f"--resume continues run {resume} with exactly the data and options it was started with; "
            f"drop {', '.join(clashing)} (or start a new run)"
        )
    spec = store.spec(resume)
    options = RunOptions.from_stored(spec.options).model_dump()
    if spec.dataset is None:
        raise ConfigError(f"run {resume} was not started from a file; resume it from Python")
    # The data may be named again (from another directory, another path to it): the resume
    # checks its content hash against the run's, so only the same data continues the run.
    data = p["data"] if p["data"] is not None else Path(spec.dataset)
    if p["data"] is None and not data.is_absolute() and not data.exists():
        raise ConfigError(
            f"{spec.dataset}: no such file in {Path.cwd()}; run {resume} read it from the directory it was started "
            f"in: run this there, or name the file: 'assay run PATH/{data.name} --resume {resume}' (its content is "
            "checked against the run's)"
        )
    # the run's own throughput unless given again (they change no result, so they may change)
    kept = spec.options.get("throughput") or {}
    throughput = {k: p[k] if p[k] is not None else kept.get(k) for k in ("concurrency", "rpm", "tpm")}
    limits = _limits(throughput, timeout_s=options.pop("timeout_s"), max_attempts=options.pop("max_attempts"))
    settings = {
        "data": data,
        "metrics": _stored_metrics(spec),
        "judge": spec.judge,
        "base_url": _resume_base_url(spec.base_url, p["base_url"], resume),
        "engine": spec.engine,
        "limits": limits,
    }
    # every compared option by its own name (RunOptions' fields are RunPlan's)
    return settings | options | {"cache": p["cache_path"] if options["cache"] else None}, store


def _limits(p: Mapping[str, Any], *, timeout_s: float | None, max_attempts: int) -> Limits:
    return Limits(
        concurrency=p["concurrency"], rpm=p["rpm"], tpm=p["tpm"], timeout_s=timeout_s, max_attempts=max_attempts
    )


# Options only one kind of judge or engine reads: given to another, they would be ignored (a
# run that names a URL it never used), so they are refused: on the command line or in the run
# command's own variable (ASSAY_RUN_BASE_URL, ASSAY_RUN_ADDRESS: set for assay run, so meant
# for it). From a variable other tools share (OPENAI_BASE_URL, RAY_ADDRESS) they are set for
# every run and are dropped instead.
_ENGINE_OPTIONS = ("address", "workers")


def _refuse_unused(ctx: typer.Context, settings: dict[str, Any]) -> None:
    """Refuse ``--base-url`` for a judge that reads no URL, and Ray's options for the local engine."""
    settings["base_url"] = base_url_for(ctx, [settings["judge"]], settings["base_url"])
    if settings["engine"] != "ray":
        named = [given for name in _ENGINE_OPTIONS if (given := given_for_command(ctx, name)) is not None]
        if named:
            raise ConfigError(
                f"{' and '.join(named)} {'is' if len(named) == 1 else 'are'} for --engine ray; this run's engine is "
                f"{settings['engine']}, which would ignore {'it' if len(named) == 1 else 'them'}"
            )


class _OutSink:
    """``--out`` as the run goes: each result as it finishes (for ``tail -f``), on a regular file.

    --out is written from the store when the run ends (finished, interrupted or failed), so it
    holds the whole run: a resumed run's earlier part, and a line lost to a kill.
    """

    def __init__(self, out: Path | None, *, append: bool) -> None:
        self.out, self.append = out, append
        self.stream: IO[str] | None = None
        self.streaming = out is not None and not (out.exists() and not out.is_file())

    def write(self, sample_result: SampleResult) -> None:
        """Append one result; a failure to write warns once and stops streaming (the store has every result)."""
        if not self.streaming or self.out is None:
            return
        try:
            if self.stream is None:  # opened at the first result: a refused run leaves an earlier --out alone
                self.out.parent.mkdir(parents=True, exist_ok=True)
                self.stream = self.out.open("a" if self.append else "w", encoding="utf-8")
            self.stream.write(json.dumps(sample_result.to_record(), ensure_ascii=False) + "\n")
            self.stream.flush()
        except OSError as exc:
            self.close()
            self.streaming = False
            failure = storage_error(exc, Path(str(self.out)), "the output file", "write")
            err_console.print(
                f"[yellow]warning[/yellow]: {printable(str(failure))}; judging goes on (every result is in the store)"
            )

    def close(self) -> None:
        """Close the stream, if it was opened."""
        _close_quietly(self.stream)
        self.stream = None


def _carry_out(plan: RunPlan, store_path: Path, sink: _OutSink) -> tuple[EvalResult | None, int | None]:
    """Run ``plan``; its result, and the exit code when it stopped early (interrupted, or the store failed)."""
    assert plan.run_id is not None
    run_id = plan.run_id
    try:
        with _bounded_interrupt(lambda: _give_up(store_path, run_id)), warnings.catch_warnings():
            # the summary below says what evaluate() warns of, in the same words
            warnings.simplefilter("ignore", JudgeCallWarning)
            return run_plan(plan), None
    except JudgeUnavailableError as exc:  # every call failed: the summary says so and the run exits 3
        return exc.result, None  # type: ignore[return-value]  # always the run's EvalResult
    except KeyboardInterrupt:
        _mark_interrupted(store_path, run_id)
        return None, EXIT_INTERRUPTED
    except StorageError as exc:  # the store or the cache failed mid-run: what was committed stays
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        return None, EXIT_USAGE
    except AssayError as exc:
        err_console.print(f"[red]error:[/red] {printable(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from None
    finally:
        sink.close()


def _say_stopped(store: RunStore, run_id: str, store_path: Path, code: int | None) -> NoReturn:
    """A run that stopped early: what is kept and how to continue it."""
    if code == EXIT_INTERRUPTED:
        unstored = (store.info(run_id).summary or {}).get("_unstored_calls")
        spent = f" ({counted(int(unstored), 'judge call')} answered for samples it stopped)" if unstored else ""
        err_console.print(
            f"[yellow]interrupted[/yellow]: every finished sample is stored{spent}. Continue with "
            f"[bold]assay run --resume {run_id}[/bold]"
        )
    else:
        err_console.print(
            f"every result committed before the failure is kept; continue with [bold]assay run --resume "
            f"{run_id}[/bold] --store {printable(str(store_path))}"
        )
    raise typer.Exit(code if code is not None else EXIT_USAGE)


def _say_notes(store: RunStore, run_id: str, summary: RunSummary, result: EvalResult, progress: str) -> None:
    """What was taken on trust (unless the progress output said it), and the first invalid rows."""
    if progress == "none":  # otherwise the progress output said it before judging began
        for note in result.notes:  # what was taken on trust (contexts given as text)
            if note != summary.cost.failure():  # the summary said that one
                err_console.print(f"[yellow]note[/yellow]: {printable(note)}")
    for _line, message in store.row_errors(run_id)[:20]:
        err_console.print(f"[red]invalid row[/red] {printable(message)}")
    if summary.n_row_errors > 20:
        err_console.print(f"  … and {summary.n_row_errors - 20} more ('assay report {run_id}' lists them all)")


def _close_quietly(sink: IO[str] | None) -> None:
    """Close a stream whose buffered lines may not fit (a full disk): the store has them all anyway."""
    if sink is None:
        return
    with contextlib.suppress(OSError):
        sink.close()


def _write_out_from_store(store: RunStore, run_id: str, out: Path | None) -> bool:
    """Write ``--out`` from the store (every result of the run); say so, or say in one line why not."""
    if out is None:
        return True
    try:
        store.spec(run_id)
    except AssayError:
        return True  # the run was never created: there is nothing to write
    try:
        n = write_export(store, run_id, out)
    except AssayError as exc:
        err_console.print(
            f"[red]error:[/red] {printable(str(exc))}; the results are in the store: "
            f"'assay runs export {run_id} --out FILE'"
        )
        return False
    results = f"{n} result{'s' if n != 1 else ''}"
    coverage = store.coverage(run_id)
    if coverage.status == "finished":
        err_console.print(f"--out {printable(str(out))}: {results}, the whole run, from the store")
    else:  # an interrupted or failed run: what is stored so far, never called the whole run
        of = f" of {coverage.n_rows:,}" if coverage.n_rows is not None else ""
        err_console.print(
            f"--out {printable(str(out))}: {results}, the run so far ({coverage.status}: {coverage.n_judged:,}{of} "
            f"rows judged), from the store; --resume {run_id} continues it and writes --out again"
        )
    return True
