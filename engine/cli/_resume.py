"""``engine resume``: continue stopped runs from their journals.

One run: ask its failing decision afresh (on ``--model`` when given) or settle it with a
person's ``--pick``. Many: ``--all-suspended`` and ``--all-cancelled`` resume every run in
those statuses through :meth:`Engine.resume_as_completed
<engine.Engine.resume_as_completed>`, with the same progress display and Ctrl-C as
``engine run``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from engine._base import DecisionError, RunConflictError, RunNotFoundError, mask_secrets
from engine._run import Engine
from engine.cli._common import (
    DEFAULT_STORE,
    EXIT_NOTHING_STARTED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    abort,
    fail,
    note,
    out,
    parse_pick,
    run_async,
)
from engine.cli._inputs import short_name
from engine.cli._models import choose_model
from engine.cli._progress import BatchView, Tally, exit_status, summary
from engine.cli._run import ConcurrencyOpt, ModelOpt, StoreOpt, next_steps
from engine.cli._show import run_panel
from engine.cli._stores import find_run, open_store
from engine.cli._submit import queue_resume
from engine.store import Run, RunStatus, Store

__all__ = ["resume", "resume_runs"]


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
    """Resume a stopped run, or every suspended or cancelled one.

    Exit status: 0 every run completed, 1 some stopped again, 3 none could be resumed (held
    by another process), 2 bad usage (a pick that does not fit), 4 the store failed, 130
    interrupted.
    """
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
    statuses: list[RunStatus] = []
    if all_suspended:
        statuses.append("suspended")
    if all_cancelled:
        statuses.append("cancelled")

    async def body() -> int:
        human = parse_pick(pick) if pick is not None else None
        chosen = choose_model(model)
        if chosen.note:
            note(chosen.note)
        async with open_store(store) as opened:
            engine = Engine(model=chosen.model, store=opened)
            if run_id is not None:
                return await _one(engine, opened, run_id, human, max_retries, store)
            return await _many(engine, opened, statuses, max_retries, concurrency, store)

    code = run_async(body)
    if code != EXIT_OK:
        raise typer.Exit(code)


async def _one(
    engine: Engine,
    store: Store,
    run_id: str,
    pick: dict[str, Any] | None,
    max_retries: int | None,
    url: str,
) -> int:
    run = await find_run(store, run_id, url)
    if run.status == "completed":
        out.print(f"run {run.run_id} is already completed; there is nothing to resume")
        return EXIT_OK
    try:
        resumed = await engine.resume(run.run_id, pick=pick, max_retries=max_retries)
    except DecisionError as exc:
        offered = "" if "valid options" in exc.detail else f"; offered: {', '.join(exc.options)}"
        fail(
            f"the pick does not fit the decision's menu ({exc.kind}: {exc.detail}){offered}; "
            "the run is unchanged",
            code=EXIT_USAGE,  # the fix is another --pick
        )
    except RunConflictError as exc:
        fail(str(exc), code=EXIT_NOTHING_STARTED)
    except ValueError as exc:
        fail(str(exc))
    except RunNotFoundError as exc:  # deleted since it was looked up (a prune, another host)
        fail(f"{exc}; it was deleted while being resumed", code=EXIT_NOTHING_STARTED)
    except LookupError as exc:  # the run's flow
        fail(f"{exc}; run the command from the folder the flow's module lives in")
    out.print(run_panel(resumed))
    return EXIT_OK if resumed.status == "completed" else EXIT_STOPPED


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
        return EXIT_OK
    return await resume_runs(
        engine,
        found,
        url,
        doing="resuming",
        done=f"resumed {len(found)} {' and '.join(statuses)} run(s)",
        concurrency=concurrency,
        max_retries=max_retries,
    )


async def resume_runs(
    engine: Engine,
    found: list[Run],
    url: str,
    *,
    doing: str,
    done: str,
    concurrency: int,
    max_retries: int | None = None,
) -> int:
    """Resume ``found`` as one batch with the live view and the summary; return the status."""
    tally = Tally(total=len(found), track_existing=False)
    with BatchView(tally, f"{doing} {len(found)} run(s)") as view:
        batch = engine.resume_as_completed(
            (r.run_id for r in found),
            max_retries=max_retries,
            concurrency=concurrency,
            progress=view.progress,
            on_error=view.not_started,
            handle_signals=True,
        )
        await view.follow(batch)
    tally.interrupted = engine.stopping
    out.print(summary(tally, done))
    flows = sorted({r.flow for r in found})
    flow = short_name(flows[0]) if len(flows) == 1 else "FLOW"
    next_steps(tally, flow, url, resumed=found[0].run_id)
    return exit_status(tally)
