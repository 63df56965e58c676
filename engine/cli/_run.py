"""``engine run FLOW --input FILE.jsonl``: run every record of a file as a durable run.

The records go through :meth:`Engine.as_completed <engine.Engine.as_completed>` like any
program's inputs: at most ``--concurrency`` runs in flight, ``--timeout`` per run, and Ctrl-C
(SIGINT or SIGTERM) shuts the engine down gracefully, each run in flight recorded
``cancelled`` with its journal intact, so ``engine resume --all-cancelled`` continues it.
A line whose run another process holds is left alone, and one whose process died is left for
``engine recover``; the summary accounts for every line, and the exit status says how it went.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from engine._base import mask_secrets
from engine._run import Engine
from engine.cli._common import (
    DEFAULT_STORE,
    EXIT_OK,
    fail,
    note,
    out,
    run_async,
    store_option,
)
from engine.cli._inputs import BadLine, Record, count_lines, load_flow, read_records
from engine.cli._models import SettingOpt, choose_model
from engine.cli._progress import BatchView, Tally, exit_status, summary
from engine.cli._stores import open_store, parse_store_url, same_store
from engine.models import Model, Price

__all__ = [
    "ConcurrencyOpt",
    "LeaseOpt",
    "ModelOpt",
    "PriceOpt",
    "StoreOpt",
    "next_steps",
    "prices_for",
    "run",
]

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
        "simulated[:seed=N,faults=R,latency=S] (the offline stand-in, used only when named). "
        "Default: the model of a set OPENAI_API_KEY or ANTHROPIC_API_KEY.",
    ),
]
ConcurrencyOpt = Annotated[
    int, typer.Option("--concurrency", "-c", min=1, help="The most runs in flight at once.")
]
PriceOpt = Annotated[
    str | None,
    typer.Option(
        "--price",
        help="The model's price in US dollars per million tokens, as in in=0.15,out=0.60 "
        "(needed for a cost where the maintained price table does not know the model).",
    ),
]
LeaseOpt = Annotated[
    float,
    typer.Option(
        "--lease",
        min=1,
        help="Seconds a run's lease lasts without renewal: after a crash, `engine recover` "
        "may take a run over once its lease ran out.",
    ),
]


def run(
    flow: Annotated[str, typer.Argument(help="module:function, or a short name from flows/.")],
    input: Annotated[
        Path, typer.Option("--input", "-i", help="A JSONL file: one flow input per line.")
    ],
    concurrency: ConcurrencyOpt = 32,
    model: ModelOpt = None,
    model_setting: SettingOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", "-t", min=0, help="Seconds one run may take; then cancelled."),
    ] = None,
    id_field: Annotated[
        str, typer.Option(help="The record field used as run id (so reruns run nothing twice).")
    ] = "id",
    lease: LeaseOpt = 60.0,
    price: PriceOpt = None,
) -> None:
    """Run FLOW on every record of a JSONL file, with live progress and a summary.

    Exit status: 0 every line's run completed, 1 some stopped or could not run, 3 none could
    start, 2 bad usage, 4 the store failed, 130 interrupted.
    """

    async def body() -> int:
        found = load_flow(flow)  # a wrong flow or file is the first thing to fix
        tally = Tally(total=count_lines(input))
        chosen = choose_model(model, settings=model_setting)
        if chosen.note:
            note(chosen.note)
        prices = prices_for(chosen.model, price)
        async with open_store(store, create=True) as opened:
            engine = Engine(model=chosen.model, store=opened, lease_s=lease, prices=prices)
            with BatchView(tally, f"{flow}: {tally.total} records of {input}") as view:
                records = _Records(read_records(input, found, id_field=id_field or None), view)
                batch = engine.as_completed(
                    found.fn,
                    records.values(),
                    concurrency=concurrency,
                    run_id=records.run_id,
                    timeout_s=timeout,
                    progress=view.progress,
                    on_error=view.not_started,
                    handle_signals=True,
                )
                await view.follow(batch)
            tally.interrupted = engine.stopping
        out.print(summary(tally, f"{found.name} on {input}, model {chosen.spec}"))
        rerun = f"engine run {flow} --input {input}" if tally.done < tally.total else None
        next_steps(tally, flow, store, rerun=rerun)
        return exit_status(tally)

    code = run_async(body)
    if code != EXIT_OK:
        raise typer.Exit(code)


def prices_for(model: Model, price: str | None) -> dict[str, Price] | None:
    """Return the engine's ``prices`` for ``--price`` (``None`` when it is not given)."""
    if price is None:
        return None
    try:
        return {model.name: Price.parse(price)}
    except (ValueError, TypeError) as exc:
        fail(f"--price {price!r}: {exc}")


class _Records:
    """A file's records as a batch's inputs: each record's value, and its run id on demand.

    The batch asks for the run id of each value it reads (``run_id=``), so the id travels
    beside the value instead of inside it; skipped lines go to the view as they are read, and
    so does a line whose run id an earlier line gave (it would meet that line's run).
    """

    def __init__(self, items: Iterable[Record | BadLine], view: BatchView) -> None:
        self._items = items
        self._view = view
        # By identity, as values need not be hashable; a list, as one object (a small int)
        # may be the value of several records.
        self._ids: dict[int, list[str]] = {}
        self._seen: set[str] = set()

    def values(self) -> Iterator[Any]:
        """Yield each record's value, the flow's argument; report each bad line."""
        for item in self._items:
            if isinstance(item, BadLine):
                self._view.skip(item)
                continue
            if item.run_id in self._seen:
                self._view.duplicate(item.line)
                continue
            self._seen.add(item.run_id)
            self._ids.setdefault(id(item.value), []).append(item.run_id)
            yield item.value

    def run_id(self, value: Any) -> str:
        """Return the run id of a value :meth:`values` yielded (each asked for once)."""
        ids = self._ids[id(value)]
        run_id = ids.pop(0)
        if not ids:
            del self._ids[id(value)]
        return run_id


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
    if tally.orphaned:
        lines.append((f"engine recover{where}", "take over the runs of a process that died"))
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
    if tally.stopped.get("waiting"):
        waiting = tally.stopped["waiting"][0]
        lines.append((f"engine runs --status waiting{where}", "the runs that wait for a person"))
        lines.append((f"engine show {waiting}{where}", "its question, and how to answer it"))
    lines.append((f"engine graph {flow}{where}", "the routing graph of the stored runs"))
    out.print(Text.assemble("\n", ("next:", "bold")))
    for command, why in lines:
        shown = mask_secrets(command)
        out.print(Text.assemble(f"  {shown:<44} ", (f"# {why}", "dim")), soft_wrap=True)
