"""Workers: procrastinate's worker executes queued runs, the PostgreSQL journal resumes them.

:func:`worker` runs procrastinate's worker, whose one task executes a run through an
:class:`~engine.Engine`: it claims a queued run, or resumes one from its journal. When a
worker dies, procrastinate's stalled-job query finds its jobs (their worker stopped its
heartbeat) and every live worker re-queues them; whichever takes one waits for the dead
owner's lease to run out, takes the run over by compare-and-set and replays its journal. The
store fences every journal write by owner, so a worker that was only stalled and wakes up late
cannot write into a run that another one took over. Runs get there through
:func:`engine.distributed.submit`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from engine._base import (
    ENDED_BY_FLOW,
    UNFINISHED,
    DecisionError,
    RunConflictError,
    log,
    release,
)
from engine._run import (
    FLOWS,
    TASK,
    Busy,
    Engine,
    postgres,
    queue_app,
    requeue_stalled,
    retry_policy,
    stop_when_idle,
)
from engine.models import Model, model_from_string
from engine.store import Run, RunErrorInfo

if TYPE_CHECKING:
    from procrastinate import App
    from procrastinate.app import WorkerOptions

__all__ = ["worker"]


async def worker(
    engine: Engine,
    *,
    concurrency: int = 10,
    queues: Sequence[str] | None = None,
    stalled_after_s: float = 30.0,
    heartbeat_s: float = 5.0,
    poll_s: float = 2.0,
    one_shot: bool = False,
    models: Callable[[str], Model] = model_from_string,
    name: str | None = None,
    install_signal_handlers: bool = True,
) -> None:
    """Run procrastinate's worker on ``engine``'s PostgresStore until stopped (SIGINT, SIGTERM).

    Args:
        engine: Executes the runs; its ``lease_s`` should not exceed ``stalled_after_s``, or a
            dead worker's runs wait for their leases after being re-queued.
        concurrency: The most runs this worker executes at once.
        queues: The queues to take jobs from (all by default).
        stalled_after_s: A worker whose heartbeat is older than this is dead: its jobs are
            re-queued.
        heartbeat_s: How often this worker beats, and looks for stalled jobs.
        poll_s: How often to look for jobs besides the database's notifications.
        one_shot: Stop once no job waits or runs in this worker's queues.
        models: Turns the model named by a resume request into a model.
        name: This worker's name in procrastinate's tables and logs.
        install_signal_handlers: Let procrastinate stop gracefully on SIGINT and SIGTERM
            (runs in flight finish first).
    """
    pg = postgres(engine.store)
    async with queue_app(pg) as app:
        _register(app, engine, models)
        async with anyio.create_task_group() as tg:
            tg.start_soon(requeue_stalled, app, stalled_after_s, heartbeat_s)
            if one_shot:
                tg.start_soon(stop_when_idle, app, queues, poll_s, tg.cancel_scope)
            options: WorkerOptions = {
                "concurrency": concurrency,
                "fetch_job_polling_interval": poll_s,
                "abort_job_polling_interval": poll_s,
                "update_heartbeat_interval": heartbeat_s,
                "stalled_worker_timeout": stalled_after_s,
                "delete_jobs": "successful",  # the store keeps each run's history
                "install_signal_handlers": install_signal_handlers,
            }
            if name:
                options["name"] = name
            if queues:
                options["queues"] = list(queues)
            await app.run_worker_async(**options)
            tg.cancel_scope.cancel()


# -- the task ----------------------------------------------------------------------------------


def _register(app: App, engine: Engine, models: Callable[[str], Model]) -> None:
    async def execute_run(run_id: str, resume: dict[str, Any] | None = None) -> None:
        await _execute(engine, models, run_id, resume)

    app.task(name=TASK, retry=retry_policy(), pass_context=False)(execute_run)


async def _execute(
    engine: Engine, models: Callable[[str], Model], run_id: str, order: dict[str, Any] | None
) -> None:
    """Execute one run's job: claim it, take it over, or resume it as ``order`` says."""
    run = await engine.get(run_id)
    if run is None:
        log.warning("job_without_run", run_id=run_id)  # deleted since it was queued
        return
    if order is None and run.status in ENDED_BY_FLOW:
        return  # a late duplicate of a job that already ran (a cancelled run goes on)
    _check_lease(run, engine.owner)
    try:
        FLOWS.find(run.flow)  # what engine.resume would look up, before it touches the run
    except LookupError as exc:
        await _flow_missing(engine, run, exc)
        return
    order = order or {}
    model = models(order["model"]) if order.get("model") else None
    try:
        if order.get("answer") is not None:
            await _answer(engine, run_id, order["answer"], model)
        else:
            await engine.resume(
                run_id, pick=order.get("pick"), model=model, max_retries=order.get("max_retries")
            )
    except RunConflictError:
        # Lost a race: another worker claimed the run, or took it over from this one.
        latest = await engine.get(run_id)
        if latest is None or latest.status in ENDED_BY_FLOW:
            return  # and finished it
        _check_lease(latest, engine.owner)  # still theirs: look again when the lease ends
        raise
    except DecisionError as exc:  # a human pick that does not fit: the run stays as it was
        log.warning("resume_pick_rejected", run_id=run_id, kind=exc.kind, detail=exc.detail)


async def _answer(engine: Engine, run_id: str, said: dict[str, Any], model: Model | None) -> None:
    """Answer a waiting run as :func:`~engine.distributed.request_answer` queued it.

    An answer that does not fit (it does not validate, or the run no longer waits for it:
    another person answered first) is logged and leaves the run as it was.
    """
    try:
        await engine.answer(
            run_id,
            said.get("pick"),
            approve=bool(said.get("approve")),
            edit=said.get("edit"),
            reject=said.get("reject"),
            where=said.get("where"),
            model=model,
        )
    except DecisionError as exc:
        log.warning(
            "answer_rejected", run_id=run_id, where=exc.where, kind=exc.kind, detail=exc.detail
        )
    except (ValueError, TypeError) as exc:
        log.warning("answer_rejected", run_id=run_id, reason=str(exc))


async def _flow_missing(engine: Engine, run: Run, exc: LookupError) -> None:
    """Fail a run this worker cannot start because its flow does not import here.

    A queued run (or one taken from a dead owner) would otherwise stay queued for good: its
    job fails and no later worker sees it. Failed, it says why and resumes like any other
    once the workers can import the flow. A stopped run asked to resume is left as it was.
    """
    message = (
        f"worker {engine.owner} cannot import flow {run.flow!r}; make its module importable "
        f"on the workers (PYTHONPATH), then resume the run with "
        f"`engine submit --resume {run.run_id}`"
    )
    log.warning("flow_not_importable", run_id=run.run_id, flow=run.flow, reason=str(exc))
    if run.status not in UNFINISHED:
        return
    error = RunErrorInfo(kind="LookupError", message=message)
    failed = release(run, "failed", error=error, finished_at=time.time())
    if await engine.store.update_run(failed, expected_version=run.version) is None:
        log.info("flow_not_importable_run_moved", run_id=run.run_id)  # another worker has it


def _check_lease(run: Run, owner: str) -> None:
    """Raise :class:`Busy` while another owner's lease on a running run holds."""
    if run.status != "running" or run.owner in (None, owner):
        return
    left = (run.lease_expires_at or 0.0) - time.time()
    if left > 0:
        raise Busy(run.run_id, left + 0.05)
