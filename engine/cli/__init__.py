"""The ``engine`` command line: run flows over files, look inside runs, resume, draw graphs.

Installed as the ``engine`` command and runnable as ``python -m engine``. One module per
concern: ``_run`` (run a file), ``_resume``, ``_recover`` (the runs of a process that died),
``_answer`` (a person answers a waiting run),
``_show`` (one run's trace), ``_runs`` (list and prune), ``_graph`` (the routing graph);
``_progress`` follows and shows an engine batch of many runs; ``_stores``, ``_models`` and
``_inputs`` turn options into objects.
"""

from __future__ import annotations

from typing import Annotated

import typer

from engine._base import configure_logging
from engine.cli._answer import answer
from engine.cli._graph import graph
from engine.cli._recover import recover
from engine.cli._resume import resume
from engine.cli._run import run
from engine.cli._runs import prune, runs
from engine.cli._show import show
from engine.cli._submit import submit_command
from engine.cli._ui import ui
from engine.cli._worker import worker_command

__all__ = ["app"]

app = typer.Typer(
    name="engine",
    help="Run flows whose next step an LLM picks; look inside runs; resume stopped ones.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main(
    log_level: Annotated[
        str,
        typer.Option(
            "--log-level",
            envvar="ENGINE_LOG_LEVEL",
            help="debug, info, warning or error (logs go to stderr).",
        ),
    ] = "warning",
    log_json: Annotated[
        bool | None,
        typer.Option(
            "--log-json/--log-console",
            help="JSON lines, or readable console lines. Default: console on a terminal.",
        ),
    ] = None,
) -> None:
    """Set up logging for every command."""
    try:
        configure_logging(log_level, json=log_json)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--log-level") from None


app.command()(run)
app.command()(runs)
app.command()(show)
app.command()(resume)
app.command()(answer)
app.command()(recover)
app.command()(graph)
app.command()(prune)
app.command("submit")(submit_command)
app.command("worker")(worker_command)
app.command()(ui)
