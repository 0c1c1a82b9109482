"""``assay runs``: list, show and export stored runs."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Annotated, Any, Literal, cast

import typer
from rich.table import Table

from assay._safety import printable, redact_url, scrub, url_secrets
from assay._scores import Score
from assay._sqlite import storage_error
from assay.analysis import judge_models_note
from assay.cli._console import (
    EXIT_OK,
    EXIT_USAGE,
    end_state_lines,
    err_console,
    fmt_score,
    out_console,
    stdout,
    verdict_lines,
)
from assay.errors import AssayError, counted
from assay.run import JudgeRecord, RunStore, SampleResult, TrustFigure, trust_for_run
from assay.run._cascade import cascade_lines, plan_lines
from assay.run._cost import describe_cost
from assay.run._review import waiting_for_review

__all__ = ["print_cascade", "print_trust", "runs_app"]

runs_app = typer.Typer(help="Stored runs: list, show, export.", no_args_is_help=True)
StoreOption = Annotated[Path, typer.Option("--store", help="The run store (SQLite).")]


def print_trust(trust: Mapping[str, TrustFigure], record: JudgeRecord | None) -> None:
    """The judge exactly, then per metric how far it agrees with people ("not for gating" in yellow)."""
    if record is not None:
        out_console.print("judge " + printable(" · ".join(record.lines()) or record.identity), soft_wrap=True)
    for name, figure in trust.items():
        text = printable(figure.text())
        if figure.untrusted:
            out_console.print(f"[bold yellow]{printable(name)}[/bold yellow]: {text}", soft_wrap=True)
        else:
            out_console.print(f"{printable(name)}: {text}", soft_wrap=True)


def print_cascade(plans: Mapping[str, Mapping[str, Any]], results: Iterable[SampleResult]) -> None:
    """Under a cascade run's scores, per metric: its plan, the share decided per level, the guarantee, review, calls."""
    scores: dict[str, list[Score]] = {name: [] for name in plans}
    for result in results:
        for name, score in result.scores.items():
            if name in scores:
                scores[name].append(score)
    for name, plan in plans.items():
        out_console.print(f"[bold]{printable(name)}[/bold] cascade", soft_wrap=True)
        for line in [*plan_lines(plan), *cascade_lines(plan, scores[name])]:
            out_console.print("  " + printable(line), soft_wrap=True)


def calibration_brief(calibration: Mapping[str, object]) -> str:
    """A calibration run's headline: its agreement, not its metric's mean (the share judged 1).

    ``calibration: balanced accuracy 0.62 [0.27-0.93], n=8`` and, for a limited run,
    ``, partial: judged 4 of 120 items (--limit 4)``.
    """

    def number(value: object) -> float:
        return float(value) if isinstance(value, int | float) else float("nan")

    ci = calibration.get("balanced_accuracy_ci")
    low, high = (number(v) for v in ci) if isinstance(ci, list) and len(ci) == 2 else (math.nan, math.nan)
    text = (
        f"calibration: balanced accuracy {fmt_score(number(calibration.get('balanced_accuracy')))} "
        f"[{fmt_score(low)}-{fmt_score(high)}], n={calibration.get('n')}"
    )
    if calibration.get("partial"):
        limit = f" (--limit {calibration['limit']})" if calibration.get("limit") else ""
        text += f", partial: judged {calibration.get('items')} of {calibration.get('items_total')} items{limit}"
    return text


def _trust(runs: RunStore, run_id: str) -> dict[str, TrustFigure]:
    """The run's trust figures; a table or store that cannot be read says so instead of stopping ``runs show``."""
    try:
        return trust_for_run(runs, run_id)
    except (AssayError, OSError, ValueError) as exc:
        err_console.print(f"[yellow]warning[/yellow]: trust figures unavailable: {printable(str(exc))}")
        return {}


def _open(store: Path) -> RunStore:
    if not store.exists():
        err_console.print(f"[red]error:[/red] no run store at {printable(store)}; 'assay run' creates one")
        raise typer.Exit(EXIT_USAGE)
    return RunStore(store)


@runs_app.command("list")
def list_runs(store: StoreOption = Path(".assay/runs.sqlite")) -> None:
    """Every run, the one written last first (what --latest picks), with its status and headline scores."""
    if not store.exists():
        out_console.print(f"no runs yet: {printable(store)} does not exist ('assay run DATA' creates it)")
        raise typer.Exit(EXIT_OK)
    with _open(store) as runs:
        infos = runs.runs()
        if not infos:
            out_console.print(f"no runs yet in {printable(store)} ('assay run DATA' adds one)")
            return
        table = Table(title=f"runs in {printable(store)}", title_justify="left")
        table.add_column("run", no_wrap=True)
        for column in ("last written", "status", "dataset", "judge", "samples", "repeats", "bad rows", "scores"):
            table.add_column(column)
        for info in infos:
            scores = ""
            calibration = (info.summary or {}).get("_calibration")
            if info.spec.engine == "calibrate" and isinstance(calibration, Mapping):
                scores = calibration_brief(calibration)
            elif info.summary:
                scores = ", ".join(
                    f"{printable(name, breaks=False)} {fmt_score(float('nan') if s['mean'] is None else s['mean'])}"
                    for name, s in info.summary.items()
                    if not name.startswith("_")
                )
            table.add_row(
                printable(info.run_id, breaks=False),
                printable(info.updated_at, breaks=False),  # the order of the list (the id says when it began)
                printable(info.status, breaks=False),
                printable(info.spec.dataset or "-"),
                printable(info.spec.judge_model),
                str(info.n_samples),
                str(info.n_repeats),
                str(info.n_errors),
                scores,
            )
        out_console.print(table)
        out_console.print("[dim]every run, with each one's report, in one page: 'assay browse'[/dim]")


