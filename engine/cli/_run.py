"""``engine run FLOW --input FILE.jsonl``: run every record of a file as a durable run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from engine._base import mask_secrets
from engine._run import Engine
from engine.cli._batch import Job, Tally, drive
from engine.cli._common import DEFAULT_STORE, note, out, run_async, store_option
from engine.cli._inputs import BadLine, Flow, Record, count_lines, load_flow, read_records
from engine.cli._models import choose_model
from engine.cli._progress import BatchProgress, summary
from engine.cli._stores import open_store, parse_store_url, same_store
from engine.store import Run

__all__ = ["ConcurrencyOpt", "ModelOpt", "StoreOpt", "next_steps", "run"]

StoreOpt = Annotated[
    str,
    typer.Option(
        "--store",
        "-s",
        envvar="ENGINE_STORE",
        help="Where runs live: sqlite:///file.db, a file path, memory://, or postgresql://.",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="openai:<model>, anthropic:<model>, openai:<model>@<base_url>, or "
        "simulated[:seed=N,faults=R,latency=S]. Default: a provider key's model, else "
        "SimulatedModel.",
    ),
]
ConcurrencyOpt = Annotated[
    int, typer.Option("--concurrency", "-c", min=1, help="The most runs in flight at once.")
]


def run(
    flow: Annotated[str, typer.Argument(help="module:function, or a short name from flows/.")],
    input: Annotated[
        Path, typer.Option("--input", "-i", help="A JSONL file: one flow input per line.")
    ],
    concurrency: ConcurrencyOpt = 32,
    model: ModelOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", "-t", min=0, help="Seconds one run may take; then cancelled."),
    ] = None,
    id_field: Annotated[
        str, typer.Option(help="The record field used as run id (so reruns run nothing twice).")
    ] = "id",
) -> None:
    """Run FLOW on every record of a JSONL file, with live progress and a summary."""

    async def body() -> int:
        chosen = choose_model(model)
        if chosen.note:
            note(chosen.note)
        found = load_flow(flow)
        tally = Tally(total=count_lines(input))
        async with open_store(store, create=True) as opened:
            engine = Engine(model=chosen.model, store=opened)
            items = (
                item if isinstance(item, BadLine) else _job(engine, found, item)
                for item in read_records(input, found, id_field=id_field or None)
            )
            with BatchProgress(tally, f"{flow}: {tally.total} records of {input}") as progress:
                await drive(
                    items,
                    store=opened,
                    tally=tally,
                    concurrency=concurrency,
                    timeout_s=timeout,
                    refresh=progress.refresh,
                )
        out.print(summary(tally, f"{found.name} on {input}, model {chosen.spec}"))
        rerun = f"engine run {flow} --input {input}" if tally.done < tally.total else None
        next_steps(tally, flow, store, rerun=rerun)
        return 130 if tally.interrupted else 0

    code = run_async(body)
    if code:
        raise typer.Exit(code)


def _job(engine: Engine, flow: Flow, record: Record) -> Job:
    async def start() -> Run:
        return await engine.run(flow.fn, record.value, run_id=record.run_id)

    return Job(record.run_id, start, record.line)


def next_steps(
    tally: Tally,
    flow: str,
    store: str,
    *,
    resumed: str | None = None,
    rerun: str | None = None,
) -> None:
    """Print the commands to look at, or continue, what the batch left behind."""
    if parse_store_url(store).kind == "memory":
        note("memory:// kept these runs for this command only; use a file store to look back")
        return
    where = "" if same_store(store, store_option()) else f" --store {store}"
    lines: list[tuple[str, str]] = []
    if resumed is not None:
        lines.append((f"engine show {resumed}{where}", "a resumed run's trace"))
    if tally.interrupted:
        lines.append((f"engine resume --all-cancelled{where}", "continue the interrupted runs"))
        if rerun is not None:
            lines.append((f"{rerun}{where}", "start the records that never started"))
    suspended = tally.stopped.get("suspended", [])
    stopped = suspended or tally.stopped.get("failed", [])
    if stopped:
        lines.append((f"engine show {stopped[0]}{where}", "see why a run stopped"))
    if suspended:
        lines.append((f"engine resume --all-suspended{where}", "ask the failed decisions again"))
    lines.append((f"engine graph {flow}{where}", "the routing graph of the stored runs"))
    out.print("\n[bold]next:[/]")
    for command, why in lines:
        shown = escape(mask_secrets(command))
        out.print(f"  {shown:<44} [dim]# {why}[/]", highlight=False, soft_wrap=True)
