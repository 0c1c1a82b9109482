"""The ``assay`` command line: a thin shell over the Python API, one module per command."""

from __future__ import annotations

import typer

from assay import __version__
from assay.cli._calibrate import calibrate
from assay.cli._gate import gate
from assay.cli._metrics import metrics
from assay.cli._model import model_app
from assay.cli._report import report
from assay.cli._retrieval import retrieval, trec
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
app.add_typer(runs_app, name="runs")
app.add_typer(model_app, name="model")


@app.command("version")
def version() -> None:
    """Print assay's version."""
    typer.echo(__version__)


def main() -> None:
    """Entry point of the ``assay`` script."""
    app()
