"""``assay gate``: a CI gate over a stored run that knows how much the judge wobbles.

Exit codes (documented in the command's help and ``docs/design/variance.md``)::

    0  pass      observed pass, and a rerun passes with P >= 1 - max_flake
    1  fail      observed fail, and a rerun passes with P <= max_flake
    2  flaky     the observed outcome recurs with P < 1 - max_flake,
       or unscored: unscored results above --max-unscored (or nothing scored),
       or incomplete: the run is interrupted, failed or still running, or has more
       invalid input rows than --max-invalid-rows (default 0), unless --allow-partial
    3  usage     unknown run or metric, bad option, unreadable store
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Final

import typer
from rich.table import Table

from assay._safety import printable, scrub, url_secrets
from assay._scores import ERROR_REASONS
from assay.analysis import (
    DEFAULT_MAX_UNSCORED,
    GateOutcome,
    GatePolicy,
    GateResult,
    RepeatReport,
    analyze_repeats,
    combined_outcome,
    evaluate_gate,
    is_pass_fail,
    metrics_in,
    no_such_metric,
    observed_rate,
    partial_run_reasons,
    recommend_statements,
    recommend_threshold,
)
from assay.cli._console import err_console, fmt_score, out_console
from assay.errors import AssayError, ConfigError, check_threshold, counted, did_you_mean
from assay.report import gate_summary_markdown, md_text
from assay.run import RunStore, trust_for_run
from assay.run._review import waiting_for_review

__all__ = ["EXIT_FAIL", "EXIT_FLAKY", "EXIT_PASS", "EXIT_USAGE_GATE", "gate", "parse_gated_metrics", "render_gate"]

EXIT_PASS: Final = 0
EXIT_FAIL: Final = 1
EXIT_FLAKY: Final = 2
EXIT_USAGE_GATE: Final = 3
_EXIT = {
    "pass": EXIT_PASS,
    "fail": EXIT_FAIL,
    "flaky": EXIT_FLAKY,
    "unscored": EXIT_FLAKY,
    "incomplete": EXIT_FLAKY,
    "untrusted": EXIT_FLAKY,
}
_COLOUR = {
    "pass": "green",
    "fail": "red",
    "flaky": "yellow",
    "unscored": "yellow",
    "incomplete": "yellow",
    "untrusted": "yellow",
}


class _GateUsageError(typer.BadParameter):
    """A bad option value: exits 3 (the gate's usage code), not click's 2 (which means flaky here)."""

    exit_code = EXIT_USAGE_GATE


def _number(kind: type[float] | type[int], low: float, high: float) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise _GateUsageError(f"{value!r} is not a valid {kind.__name__}") from None
        if not low <= number <= high:
            raise _GateUsageError(f"{value} is not in [{low:g}, {high:g}]")
        return number

    return parse


def _threshold(value: Any) -> float:
    """``--min``: a score between 0 and 1, checked as every door checks its pass mark (exits 3)."""
    try:
        return check_threshold(value, "--min")
    except ConfigError as exc:
        raise _GateUsageError(str(exc)) from None


def _usage(message: str) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {printable(message)}")
    return typer.Exit(EXIT_USAGE_GATE)


def _pct(p: float) -> str:
    return "—" if math.isnan(p) else f"{p:.4f}"


def _noise_text(result: GateResult) -> str:
    """How the verdict was decided and how likely a rerun is to reverse it (the line under the verdict)."""
    policy = result.policy
    if result.method == "repeats":
        passing = sum(result.repeat_passes)
        return (
            f"P(pass) {_pct(result.p_pass)} (from {result.n_repeats} repeats; the gate passes on "
            f"{passing}/{len(result.repeat_passes)} of them) · flake probability {_pct(result.flake_probability)} "
            f"(max {policy.max_flake:g})"
        )
    if result.flip_rate_source == "no judge call":
        return "no judge call: computed verdicts, a rerun gives the same outcome"
    return (
        f"single run: decided on what it observed · estimated P(pass) {_pct(result.p_pass)} (binomial model, "
        f"flip rate {result.flip_rate:g} ({result.flip_rate_source})) · estimated flip probability "
        f"{_pct(result.reversal_probability)}: re-run with 'assay run --repeats 3' to measure it"
    )


def _reasons(report: RepeatReport) -> str:
    """``parse_failure 2, judge_refusal 1``: the unscored results per reason, most frequent first."""
    return ", ".join(f"{reason} {n}" for reason, n in report.unscored_by_reason.items()) or "no reason recorded"


def render_gate(result: GateResult, report: RepeatReport, run_id: str, *, explain: bool = False) -> None:
    """Print a gate: its verdict and how sure it is, then what a reader must act on.

    Always: the verdict line (outcome, rule, the figure it was decided on, the run), the
    line saying how likely a rerun is to reverse it, why a run is partial or its judge
    untrusted, the samples that failed or flaked with the statements that sank them, the
    unscored samples with their reasons, and the notes that bear on the verdict
    (:attr:`GateResult.caveats`). A metric with nothing scored says ``UNSCORED`` and its
    reasons, and no observed outcome. The statement-count advice is shown when the judge's
    noise could change the outcome (:attr:`GateResult.shaky`); ``explain`` adds it always,
    with the judge-noise figures of repeats and every other note.
    """
    policy = result.policy
    unit = "every sample" if policy.gates_samples else "the run mean"
    rule = "no unsupported statement" if policy.strict else f"{result.metric} >= {policy.threshold:g}"
    colour = _COLOUR[result.outcome]
    run = printable(run_id, breaks=False)
    partial = " (partial run)" if result.gated_partial else ""
    head = f"[bold {colour}]GATE {result.outcome.upper()}{partial}[/bold {colour}]: {printable(rule)} on {unit}"
    n_errors = sum(score.is_error for sample in report.samples for score in sample.scores)
    if result.nothing_scored:
        # No sample scored: there is no mean, no observed outcome and no noise to estimate, only reasons.
        out_console.print(
            f"{head} · run {run} · nothing scored: {report.n_unscored} of "
            f"{counted(report.n_records, 'result')} unscored ({printable(_reasons(report))})",
            soft_wrap=True,
        )
        print_partial(result)
        if result.untrusted is not None:
            out_console.print(f"[bold yellow]judge not trusted either:[/bold yellow] {printable(result.untrusted)}")
        _print_pending(report, run_id)
        _print_unscored(result)
        _print_notes(result, explain)
        return
    binary = is_pass_fail(report)
    interval = f"[{fmt_score(result.ci[0])}, {fmt_score(result.ci[1])}]"
    n_scored = sum(s.is_scored for s in result.samples)
    if binary and not policy.gates_samples:
        n_pass = sum(1 for s in result.samples if s.is_scored and s.score >= 1.0)
        level = f"pass rate {fmt_score(result.mean)} ({n_pass} of {counted(n_scored, 'sample')} pass) {interval}"
    else:
        level = f"mean {fmt_score(result.mean)} {interval} on {counted(n_scored, 'scored sample')}"
    # Pass and fail are what was observed; any other outcome says what the rows would have given.
    observed = ""
    if result.outcome not in ("pass", "fail"):
        judged = f" on the {counted(len(result.samples), 'sample')} judged" if result.outcome == "incomplete" else ""
        observed = f" · observed {result.observed}{judged}"
    out_console.print(f"{head} · {level} · run {run}{observed}", soft_wrap=True)
    out_console.print(_noise_text(result), soft_wrap=True)
    print_partial(result)
    if result.untrusted is not None:
        said = "not gated" if result.outcome == "untrusted" else "gated anyway (--allow-untrusted-judge)"
        out_console.print(f"[bold yellow]{said}:[/bold yellow] {printable(result.untrusted)}", soft_wrap=True)
    n_unscored = report.n_unscored - n_errors
    if explain or n_unscored or n_errors:
        # errors are refused above, not spent from the unscored budget: counted apart, as the share is
        errors = f" · {counted(n_errors, 'error')} (not verdicts)" if n_errors else ""
        verdicts = {r: n for r, n in report.unscored_by_reason.items() if r not in ERROR_REASONS}  # errors: apart
        reasons = f": {printable(', '.join(f'{r} {n}' for r, n in verdicts.items()))}" if verdicts else ""
        out_console.print(
            f"samples {len(result.samples)} (scored {n_scored}) · unscored results "
            f"{n_unscored}/{report.n_records} = {_pct(result.unscored_share)} (max {policy.max_unscored:g})"
            f"{reasons}{errors}",
            soft_wrap=True,
        )
    if result.outcome == "unscored" and result.unscored_share > policy.max_unscored:
        out_console.print(
            f"[yellow]unscored results above the limit: {result.unscored_share:.3f} > {policy.max_unscored:g}[/yellow]"
        )
    # A passing gate has no failing samples: a sample below the threshold of a gate on the
    # mean is not what the verdict says failed (a table titled so read as a failure).
    failing = result.failing if result.outcome != "pass" else ()
    flaky = [
        s
        for s in result.samples
        if result.method == "repeats" and s.is_scored and s.passed and s.stability != "stable_pass"
    ]
    shown = [*failing, *flaky] if policy.gates_samples else list(failing)
    if shown:
        table = Table(
            title=f"{'failing and flaky' if failing and flaky else 'flaky' if flaky else 'failing'} samples",
            title_justify="left",
            show_lines=True,
        )
        table.add_column("line", justify="right")
        table.add_column("id")
        table.add_column("score", justify="right")
        table.add_column("P(pass)", justify="right")
        table.add_column("why")
        table.add_column("statements that sank it (judge's reason)")
        for s in shown:
            sinkers = "\n".join(
                f"✗ {printable(k.subject)} [dim]({printable(k.reason)})[/dim]"
                + (f" [{k.failed}/{k.repeats} repeats]" if k.repeats > 1 else "")
                for k in s.sinkers
            )
            cell = f"\n[{s.interval[0]:.2f}, {s.interval[1]:.2f}]" if s.interval else ""
            table.add_row(
                str(s.line),
                printable(s.id, breaks=False),
                ("pass" if s.score >= 1.0 else "fail") if binary and result.n_repeats == 1 else fmt_score(s.score),
                f"{_pct(s.p_pass)}{cell}",
                printable(s.why or "flaky"),
                sinkers or "—",
            )
        out_console.print(table)
    _print_pending(report, run_id)
    _print_unscored(result)
    if result.n_repeats > 1 and (explain or result.outcome == "flaky"):
        _print_repeat_noise(report)
    if binary:
        if explain:
            out_console.print(
                f"[dim]{printable(result.metric)} is pass/fail per sample: its mean is the share of samples that "
                "pass, so the statement-count advice of graded metrics does not apply; more samples narrow its "
                "interval[/dim]",
                soft_wrap=True,
            )
    elif (
        (explain or result.shaky)
        and result.flip_rate_source != "no judge call"
        and any(s.n_statements for s in result.samples if s.is_scored)
    ):
        # Advice on how many statements make the gate stable: not for computed verdicts (no
        # statement count makes them steadier), not when nothing was scored (n=0), and not
        # for a metric whose scores have no statements.
        _print_advice(result, report)
    _print_notes(result, explain)


def _print_pending(report: RepeatReport, run_id: str) -> None:
    """Questions a cascade left to people: said in the open, since their samples are not in the mean."""
    n, n_results = report.pending
    if not n:
        return
    out_console.print(
        f"[bold yellow]{waiting_for_review(n)}[/bold yellow] in {counted(n_results, 'result')} "
        f"(unscored needs_review: not in the mean until a person answers them): "
        f"'assay review {printable(run_id, breaks=False)}'",
        soft_wrap=True,
    )


def _print_unscored(result: GateResult) -> None:
    for s in result.unscored_samples:
        reasons = "; ".join(s.unscored) or "unscored"
        out_console.print(
            f"unscored: line {s.line} {printable(s.id, breaks=False)}: {printable(reasons)}", soft_wrap=True
        )


def _print_notes(result: GateResult, explain: bool) -> None:
    """The notes that bear on the verdict; with ``explain``, every note (how P(pass) was computed, defaults used)."""
    for note in result.notes if explain else result.caveats:
        out_console.print(f"[dim]note: {printable(note)}[/dim]", soft_wrap=True)


def _print_repeat_noise(report: RepeatReport) -> None:
    """What the repeats measured of the judge's noise: flips, unstable samples, statement sets that changed."""
    out_console.print(
        f"judge noise from repeats: flip rate {_pct(report.flip_rate)} over {report.n_statements_compared} "
        f"statements · unstable samples {_pct(report.unstable_share)} · statement sets changed in "
        f"{_pct(report.set_change_share)} of repeats",
        soft_wrap=True,
    )
    out_console.print(
        f"decomposition: statement sets differed across repeats in {report.n_sets_changed}/{report.n_compared} "
        f"samples · scores moved in {report.n_scores_moved} ({report.n_moved_without_flip} with no verdict flip)",
        soft_wrap=True,
    )
    fixed = {s.decomposition.fixed for sample in report.samples for s in sample.scores if s.decomposition}
    if fixed == {True}:
        out_console.print(
            "statements: the same in every repeat (decomposed once, at temperature 0): the flake estimate is the "
            "verdicts' noise, which is all that varied",
            soft_wrap=True,
        )
    elif fixed:
        out_console.print(
            "statements: sampled with each repeat (fixed_statements=false): statement-set changes count as noise",
            soft_wrap=True,
        )


def print_partial(result: GateResult) -> None:
    """Under the verdict line: why the run is partial, and whether the gate was refused or allowed for it."""
    if result.outcome == "incomplete":
        for reason in result.partial:
            out_console.print(f"[bold yellow]not gated:[/bold yellow] {printable(reason)}", soft_wrap=True)
    elif result.partial:
        for reason in result.partial:
            out_console.print(
                f"[bold yellow]gated a partial run (--allow-partial):[/bold yellow] {printable(reason)}", soft_wrap=True
            )


def _print_advice(result: GateResult, report: RepeatReport) -> None:
    policy = result.policy
    eps = result.flip_rate
    # The model knows verdict flips only; say so when the repeats showed the decomposition moving too.
    unmodelled = (
        "; decomposition variation not modelled" if result.method == "repeats" and report.n_sets_changed else ""
    )
    counts = [s.n_statements for s in result.samples if s.is_scored]
    typical = int(statistics.median(counts)) if counts else 0
    rates = sorted({0.85, 0.9, 0.95, 1.0} | ({round(result.mean, 2)} if not math.isnan(result.mean) else set()))
    table = Table(
        title=f"statements needed for a stable {policy.threshold:g} gate (flip rate {eps:.3g}, flake <= "
        f"{policy.max_flake:g}; binomial model{unmodelled})",
        title_justify="left",
    )
    # Only the rows the model can compute: a rate at which no count up to 200 makes the gate
    # stable and no threshold above 0 is stable at n says nothing (it read "0.00" in every row).
    computed = []
    for p in rates:
        (row,) = recommend_statements(p, eps, (policy.threshold,), target=policy.max_flake)
        best = recommend_threshold(typical, p, eps, target=policy.max_flake) if typical else None
        best = best if best else None  # 0: only "score >= 0" is stable, which is no threshold
        if row.n_statements or best is not None:
            computed.append((p, row, best))
    if not computed:
        out_console.print(
            f"[dim]statements needed for a stable {policy.threshold:g} gate: more than 200 at every true rate shown "
            f"(flip rate {eps:.3g}); no threshold above 0 is stable at n={typical}[/dim]",
            soft_wrap=True,
        )
        return
    thresholds = any(best is not None for _, _, best in computed)
    table.add_column("true rate", justify="right")
    table.add_column("judge says 1", justify="right")
    table.add_column("statements needed", justify="right")
    table.add_column("P(pass) there", justify="right")
    table.add_column("outcome")
    if thresholds:
        table.add_column(f"highest stable threshold at n={typical}", justify="right")
    for p, row, best in computed:
        cells = [
            f"{p:.2f}",
            f"{observed_rate(p, eps):.3f}",
            str(row.n_statements) if row.n_statements else "> 200",
            _pct(row.p_pass),
            row.stability.replace("_", " "),
        ]
        table.add_row(*cells, *(["—" if best is None else f"{best:.2f}"] if thresholds else []))
    out_console.print(table)


_SEPARATORS = (">=", "=", ":")


def parse_gated_metrics(items: list[str], default_min: float) -> list[tuple[str, float]]:
    """``--metric`` values as ``(name, threshold)``: ``NAME`` (gated at ``--min``), ``NAME=MIN`` or ``'NAME>=MIN'``.

    Raises:
        ConfigError: a threshold that is no number in [0, 1], or a metric named twice.
    """
    gated: dict[str, float] = {}
    for item in items:
        name, threshold = item.strip(), default_min
        for separator in _SEPARATORS:
            if separator in item:
                name, _, text = item.partition(separator)
                name = name.strip()
                try:
                    threshold = float(text.strip().removeprefix("="))
                except ValueError:
                    raise ConfigError(
                        f"--metric {item}: {text!r} is not a number; write NAME=MIN, e.g. {name}=0.8"
                    ) from None
                break
        if not name:
            raise ConfigError(f"--metric {item!r} names no metric; write NAME or NAME=MIN, e.g. faithfulness=0.8")
        check_threshold(threshold, f"--metric {item}: the threshold")
        if name in gated:
            raise ConfigError(f"--metric names {name!r} twice; give each metric once, with its threshold")
        gated[name] = threshold
    return list(gated.items())


def _rule_text(result: GateResult) -> str:
    return "no unsupported statement" if result.policy.strict else f"{result.metric} >= {result.policy.threshold:g}"


def _nothing_judged(run_id: str, status: str, n_row_errors: int) -> str:
    if n_row_errors:
        rows = "the only input row" if n_row_errors == 1 else f"all {n_row_errors} input rows"
        verb = "was" if n_row_errors == 1 else "were"
        return (
            f"nothing was judged: {rows} of run {run_id} {verb} invalid "
            f"(see 'assay runs show {run_id}'); fix the data and run it again"
        )
    return f"nothing was judged: run {run_id} has no result (it is {status})"


def gate(
    ctx: typer.Context,
    run_id: Annotated[str | None, typer.Argument(help="The run to gate (see 'assay runs list').")] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="A metric to gate, as NAME (at --min) or NAME=MIN; repeat it to gate several, each with its own "
            "threshold: -m faithfulness=0.8 -m answer_relevancy=0.7 ('NAME>=MIN' too, quoted). Default: faithfulness.",
        ),
    ] = None,
    min_score: Annotated[
        float,
        typer.Option("--min", parser=_threshold, help="The gate: score >= MIN (for metrics without one)."),
    ] = GatePolicy.threshold,
    per_sample: Annotated[bool, typer.Option("--per-sample", help="Gate every sample, not the run mean.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Any unsupported statement fails its sample (implies --per-sample).")
    ] = False,
    min_statements: Annotated[
        int,
        typer.Option(
            "--min-statements", parser=_number(int, 0, 10**6), help="A sample with fewer statements FAILS the gate."
        ),
    ] = 0,
    max_flake: Annotated[
        float,
        typer.Option("--max-flake", parser=_number(float, 0.0, 0.5), help="Highest tolerated flake probability."),
    ] = 0.01,
    max_unscored: Annotated[
        float,
        typer.Option(
            "--max-unscored",
            parser=_number(float, 0.0, 1.0),
            help="Highest tolerated share of unscored results (the same default as assay run's).",
        ),
    ] = DEFAULT_MAX_UNSCORED,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="Gate a run that is interrupted, failed or still running on the rows it judged (by default such "
            "a run exits 2: rows never judged are not a pass); the verdict then says it gated a partial run.",
        ),
    ] = False,
    allow_untrusted_judge: Annotated[
        bool,
        typer.Option(
            "--allow-untrusted-judge",
            help="Gate a metric whose judge's measured agreement with people has a 95% CI reaching chance (0.5); by "
            "default such a gate exits 2 ('untrusted judge'), since a pass or a fail on it means nothing.",
        ),
    ] = False,
    max_invalid_rows: Annotated[
        int,
        typer.Option(
            "--max-invalid-rows",
            metavar="N",
            parser=_number(int, 0, 10**12),
            help="Most invalid input rows (never judged) a run may have and still be gated; more exit 2.",
        ),
    ] = 0,
    flip_rate: Annotated[
        float | None,
        typer.Option(
            "--flip-rate",
            parser=_number(float, 0.0, 0.5),
            help="Judge flip rate for the binomial model (default: measured from repeats, else 0.05).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", parser=_number(int, 0, 2**63 - 1), help="Simulation seed.")] = 0,
    store_path: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    latest: Annotated[
        bool,
        typer.Option(
            "--latest", help="Gate the run written last in the store (instead of RUN_ID): a resumed run counts."
        ),
    ] = False,
    summary_md: Annotated[
        Path | None,
        typer.Option(
            "--summary-md",
            metavar="FILE",
            help='Append a Markdown job summary to FILE (in GitHub Actions: "$GITHUB_STEP_SUMMARY").',
        ),
    ] = None,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Also say how the verdict was decided: every note, the statements needed for a stable gate, "
            "the judge noise the repeats measured. Without it they are shown only when they change the outcome.",
        ),
    ] = False,
) -> None:
    """Gate a stored run: pass, fail, or flaky, with the statements that sank each failing sample.

    With repeats (assay run --repeats N), P(pass) comes from the repeats' scores and the
    gate is flaky when they disagree. A single run decides on what it observed (pass or
    fail) and prints the binomial model's estimate of how likely a rerun is to reverse it
    (each statement's verdict flips with probability --flip-rate).

    A pass prints its verdict and how likely a rerun is to reverse it; a fail adds the
    samples and statements that sank it. The statements needed for a stable gate are shown
    when the judge's noise could change the outcome, and always with --explain.

    Several --metric options gate each metric at its own threshold; the exit code is the
    worst of them (fail, then incomplete, unscored or flaky, then pass).

    A gate never passes a run that was not finished: a run that is interrupted, failed or
    still running exits 2 and says how many rows were never judged and why (--allow-partial
    gates it on the rows it judged, and says so); so does a run with more invalid input
    rows than --max-invalid-rows (default 0).

    Exit codes: 0 pass; 1 fail; 2 flaky (repeats disagree), unscored results above
    --max-unscored, nothing judged, an incomplete run (interrupted, failed, still
    running, or invalid rows beyond --max-invalid-rows), or an untrusted judge (its measured
    agreement's 95% CI reaches chance; --allow-untrusted-judge gates anyway); 3 usage error
    (unknown run or metric, bad option).
    """
    if ctx.args:
        known = [p for param in ctx.command.params for p in getattr(param, "opts", ())]
        hints = "".join(did_you_mean(arg.split("=")[0], known) for arg in ctx.args if arg.startswith("-"))
        raise _usage(f"unexpected arguments: {' '.join(ctx.args)};{hints} (see 'assay gate --help')")
    if run_id is not None and latest:
        raise _usage("give a RUN_ID or --latest, not both")
    if run_id is None and not latest:
        raise _usage("give the RUN_ID to gate, or --latest for the run written last (see 'assay runs list')")
    if not store_path.exists():
        raise _usage(f"no run store at {store_path}; 'assay run' creates one (or pass --store)")
    try:
        gated = parse_gated_metrics(metric or ["faithfulness"], min_score)
    except ConfigError as exc:
        raise _usage(str(exc)) from None
    try:
        policy = GatePolicy(
            threshold=min_score,
            per_sample=per_sample,
            strict=strict,
            min_statements=min_statements,
            max_flake=max_flake,
            max_unscored=max_unscored,
            flip_rate=flip_rate,
            seed=seed,
            allow_partial=allow_partial,
            max_invalid_rows=max_invalid_rows,
            allow_untrusted_judge=allow_untrusted_judge,
        )
        with RunStore(store_path) as store:
            if run_id is None:
                run_id = store.latest()
                err_console.print(f"gating the latest run in {printable(str(store_path))}: {printable(run_id)}")
            coverage = store.coverage(run_id)
            spec = store.spec(run_id)
            trust = trust_for_run(store, run_id)
            # Masks what a run stored before its URL was redacted may echo of its credentials.
            records = scrub(list(store.records(run_id)), url_secrets(spec.base_url))
    except (AssayError, ValueError) as exc:
        raise _usage(str(exc)) from None
    known_metrics = list(dict.fromkeys([*(m.name for m in spec.metrics), *metrics_in(records)]))
    for name, _ in gated:
        if name not in known_metrics:
            raise _usage(str(no_such_metric(run_id, name, known_metrics)))
    # Also said under each verdict line (GateResult.partial); here for a run with nothing to gate.
    partial = partial_run_reasons(coverage, policy)
    judged = set(metrics_in(records))
    if not judged & {name for name, _ in gated}:
        why = _nothing_judged(run_id, coverage.status, coverage.n_invalid)
        out_console.print(f"[bold yellow]GATE UNSCORED[/bold yellow]: {printable(why)}", soft_wrap=True)
        for reason in partial:
            out_console.print(f"[bold yellow]not gated:[/bold yellow] {printable(reason)}", soft_wrap=True)
        shown = "".join(f"\n- {md_text(reason, 500)}" for reason in partial)
        _append_summary(summary_md, f"### ⚠️ assay gate: UNSCORED\n\n{md_text(why, 500)}\n{shown}\n")
        raise typer.Exit(_EXIT["unscored"])
    reports = {name: analyze_repeats(records, name, seed=seed) for name in metrics_in(records)}
    by_name = {
        name: evaluate_gate(
            reports[name],
            dataclasses.replace(policy, threshold=threshold),
            coverage,
            untrusted=trust[name].untrusted_reason() if name in trust and trust[name].untrusted else None,
            cascade=name in spec.cascade_plans,
        )
        for name, threshold in gated
        if name in reports
    }
    results = list(by_name.values())
    outcomes: list[GateOutcome] = [r.outcome for r in results] + ["unscored"] * (len(gated) - len(results))
    outcome = combined_outcome(outcomes)
    if len(gated) > 1:
        # The overall verdict first, so 'assay gate ... | head -1' is the verdict; each metric's follows.
        colour = _COLOUR[outcome]
        parts = " · ".join(
            f"{printable(_rule_text(by_name[name]))} {by_name[name].outcome.upper()}"
            if name in by_name
            else f"{printable(name)} UNSCORED"
            for name, _ in gated
        )
        partial_run = " on a partial run" if any(r.gated_partial for r in results) else ""
        out_console.print(
            f"[bold {colour}]GATE {outcome.upper()} ({len(gated)} metrics{partial_run})[/bold {colour}]: {parts}",
            soft_wrap=True,
        )
        if outcome == "incomplete":
            for reason in partial:
                out_console.print(f"[bold yellow]not gated:[/bold yellow] {printable(reason)}", soft_wrap=True)
    for name, _ in gated:
        if len(gated) > 1:
            out_console.print()
        if name not in by_name:
            out_console.print(
                f"[bold yellow]GATE UNSCORED[/bold yellow]: {printable(name)} has no result in run "
                f"{printable(run_id, breaks=False)}",
                soft_wrap=True,
            )
            continue
        render_gate(by_name[name], reports[name], run_id, explain=explain)
        figure = trust.get(name)
        if figure is not None and not figure.untrusted:  # an untrusted one was said above, with the verdict
            out_console.print(f"[dim]{printable(figure.text())}[/dim]", soft_wrap=True)
    if summary_md is not None:
        texts = {name: figure.text() for name, figure in trust.items()}
        _append_summary(summary_md, gate_summary_markdown(results, reports, run_id=run_id, trust=texts))
    raise typer.Exit(_EXIT[outcome])


def _append_summary(path: Path | None, text: str) -> None:
    """Append ``text`` to the job summary file (its folder is created)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise _usage(f"cannot append the summary to {path}: {exc}") from None
