"""``assay review``: a person answers the questions no judge was sure of, in the terminal or from a file.

A thin shell over :mod:`assay.run._review`: it prints each pending question (the statement,
the evidence, what each judge leaned to and how sure it was, all of it escaped: answers and
contexts are untrusted text), saves each answer as it is given, and writes the run's answers
as labelled items for ``assay calibrate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay._safety import printable
from assay.cli._console import EXIT_OK, EXIT_USAGE, err_console, fmt_score, out_console
from assay.errors import AssayError, counted
from assay.run._review import (
    Answer,
    PendingQuestion,
    ReviewOutcome,
    apply_answers,
    default_labels_path,
    import_answers,
    pending_questions,
    write_labels,
)
from assay.run._store import RunStore

__all__ = ["review"]

_SHOWN_CHARS = 600
"""Characters of an answer or a context shown with a question (the rest: ``assay runs show --sample``)."""
_CHOICES = {"s": "supported", "n": "not supported", "k": "skip", "q": "quit"}
"""What a person can answer: for a grader's criterion, supported means met (PASS)."""


def _clip(text: str, limit: int = _SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_LEANINGS: dict[object, str] = {1: "supported", 0: "not supported", "PASS": "pass", "FAIL": "fail", "NA": "n/a"}


def _leaning(value: object) -> str:
    return _LEANINGS.get(value, printable(str(value), breaks=False))


def _apart(confidence: float, threshold: float | None) -> tuple[str, str]:
    """Both to 2 decimals, or as many (up to 6) as show them apart: 0.550 needed 0.551, never 0.55 and 0.55."""
    if threshold is None:
        return f"{confidence:.2f}", ""
    digits = 2
    while digits < 6 and confidence != threshold and f"{confidence:.{digits}f}" == f"{threshold:.{digits}f}":
        digits += 1
    return f"{confidence:.{digits}f}", f"{threshold:.{digits}f}"


def _show(question: PendingQuestion, n: int, total: int) -> None:
    out_console.print(
        f"\n[bold]question {n} of {total}[/bold] · line {question.line} "
        f"id={printable(question.sample_id, breaks=False)} · {printable(question.metric)}"
        + (
            f" · waits in repeats {', '.join(map(str, question.repeats))} (one answer for all)"
            if len(question.repeats) > 1
            else f" · repeat {question.repeat}"
            if question.repeat
            else ""
        ),
        soft_wrap=True,
    )
    graded = any(isinstance(t.value, str) for t in question.tried)  # PASS/FAIL: a grader's criterion
    asked = "does the answer meet the criterion?" if graded else "is it supported?"
    out_console.print(f"[bold]{asked}[/bold] {printable(question.subject, breaks=False)}", soft_wrap=True)
    sample = question.sample
    if sample.question:
        out_console.print(f"  [dim]question[/dim] {printable(_clip(sample.question), breaks=False)}", soft_wrap=True)
    if sample.answer:
        out_console.print(f"  [dim]answer[/dim] {printable(_clip(sample.answer), breaks=False)}", soft_wrap=True)
    if question.evidence:
        for ref in question.evidence:
            out_console.print(
                f"  [dim]evidence (context {ref.context + 1})[/dim] {printable(_clip(ref.text), breaks=False)}",
                soft_wrap=True,
            )
    else:
        for i, context in enumerate(sample.contexts):
            out_console.print(f"  [dim]context {i + 1}[/dim] {printable(_clip(context), breaks=False)}", soft_wrap=True)
    for verdict in question.tried:
        decision = verdict.decision
        by = printable(decision.by if decision else "a judge", breaks=False)
        sure = ""
        if decision is not None and decision.confidence is not None:
            conf, needed = _apart(decision.confidence, decision.threshold)
            sure = f" (confidence {conf}, needed {needed})" if needed else f" (confidence {conf})"
        out_console.print(f"  [dim]judge[/dim] {by} leaned {_leaning(verdict.value)}{sure}", soft_wrap=True)


def _saved(outcome: ReviewOutcome) -> None:
    for line, repeat, metric, value in outcome.rescored:
        again = f" (repeat {repeat})" if repeat else ""
        out_console.print(
            f"  line {line}{again} {printable(metric)}: no question left, scored {fmt_score(value)} by the metric"
        )


def _ask() -> str:
    while True:
        try:
            said: str = typer.prompt("[s]upported / [n]ot supported / s[k]ip / [q]uit", default="", show_default=False)
        except typer.Abort:  # end of input (Ctrl-D): as quit, every answer given is saved
            return "q"
        choice = said.strip().lower()[:1]
        if choice in _CHOICES:
            return choice
        err_console.print("answer s, n, k or q")


def _labels(runs: RunStore, run_id: str, store: Path, labels_out: Path | None) -> None:
    path = labels_out or default_labels_path(store, run_id)
    written, skipped = write_labels(runs, run_id, path)
    if not written and not skipped:
        return
    out_console.print(
        f"labels: {counted(written, 'answer')} of this run written to {printable(path)} as labelled items"
        + (f" ({skipped} graded from a trace alone give none)" if skipped else "")
        + f"; use them with 'assay calibrate {printable(path)} --judge JUDGE'. They hold for data of this "
        "run's kind: a threshold's guarantee needs labels of the same kind of data it is applied to.",
        soft_wrap=True,
    )


def review(
    run_id: Annotated[str | None, typer.Argument(help="The run whose pending questions to answer.")] = None,
    store: Annotated[Path, typer.Option("--store", help="The run store (SQLite).")] = Path(".assay/runs.sqlite"),
    import_file: Annotated[
        Path | None,
        typer.Option("--import", help="Apply an answers file the run browser wrote, instead of asking."),
    ] = None,
    labels_out: Annotated[
        Path | None,
        typer.Option("--labels-out", help="Where to write the run's answers as labelled items (JSONL)."),
    ] = None,
    latest: Annotated[
        bool, typer.Option("--latest", help="Review the run written last in the store (instead of RUN_ID).")
    ] = False,
) -> None:
    """Answer the questions no judge was sure of: supported, not supported, skip or quit.

    Each answer is saved at once (quitting loses nothing) as a verdict decided by a person;
    a sample with no question left is scored again by its metric. The run's answers are
    written as labelled items for 'assay calibrate' (default: labels/RUN.jsonl beside the
    store). Exit codes: 0 done (also when nothing waits); 1 could not review (no such run,
    a bad answers file: nothing of it is applied).
    """
    if not store.exists():
        err_console.print(f"[red]error:[/red] no run store at {printable(store)}; 'assay run' creates one")
        raise typer.Exit(EXIT_USAGE)
    if (run_id is None) == (not latest):
        said = "give a RUN_ID or --latest, not both" if latest else "give the RUN_ID to review, or --latest"
        err_console.print(f"[red]error:[/red] {said} (see 'assay runs list')")
        raise typer.Exit(EXIT_USAGE)
    with RunStore(store) as runs:
        try:
            run_id = runs.latest() if run_id is None else run_id
            if import_file is not None:
                outcome = import_answers(runs, run_id, import_file)
                out_console.print(
                    f"imported {counted(outcome.answered, 'answer')} from {printable(import_file)}"
                    + (f" ({outcome.unchanged} already recorded)" if outcome.unchanged else "")
                    + f" · {counted(outcome.pending or 0, 'question')} still waiting"
                )
                _saved(outcome)
                _labels(runs, run_id, store, labels_out)
                raise typer.Exit(EXIT_OK)
            questions = pending_questions(runs, run_id)
            if not questions:
                out_console.print(f"run {printable(run_id, breaks=False)}: no question waits for review")
                _labels(runs, run_id, store, labels_out)
                raise typer.Exit(EXIT_OK)
            answered = 0
            for n, question in enumerate(questions, start=1):
                _show(question, n, len(questions))
                choice = _ask()
                if choice == "q":
                    break
                if choice == "k":
                    continue
                answer = Answer(*question.key, supported=choice == "s", where=f"question {n}")
                outcome = apply_answers(runs, run_id, [answer], count_pending=False)
                answered += outcome.answered
                out_console.print(f"  saved: {_CHOICES[choice]}, decided by a person")
                _saved(outcome)
            left = len(pending_questions(runs, run_id))
            out_console.print(
                f"\n{counted(answered, 'answer')} saved · {counted(left, 'question')} still waiting"
                + (f" ('assay review {printable(run_id, breaks=False)}' continues)" if left else "")
            )
            _labels(runs, run_id, store, labels_out)
        except AssayError as exc:
            err_console.print(f"[red]error:[/red] {printable(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