@runs_app.command("show")
def show(
    run_id: str,
    store: StoreOption = Path(".assay/runs.sqlite"),
    sample: Annotated[
        str | None,
        typer.Option(
            "--sample",
            help="Show one sample's scores in full: verdicts with reasons and cited calls, an agent's end state.",
        ),
    ] = None,
) -> None:
    """One run's spec, summary, unscored samples and invalid rows (or, with --sample, one sample's scores)."""
    if sample is not None:
        _show_sample(run_id, sample, store)
        return
    with _open(store) as runs:
        try:
            info = runs.info(run_id)
        except AssayError as exc:
            err_console.print(f"[red]error:[/red] {printable(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
        spec = info.spec
        out_console.print(
            f"[bold]run {printable(info.run_id, breaks=False)}[/bold] · {printable(info.status, breaks=False)} · "
            f"created {printable(info.created_at, breaks=False)}"
        )
        out_console.print(f"dataset {printable(spec.dataset or '-')} ({printable(spec.dataset_fingerprint)})")
        # Runs stored before the run spec redacted its URL may still hold credentials in it,
        # and servers' echoes of them in error messages: redacted here too.
        at = f" at {printable(redact_url(spec.base_url))}" if spec.base_url else ""
        secrets = url_secrets(spec.base_url)
        out_console.print(
            f"judge {printable(spec.judge)} → {printable(spec.judge_model)}{at}  engine {printable(spec.engine)}"
        )
        out_console.print(f"metrics {printable(', '.join(f'{m.name} v{m.version}' for m in spec.metrics))}")
        plans = spec.cascade_plans
        shown = {k: v for k, v in spec.options.items() if k != "cascade"}
        out_console.print(f"options {printable(str(shown))}" + (" (cascade: below)" if plans else ""))
        calibration = (info.summary or {}).get("_calibration")
        if spec.engine == "calibrate" and isinstance(calibration, Mapping):
            out_console.print(
                f"[bold]{printable(calibration_brief(calibration))}[/bold] (the means below are the share judged 1)",
                soft_wrap=True,
            )
        if info.summary:
            table = Table(title="summary", title_justify="left")
            for column in ("metric", "mean", "scored", "unscored (by reason)"):
                table.add_column(column)
            for name, s in info.summary.items():
                if name.startswith("_"):
                    continue
                mean = float("nan") if s["mean"] is None else s["mean"]
                reasons = ", ".join(f"{r}: {n}" for r, n in s["unscored_by_reason"].items()) or "0"
                table.add_row(printable(name), fmt_score(mean), str(s["n_scored"]), printable(reasons))
            out_console.print(table)
            print_trust(_trust(runs, run_id), spec.judge_record)
            if plans:
                print_cascade(plans, runs.results(run_id))
            cost = info.summary.get("_cost")
            if cost:
                # A model without a price makes the cost unknown, never $0.0000. (Runs stored
                # before priced calls were counted say "+ unknown" when some model had none.)
                priced = cost.get("priced_calls", cost["calls"] if not cost.get("unpriced_models") else 1)
                spent = describe_cost(
                    cost["usd"], cost.get("unpriced_models") or (), priced, cost.get("uncounted_models") or ()
                )
                out_console.print(
                    f"judge calls {cost['calls']} (cached {cost['cached_calls']}) · tokens "
                    f"{cost['prompt_tokens']:,} in / {cost['completion_tokens']:,} out · cost {printable(spent)}"
                )
                unstored = info.summary.get("_unstored_calls")
                if unstored:
                    out_console.print(
                        f"[yellow]+ {counted(int(unstored), 'judge call')} answered for samples an interrupt stopped: "
                        "in no record and not counted above (those samples are judged again on resume)[/yellow]"
                    )
                models = judge_models_note(cost.get("models") or {}, spec.judge_model)
                if models:
                    out_console.print(f"[bold yellow]warning[/bold yellow]: {printable(models)}", soft_wrap=True)
        unscored = [
            (r["line"], r["id"], m, s["unscored_reason"], s.get("detail"))
            for r in runs.records(run_id)
            for m, s in r["scores"].items()
            if s["unscored_reason"]
        ]
        if unscored:
            out_console.print(f"[yellow]{len(unscored)} unscored[/yellow]")
            for line, sample_id, m, reason, detail in unscored[:20]:
                out_console.print(
                    f"  line {line} id={printable(sample_id, breaks=False)} {printable(m)}: {printable(reason)} — "
                    f"{printable(scrub(detail or '', secrets))}"
                )
        waiting = sum(len(s.get("pending") or ()) for r in runs.records(run_id) for s in r["scores"].values())
        if waiting:
            out_console.print(
                f"[bold yellow]{waiting_for_review(waiting)}[/bold yellow] (needs_review: in no mean "
                f"until a person answers): 'assay review {printable(run_id, breaks=False)}'",
                soft_wrap=True,
            )
        errors = runs.row_errors(run_id)
        if errors:
            out_console.print(f"[red]{counted(len(errors), 'invalid input row')}[/red] (not judged)")
        for _line, message in errors[:20]:
            err_console.print(f"[red]invalid row[/red] {printable(scrub(message, secrets))}")
        if len(errors) > 20:
            err_console.print(f"  … and {len(errors) - 20} more ('assay report {printable(run_id)}' lists them all)")


def _show_sample(run_id: str, sample_id: str, store: Path) -> None:
    """Every score of one sample (each repeat): value or unscored reason, explanation, end state, verdicts."""
    with _open(store) as runs:
        try:
            records = [r for r in runs.records(run_id) if r["id"] == sample_id]
            secrets = url_secrets(runs.info(run_id).spec.base_url)
        except AssayError as exc:
            err_console.print(f"[red]error:[/red] {printable(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
    if not records:
        err_console.print(f"[red]error:[/red] run {printable(run_id)} has no sample {printable(sample_id)!s}")
        raise typer.Exit(EXIT_USAGE)
    for record in records:
        out_console.print(
            f"[bold]{printable(sample_id, breaks=False)}[/bold] · line {record['line']} · repeat {record['repeat']}"
        )
        for metric, score in record["scores"].items():
            value = score.get("value")
            shown = fmt_score(float("nan") if value is None else float(value))
            if score.get("unscored_reason"):
                shown = f"unscored ({printable(score['unscored_reason'])})"
            out_console.print(f"[bold]{printable(metric)}[/bold]: {shown}")
            for text in (score.get("detail"), score.get("explanation")):
                if text:
                    out_console.print(f"  [dim]{printable(scrub(text, secrets))}[/dim]")
            for line in end_state_lines(score):
                out_console.print(line)
            for line in verdict_lines(score):
                out_console.print(line)


class _Scrubbed(io.TextIOBase):
    """A text sink that masks ``secrets`` in everything written through it."""

    def __init__(self, handle: IO[str], secrets: tuple[str, ...]) -> None:
        self._handle = handle
        self._secrets = secrets

    def write(self, text: str) -> int:
        self._handle.write(scrub(text, self._secrets))
        return len(text)


def _scrubbing(handle: IO[str], secrets: tuple[str, ...]) -> IO[str]:
    """``handle``, or (for a run stored with credentials in its URL) a sink that masks them."""
    return cast(IO[str], _Scrubbed(handle, secrets)) if secrets else handle


def write_export(
    runs: RunStore, run_id: str, out: Path | None, kind: Literal["jsonl", "csv"] = "jsonl", *, wide: bool = False
) -> int:
    """Write every stored result of ``run_id`` to ``out`` (standard output if ``None``); return the rows.

    The store is the source: what is written is the whole run, whatever was judged in which
    process. A regular file is replaced atomically (written beside it, then renamed), so a
    reader never sees half of it and a failed write leaves the old file; a pipe or device
    is written directly. Credentials of the run's URL are masked.

    Raises:
        StorageError: ``out`` cannot be written (one message naming it and the cause).
    """
    secrets = url_secrets(runs.spec(run_id).base_url)
    if out is None:
        return runs.export(run_id, _scrubbing(cast(IO[str], stdout), secrets), kind, wide=wide)
    direct = out.exists() and not out.is_file()  # /dev/stdout, a FIFO: cannot be replaced
    target = out if direct else out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8", newline="") as handle:
            n = runs.export(run_id, _scrubbing(handle, secrets), kind, wide=wide)
        if not direct:
            os.replace(target, out)
    except OSError as exc:
        if not direct:
            target.unlink(missing_ok=True)
        raise storage_error(exc, out, "the output file", "write") from None
    return n


@runs_app.command("export")
def export(
    run_id: str,
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl (full records) or csv (one row per metric).")] = (
        "jsonl"
    ),
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: standard output).")] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="One row per sample (and repeat), a column per metric with its reason and unscored columns, "
            "in input order (the shape of Ragas' to_pandas()).",
        ),
    ] = False,
    store: StoreOption = Path(".assay/runs.sqlite"),
) -> None:
    """Write a run's results as JSONL or CSV: with the question and answer, in input order."""
    if fmt not in ("jsonl", "csv"):
        err_console.print(f"[red]error:[/red] --format must be jsonl or csv, not {fmt!r}")
        raise typer.Exit(EXIT_USAGE)
    kind: Literal["jsonl", "csv"] = "jsonl" if fmt == "jsonl" else "csv"
    with _open(store) as runs:
        try:
            n = write_export(runs, run_id, out, kind, wide=wide)
        except AssayError as exc:
            err_console.print(f"[red]error:[/red] {printable(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
    err_console.print(f"exported {counted(n, 'row')}")
