"""``engine resume``: continue stopped runs from their journals.

One run: ask its failing decision afresh (on ``--model`` when given) or settle it with a
person's ``--pick``. Many: ``--all-suspended`` and ``--all-cancelled`` resume every run in
those statuses, with the same progress display as ``engine run``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from engine._base import DecisionError, RunConflictError, mask_secrets
from engine._run import Engine
from engine.cli._batch import Job, Tally, drive
from engine.cli._common import DEFAULT_STORE, abort, fail, note, out, run_async
from engine.cli._inputs import short_name
from engine.cli._models import choose_model
from engine.cli._progress import BatchProgress, summary
from engine.cli._run import ConcurrencyOpt, ModelOpt, StoreOpt, next_steps
from engine.cli._show import run_panel
from engine.cli._stores import find_run, open_store
from engine.cli._submit import queue_resume
from engine.store import Run, RunStatus, Store

__all__ = ["resume"]


def resume(
    run_id: Annotated[
        str | None, typer.Argument(help="The run to resume (or a unique start of its id).")
    ] = None,
    pick: Annotated[
        str | None,
        typer.Option(help='Decide by hand, as JSON: {"call": "escalate", "args": {...}}.'),
    ] = None,
    model: ModelOpt = None,
    max_retries: Annotated[
        int | None, typer.Option(min=0, help="Re-picks for the decision asked again.")
    ] = None,
    all_suspended: Annotated[
        bool, typer.Option("--all-suspended", help="Resume every suspended run.")
    ] = False,
    all_cancelled: Annotated[
        bool, typer.Option("--all-cancelled", help="Resume every cancelled run (Ctrl-C).")
    ] = False,
    concurrency: ConcurrencyOpt = 32,
    store: StoreOpt = DEFAULT_STORE,
    on_worker: Annotated[
        bool,
        typer.Option(
            "--on-worker",
            help="Queue the resume for an `engine worker` instead (PostgreSQL stores).",
        ),
    ] = False,
) -> None:
    """Resume a stopped run, or every suspended or cancelled one."""
    many = all_suspended or all_cancelled
    if many == (run_id is not None):
        abort("give one RUN_ID, or --all-suspended / --all-cancelled")
    if on_worker:
        if run_id is None:
            abort("--on-worker queues one run's resume; give a RUN_ID with it")
        run_async(lambda: queue_resume(store, run_id, pick, model, max_retries))
        return
    if pick is not None and many:
        abort("--pick settles one run's decision; give a RUN_ID with it")
    human = _parse_pick(pick) if pick is not None else None
    statuses: list[RunStatus] = []
    if all_suspended:
        statuses.append("suspended")
    if all_cancelled:
        statuses.append("cancelled")

    async def body() -> int:
        chosen = choose_model(model)
        if chosen.note:
            note(chosen.note)
        async with open_store(store) as opened:
            engine = Engine(model=chosen.model, store=opened)
            if run_id is not None:
                await _one(engine, opened, run_id, human, max_retries, store)
                return 0
            return await _many(engine, opened, statuses, max_retries, concurrency, store)

    code = run_async(body)
    if code:
        raise typer.Exit(code)


def _parse_pick(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        abort(f'--pick is not valid JSON ({exc.msg}); write it like \'{{"call": "close"}}\'')
    if not isinstance(data, dict) or not isinstance(data.get("call"), str):
        abort('--pick must be a JSON object naming the option: {"call": "close", "args": {}}')
    return data


async def _one(
    engine: Engine,
    store: Store,
    run_id: str,
    pick: dict[str, Any] | None,
    max_retries: int | None,
    url: str,
) -> None:
    run = await find_run(store, run_id, url)
    if run.status == "completed":
        out.print(f"run {run.run_id} is already completed; there is nothing to resume")
        return
    try:
        resumed = await engine.resume(run.run_id, pick=pick, max_retries=max_retries)
    except DecisionError as exc:
        offered = "" if "valid options" in exc.detail else f"; offered: {', '.join(exc.options)}"
        fail(
            f"the pick does not fit the decision's menu ({exc.kind}: {exc.detail}){offered}; "
            "the run is unchanged",
            code=1,
        )
    except (RunConflictError, ValueError) as exc:
        fail(str(exc))
    except LookupError as exc:
        fail(f"{exc}; run the command from the folder the flow's module lives in")
    out.print(run_panel(resumed))


async def _many(
    engine: Engine,
    store: Store,
    statuses: list[RunStatus],
    max_retries: int | None,
    concurrency: int,
    url: str,
) -> int:
    found: list[Run] = []
    for status in statuses:
        found.extend(await store.list_runs(status=status))
    if not found:
        out.print(f"no {' or '.join(statuses)} runs in {mask_secrets(url)}", markup=False)
        return 0
    tally = Tally(total=len(found), track_existing=False)

    def job(run: Run) -> Job:
        async def start() -> Run:
            return await engine.resume(run.run_id, max_retries=max_retries)

        return Job(run.run_id, start)

    with BatchProgress(tally, f"resuming {len(found)} run(s)") as progress:
        await drive(
            (job(r) for r in found),
            store=store,
            tally=tally,
            concurrency=concurrency,
            refresh=progress.refresh,
        )
    out.print(summary(tally, f"resumed {len(found)} {' and '.join(statuses)} run(s)"))
    flows = sorted({r.flow for r in found})
    flow = short_name(flows[0]) if len(flows) == 1 else "FLOW"
    next_steps(tally, flow, url, resumed=found[0].run_id)
    return 130 if tally.interrupted else 0
