"""``engine runs`` lists stored runs; ``engine prune`` deletes finished ones, or says which.

A run goes when every rule given holds for it: it finished longer ago than ``--older-than``,
and it is not among the newest ``--keep-last`` finished runs, so ``--keep-last`` protects the
newest whatever their age. Only finished runs (completed, failed, cancelled) are pruned:
suspended runs wait for a decision, waiting runs for a person, and unfinished runs for their
process. ``--dry-run`` lists what would go and deletes nothing (the store is only read).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from typing import Annotated, get_args

import typer
from rich.table import Table
from rich.text import Text

from engine._observe import usd
from engine.cli._common import DEFAULT_STORE, abort, out, run_async
from engine.cli._inputs import flow_name
from engine.cli._run import StoreOpt
from engine.cli._show import status_text
from engine.cli._stores import open_store
from engine.store import PRUNABLE, Run, RunStatus, Store, prune_victims

__all__ = ["parse_age", "prune", "runs"]

_STATUSES: tuple[str, ...] = get_args(RunStatus)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def runs(
    status: Annotated[
        str | None, typer.Option("--status", help=f"Only runs in this status: {_STATUSES}.")
    ] = None,
    flow: Annotated[str | None, typer.Option("--flow", help="Only runs of this flow.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many, newest.")] = 50,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the runs as JSON lines.")] = False,
) -> None:
    """List stored runs, newest last, with their status and what they cost."""
    if status is not None and status not in _STATUSES:
        abort(f"--status {status!r} is not a run status; use one of {', '.join(_STATUSES)}")

    async def body() -> None:
        name = flow_name(flow) if flow else None
        async with open_store(store, read_only=True) as opened:
            found = await opened.list_runs(status=status, flow=name)  # type: ignore[arg-type]
        if as_json:
            for run in found[-limit:]:
                # One line each, as encoded: never read as markup, never wrapped.
                out.out(json.dumps(run.model_dump(mode="json"), default=str), highlight=False)
            return
        table = Table(show_edge=False)
        columns = ("run id", "flow", "status", "steps", "calls", "tokens", "cost", "age")
        for column in (*columns, "stopped by"):
            table.add_column(column, justify="right" if column in _NUMERIC else "left")
        now = time.time()
        for run in found[-limit:]:
            table.add_row(  # what comes from the store is text, never markup
                Text(run.run_id),
                Text(run.flow.rpartition(":")[2]),
                status_text(run.status),
                str(run.transitions),
                str(run.model_calls),
                str(run.usage.total_tokens),
                usd(run.cost_usd),
                _age(now - run.created_at),
                Text(run.error.kind if run.error else ""),
            )
        out.print(table)
        counts = Counter(r.status for r in found)
        shown = f"showing the newest {limit} of " if len(found) > limit else ""
        totals = ", ".join(f"{n} {s}" for s, n in counts.most_common())
        out.print(f"{shown}{len(found)} run(s): {totals or 'none'}")

    run_async(body)


_NUMERIC = frozenset({"steps", "calls", "tokens", "cost", "age"})
#: The most runs a dry run of ``prune`` lists one by one; it counts the rest.
DRY_RUN_SHOWN = 50


def prune(
    older_than: Annotated[
        str | None,
        typer.Option(
            help="Delete finished runs that finished longer ago than this: 3600, 90m, 12h, 7d, 2w."
        ),
    ] = None,
    keep_last: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Keep the newest N finished runs whatever their age (with --older-than, only "
            "the old runs beyond them go).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")
    ] = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Delete finished runs (completed, failed, cancelled) with their journals and traces.

    A run goes when every rule given holds: with both, the runs older than --older-than
    beyond the newest --keep-last. Suspended runs (they wait for a decision), waiting runs
    (they wait for a person) and unfinished runs are kept.
    """
    if older_than is None and keep_last is None:
        abort("say what to prune: --older-than AGE, --keep-last N, or both")
    seconds = parse_age(older_than) if older_than is not None else None

    async def body() -> None:
        async with open_store(store, read_only=dry_run) as opened:
            if dry_run:
                _show_doomed(await _doomed(opened, seconds, keep_last))
                return
            deleted = await opened.prune(older_than_s=seconds, keep_last=keep_last)
        out.print(f"deleted {deleted} finished run(s)")

    run_async(body)


async def _doomed(store: Store, older_than_s: float | None, keep_last: int | None) -> list[Run]:
    """Return the runs ``store.prune`` would delete, newest first (the stores' one rule)."""
    finished = [run for status in PRUNABLE for run in await store.list_runs(status=status)]
    ids = prune_victims(finished, older_than_s=older_than_s, keep_last=keep_last)
    by_id = {run.run_id: run for run in finished}
    return [by_id[run_id] for run_id in ids]


def _show_doomed(doomed: list[Run]) -> None:
    out.print(f"would delete {len(doomed)} finished run(s); a dry run deletes nothing")
    now = time.time()
    for run in doomed[:DRY_RUN_SHOWN]:
        ago = _age(now - (run.finished_at or run.updated_at))
        line = f"  {run.run_id}  {run.flow.rpartition(':')[2]}  {run.status}  finished {ago} ago"
        out.print(Text(line), soft_wrap=True)  # from the store: text, never markup
    if len(doomed) > DRY_RUN_SHOWN:
        out.print(f"  … and {len(doomed) - DRY_RUN_SHOWN} more")


def parse_age(text: str) -> float:
    """Return the seconds in an age such as ``3600``, ``90m``, ``12h``, ``7d`` or ``2w``."""
    match = _AGE.match(text)
    if match is None:
        abort(f"--older-than {text!r}: write a number of seconds or 90m, 12h, 7d, 2w")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"
