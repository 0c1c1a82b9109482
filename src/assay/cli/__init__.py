"""The ``assay`` command line: a thin shell over the Python API, one module per command."""

from __future__ import annotations

import sys
import warnings

import typer

try:  # typer >= 0.20 ships its own copy of click
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer on plain click
    from click.exceptions import ClickException, UsageError  # type: ignore[assignment]

from assay import __version__
from assay.cli._browse import browse
from assay.cli._cache import cache_app
from assay.cli._calibrate import calibrate
from assay.cli._envvars import AssayGroup
from assay.cli._export import export
from assay.cli._gate import gate
from assay.cli._judges import judges_app
from assay.cli._metrics import metrics
from assay.cli._model import model_app
from assay.cli._report import report
from assay.cli._retrieval import retrieval, trec
from assay.cli._review import review
from assay.cli._run import run
from assay.cli._runs import runs_app
from assay.cli._simulate import simulate

__all__ = ["app", "main"]

app = typer.Typer(
    name="assay",
    help="Judge LLM outputs with binary verdicts: faithfulness, retrieval, graders.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"auto_envvar_prefix": "ASSAY"},
    cls=AssayGroup,  # every option's variable is ASSAY_<COMMAND>_<OPTION> (see _envvars)
)
app.command("run")(run)
app.command("calibrate")(calibrate)
# gate: an unknown option must exit 3 (usage), not click's 2 (which means "flaky" here).
app.command("gate", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})(gate)
app.command("simulate")(simulate)
app.command("retrieval")(retrieval)
app.command("trec")(trec)
app.command("metrics")(metrics)
app.command("report")(report)
app.command("browse")(browse)
app.command("export")(export)
app.command("review")(review)
app.add_typer(runs_app, name="runs")
app.add_typer(model_app, name="model")
app.add_typer(cache_app, name="cache")
app.add_typer(judges_app, name="judges")


@app.command("version")
def version() -> None:
    """Print assay's version."""
    typer.echo(__version__)


def _show_warning(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
    """Python warnings on the command line: one line in the CLI's own style, without the source line."""
    from assay._safety import printable
    from assay.cli._console import err_console

    err_console.print(f"[bold yellow]warning[/bold yellow]: {printable(str(message))}", soft_wrap=True)


def main() -> None:
    """Entry point of the ``assay`` script.

    A usage error (an unknown option, ``--concurrency 0``) exits 1 like every other
    "could not run" error, not click's 2, which ``assay run`` uses for invalid input rows;
    under ``assay gate`` it exits 3, the gate's usage code (2 means flaky there).
    """
    warnings.showwarning = _show_warning
    try:
        code = app(standalone_mode=False)
    except UsageError as exc:
        exc.show()
        command = exc.ctx.command.name if exc.ctx is not None else None
        if exc.exit_code not in (None, 2):
            sys.exit(exc.exit_code)
        sys.exit(3 if command == "gate" else 1)
    except ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
