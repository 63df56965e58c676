"""``engine show RUN_ID``: one run, its outcome and its stored trace as a tree.

Everything read from the store (ids, flow and option names, where, replies) is printed as
plain :class:`~rich.text.Text`, never as rich markup, so ``[bold]`` in an option shows as
written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from engine._observe import TraceLine, trace_lines, usd
from engine.cli._common import DEFAULT_STORE, STATUS_STYLE, out, run_async
from engine.cli._decide import decide_lines
from engine.cli._hints import command_line
from engine.cli._live import live_view
from engine.cli._run import StoreOpt
from engine.cli._stores import find_run, open_store
from engine.store import Run

__all__ = ["run_panel", "show", "status_text"]

_KIND_STYLE = {"decision": "bold", "step": "blue", "tool_call": "blue", "run": "bold"}


def show(
    run_id: Annotated[str, typer.Argument(help="The run's id (or a unique start of it).")],
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run and its trace as JSON.")
    ] = False,
) -> None:
    """Show one run: its outcome, why it stopped, and its trace as a tree."""

    async def body() -> None:
        async with open_store(store, read_only=True) as opened:
            run = await find_run(opened, run_id, store)
            trace = await opened.load_trace(run.run_id)
            # No trace until an execution ends; its journal is written as it goes.
            records = await opened.load_journal(run.run_id) if trace is None else []
        if as_json:
            data = {"run": run.model_dump(mode="json"), "trace": trace}
            out.print_json(json.dumps(data, default=str))
            return
        out.print(run_panel(run, store))
        decide = decide_lines(run, store, decision_names(trace))
        if decide:
            out.print(Text("\n".join(decide)), soft_wrap=True)
        if trace is None:
            out.print(live_view(run, records))
            return
        out.print(trace_tree(trace_lines(trace), run))

    run_async(body)


def status_text(status: str) -> Text:
    """Return a run status, coloured."""
    return Text(status, style=STATUS_STYLE.get(status, ""))


def run_panel(run: Run, store: str | None = None) -> Panel:
    """Return a run's summary: flow, status, counts, timings, and why it stopped.

    ``store`` is the command's ``--store``: the resume hint names it unless it is the default.
    """
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    grid.add_row("flow", Text(run.flow))
    grid.add_row("status", status_text(run.status))
    grid.add_row("created", _when(run.created_at))
    if run.finished_at is not None:
        took = run.finished_at - (run.started_at or run.created_at)
        since = " since its first start" if run.resumes else ""
        grid.add_row("finished", f"{_when(run.finished_at)} ({took:.2f} s{since})")
    grid.add_row(
        "work",
        f"{run.transitions} transitions · {run.model_calls} model calls · "
        f"{run.usage.input_tokens}+{run.usage.output_tokens} tokens · {run.resumes} resumes",
    )
    grid.add_row("cost", usd(run.cost_usd) if run.cost_usd is not None else "— (price unknown)")
    if run.error is not None:
        _error_rows(grid, run, store)
    elif run.result is not None:
        grid.add_row("result", Text(_short(json.dumps(run.result, default=str), 400)))
    return Panel(grid, title=Text(f"run {run.run_id}"), title_align="left")


def _error_rows(grid: Table, run: Run, store: str | None) -> None:
    error = run.error
    assert error is not None
    grid.add_row("stopped by", Text(error.kind, style="red"))
    grid.add_row("where", Text(error.where or "?"))
    grid.add_row("why", Text(_short(error.message, 500)))
    if error.options:
        grid.add_row("offered", Text(", ".join(error.options)))
    for i, reply in enumerate(error.replies or []):
        grid.add_row(f"reply {i + 1}", Text(_short(reply, 200)))
    resume = command_line("resume", run.run_id, store=store)  # works as printed
    if run.status == "suspended" and error.menu:
        grid.add_row(
            "resume",
            Text(
                f"{resume} (ask again), --model SPEC (another model), "
                "or --pick (decide by hand, as below)"
            ),
        )
    elif run.status == "suspended" and error.options:
        example = json.dumps({"call": error.options[0]})
        grid.add_row(
            "resume",
            Text(
                f"{resume} (ask again), --model SPEC (another model), "
                f"or --pick '{example}' (decide by hand)"
            ),
        )
    elif run.status in ("failed", "cancelled"):
        grid.add_row("resume", Text(resume))


def decision_names(trace: Mapping[str, Any] | None) -> dict[str, str]:
    """Return the name of each decision of a stored trace, by its node key."""
    nodes = trace.get("nodes") if trace is not None else None
    return {
        str(node.get("key")): str(node.get("name"))
        for node in nodes or ()
        if isinstance(node, Mapping) and node.get("kind") == "decision"
    }


def trace_tree(lines: list[TraceLine], run: Run) -> Tree:
    """Return a stored trace's lines as a rich tree."""
    root = Tree(Text(f"trace of {run.run_id}", style="bold"))
    stack: list[Tree] = [root]
    for line in lines:
        del stack[line.depth + 1 :]
        parent = stack[min(line.depth, len(stack) - 1)]
        stack.append(parent.add(_styled(line)))
    return root


def _styled(line: TraceLine) -> Text:
    style = "red" if line.failed else _KIND_STYLE.get(line.kind, "")
    if "(replayed)" in line.text and not line.failed:
        style = f"{style} dim".strip()
    return Text(line.text, style=style)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _short(value: object, limit: int) -> str:
    text = str(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
