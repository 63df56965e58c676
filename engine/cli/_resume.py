"""``engine resume``: continue stopped runs from their journals.

One run: ask its failing decision afresh (on ``--model`` when given) or settle it with a
person's ``--pick``. Many: ``--all-suspended``, ``--all-failed`` and ``--all-cancelled``
(``--flow`` for one flow's) resume every run in those statuses through
:meth:`Engine.resume_as_completed <engine.Engine.resume_as_completed>`, with the same
progress display and Ctrl-C as ``engine run``. A run that waits for a person (``waiting``)
is never among them: a person answers it. Flows are found from the working folder as
``engine run`` finds them, and the model is the one named (or a provider key's): a resume
never falls back on SimulatedModel.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from engine._base import DecisionError, RunConflictError, RunNotFoundError, mask_secrets
from engine.cli._common import (
    DEFAULT_STORE,
    EXIT_NOTHING_STARTED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    abort,
    fail,
    out,
    parse_pick,
    run_async,
)
from engine.cli._inputs import flow_name, working_dir_importable
from engine.cli._models import ChosenModel, SettingOpt, choose_model, spec_with_settings
from engine.cli._resuming import engine_for, flow_not_found, resume_runs
from engine.cli._run import ConcurrencyOpt, ModelOpt, StoreOpt
from engine.cli._show import run_panel
from engine.cli._stores import find_run, open_store
from engine.cli._submit import queue_resume
from engine.store import Run, RunStatus, Store

__all__ = ["resume"]

#: What to give instead, when the command is told neither one run nor many.
_ONE_OR_MANY = "give one RUN_ID, or --all-suspended / --all-failed / --all-cancelled"


def resume(
    run_id: Annotated[
        str | None, typer.Argument(help="The run to resume (or a unique start of its id).")
    ] = None,
    pick: Annotated[
        str | None,
        typer.Option(help='Decide by hand, as JSON: {"call": "escalate", "args": {...}}.'),
    ] = None,
    model: ModelOpt = None,
    model_setting: SettingOpt = None,
    max_retries: Annotated[
        int | None, typer.Option(min=0, help="Re-picks for the decision asked again.")
    ] = None,
    all_suspended: Annotated[
        bool, typer.Option("--all-suspended", help="Resume every suspended run.")
    ] = False,
    all_failed: Annotated[
        bool, typer.Option("--all-failed", help="Resume every failed run (its flow raised).")
    ] = False,
    all_cancelled: Annotated[
        bool, typer.Option("--all-cancelled", help="Resume every cancelled run (Ctrl-C).")
    ] = False,
    flow: Annotated[
        str | None,
        typer.Option(
            "--flow", help="With --all-*: only the runs of this flow (module:function or short)."
        ),
    ] = None,
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
    """Resume a stopped run, or every suspended, failed or cancelled one.

    The --all-* forms never resume a waiting run: it waits for a person's answer (`engine
    show RUN_ID` prints the question). A resume calls a model: --model, or the model of a
    set OPENAI_API_KEY or ANTHROPIC_API_KEY; without either it stops (--model simulated
    names the offline stand-in, which picks at random). A --pick needs no model: a model
    call after it then fails the run, and a resume with --model carries it on.

    Exit status: 0 every run completed, 1 some stopped again, 3 none could be resumed (held
    by another process, or their flow not found), 2 bad usage (a pick that does not fit, no
    model), 4 the store failed, 130 interrupted.
    """
    forms: tuple[tuple[RunStatus, bool], ...] = (
        ("suspended", all_suspended),
        ("failed", all_failed),
        ("cancelled", all_cancelled),
    )
    statuses = [status for status, chosen in forms if chosen]
    if bool(statuses) == (run_id is not None):
        abort(_ONE_OR_MANY)
    if flow is not None and run_id is not None:
        abort("--flow picks the runs of an --all-* form; leave it out with a RUN_ID")
    if on_worker:
        if run_id is None:
            abort("--on-worker queues one run's resume; give a RUN_ID with it")
        queued = spec_with_settings(model, model_setting)
        run_async(lambda: queue_resume(store, run_id, pick, queued, max_retries))
        return
    if pick is not None and statuses:
        abort("--pick settles one run's decision; give a RUN_ID with it")

    async def body() -> int:
        human = parse_pick(pick) if pick is not None else None
        named = (  # a typo stops here, before the store
            choose_model(model, settings=model_setting) if model or model_setting else None
        )
        flow_filter = flow_name(flow) if flow is not None else None
        working_dir_importable()  # the runs' flows import as `engine run` imported them
        async with open_store(store) as opened:
            if run_id is not None:
                return await _one(opened, run_id, human, named, max_retries, store)
            return await _many(
                opened, statuses, flow_filter, named, max_retries, concurrency, store
            )

    code = run_async(body)
    if code != EXIT_OK:
        raise typer.Exit(code)


async def _one(
    store: Store,
    run_id: str,
    pick: dict[str, Any] | None,
    named: ChosenModel | None,
    max_retries: int | None,
    url: str,
) -> int:
    run = await find_run(store, run_id, url)
    if run.status == "completed":
        out.print(f"run {run.run_id} is already completed; there is nothing to resume")
        return EXIT_OK
    engine = engine_for(store, named, by_hand=pick is not None)
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
    except LookupError:  # the run's flow
        fail(flow_not_found(run.flow))
    out.print(run_panel(resumed, url))
    return EXIT_OK if resumed.status == "completed" else EXIT_STOPPED


async def _many(
    store: Store,
    statuses: list[RunStatus],
    flow: str | None,
    named: ChosenModel | None,
    max_retries: int | None,
    concurrency: int,
    url: str,
) -> int:
    found: list[Run] = []
    for status in statuses:
        found.extend(await store.list_runs(status=status, flow=flow))
    what = f"{' and '.join(statuses)} run(s)" + (f" of {flow}" if flow else "")
    if not found:
        nothing = f"no {' or '.join(statuses)} runs" + (f" of {flow}" if flow else "")
        out.print(f"{nothing} in {mask_secrets(url)}")
        return EXIT_OK
    return await resume_runs(
        engine_for(store, named),
        found,
        url,
        doing="resuming",
        verb="resumed",
        what=what,
        concurrency=concurrency,
        max_retries=max_retries,
    )
