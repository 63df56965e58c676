"""Runs on many workers: procrastinate's jobs dispatch them, the PostgreSQL journal resumes them.

:func:`submit` creates each run ``queued`` in the :class:`~engine.store.PostgresStore` and
defers one procrastinate job for it, in the same transaction, so a run never exists without
its job nor a job without its run. :func:`worker` runs procrastinate's worker, whose one
task executes a run through an :class:`~engine.Engine`: it claims a queued run, or resumes
one from its journal. When a worker dies, procrastinate's stalled-job query finds its jobs
(their worker stopped its heartbeat) and every live worker re-queues them; whichever takes
one waits for the dead owner's lease to run out, takes the run over by compare-and-set and
replays its journal. The store fences every journal write by owner, so a worker that was
only stalled and wakes up late cannot write into a run that another one took over.

Per-flow limits and priorities are procrastinate's: each run's job goes to a ``queue`` with a
``priority``; ``max_concurrency=N`` spreads a flow's runs over N procrastinate locks (jobs
sharing a lock run one at a time, whichever worker they are on), so at most N of them run
at once across all workers. procrastinate is imported by the functions that need it.
"""

from __future__ import annotations

import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from engine._base._errors import DecisionError, RunConflictError
from engine._base._log import log
from engine._run._engine import Engine
from engine._run._flows import FLOWS, encode_input
from engine._run._pacing import check_run_id
from engine._workers._queue import (
    TASK,
    Busy,
    make_job,
    queue_app,
    requeue_stalled,
    retry_policy,
    stop_when_idle,
)
from engine.models import Model, model_from_string
from engine.store import PostgresStore, Run, RunErrorInfo, Store

if TYPE_CHECKING:
    from procrastinate import App
    from procrastinate.app import WorkerOptions

__all__ = ["DEFAULT_QUEUE", "TASK", "request_resume", "submit", "worker"]

#: The queue runs go to unless ``submit`` names another.
DEFAULT_QUEUE = "engine"
_CHUNK = 500
_STOPPED = frozenset({"completed", "suspended", "failed"})
_RESUMABLE = frozenset({"suspended", "failed", "cancelled"})


async def submit(
    store: Store,
    flow: Callable[..., Any],
    inputs: Iterable[Any],
    *,
    run_id: Callable[[Any], str] | None = None,
    queue: str = DEFAULT_QUEUE,
    priority: int = 0,
    max_concurrency: int | None = None,
) -> list[Run]:
    """Queue ``flow(item)`` for every input, as runs that workers execute; return them in order.

    Each run is created ``queued`` with its job in one transaction. A ``run_id`` that exists
    already is left as it is and queued no second time (the stored run is returned), so
    submitting a file again after a crash queues only what is missing.

    Args:
        store: A :class:`~engine.store.PostgresStore` (the workers' database).
        flow: An importable flow (``module:qualname``), so that workers find it.
        inputs: Each input is the flow's one argument.
        run_id: A function of the input giving its run id; random ids otherwise.
        queue: The procrastinate queue of the jobs (workers may listen to some queues only).
        priority: Higher runs first, among the jobs waiting.
        max_concurrency: The most runs of this flow in flight at once across all workers.

    Raises:
        TypeError: ``store`` is not a PostgresStore.
        ValueError: ``max_concurrency`` is below 1, or the flow cannot be imported by name.
    """
    pg = _postgres(store)
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency={max_concurrency!r} must be 1 or more")
    name = FLOWS.remember(flow)
    if name.startswith("__main__:") or "<locals>" in name:
        raise ValueError(
            f"flow {name} cannot be imported by the workers; define it at the top level of "
            "a module they can import"
        )
    runs = [
        Run(run_id=_id_of(item, run_id), flow=name, input=encode_input(name, (item,), {}))
        for item in inputs
    ]
    fresh: set[str] = set()
    async with queue_app(pg) as app:
        for start in range(0, len(runs), _CHUNK):
            chunk = runs[start : start + _CHUNK]
            async with pg.transaction() as conn:
                created = set(await pg.create_runs(chunk, connection=conn))
                new = [r for r in chunk if r.run_id in created]
                locks = [_lock(r, max_concurrency) for r in new]
                await pg.save_dispatch(new, queue, priority, locks, connection=conn)
                jobs = [
                    make_job(r.run_id, queue, priority, lock, {})
                    for r, lock in zip(new, locks, strict=True)
                ]
                if jobs:
                    await app.job_manager.batch_defer_jobs_async(jobs=jobs, connection=conn)
            fresh |= created
    log.info("runs_submitted", flow=name, runs=len(runs), queued=len(fresh), queue=queue)
    return [r if r.run_id in fresh else await _stored(pg, r.run_id) for r in runs]


async def request_resume(
    store: Store,
    run_id: str,
    *,
    pick: Mapping[str, Any] | None = None,
    model: str | None = None,
    max_retries: int | None = None,
) -> None:
    """Queue a resume of a stopped run, for some worker to execute (see :meth:`Engine.resume`).

    ``model`` names the model for this resume's live calls as the workers read it (as
    ``--model`` does); a ``pick`` is validated by the worker against the decision's menu, and
    an invalid one leaves the run as it was.

    Raises:
        KeyError: Unknown run id.
        ValueError: The run is not suspended, failed or cancelled (a pick needs suspended).
        RunConflictError: A job for this run is already waiting.
    """
    pg = _postgres(store)
    run = await pg.get_run(run_id)
    if run is None:
        raise KeyError(f"unknown run {run_id!r}")
    if run.status not in _RESUMABLE or (pick is not None and run.status != "suspended"):
        needs = "suspended" if pick is not None else "suspended, failed or cancelled"
        raise ValueError(f"run {run_id!r} is {run.status}; only a {needs} run can be resumed so")
    queue, priority, lock = await pg.load_dispatch(run_id) or (DEFAULT_QUEUE, 0, None)
    order = {"pick": dict(pick) if pick else None, "model": model, "max_retries": max_retries}
    from procrastinate.exceptions import AlreadyEnqueued

    async with queue_app(pg) as app:
        try:
            await app.job_manager.defer_job_async(make_job(run_id, queue, priority, lock, order))
        except AlreadyEnqueued as exc:
            raise RunConflictError(
                f"a job for run {run_id!r} is already waiting; a worker will take it",
                run_id=run_id,
            ) from exc
    log.info("resume_requested", run_id=run_id, queue=queue)


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
    pg = _postgres(engine.store)
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
    if order is None and run.status in _STOPPED:
        return  # a late duplicate of a job that already ran
    _check_lease(run, engine.owner)
    try:
        FLOWS.find(run.flow)  # what engine.resume would look up, before it touches the run
    except LookupError as exc:
        await _flow_missing(engine, run, exc)
        return
    order = order or {}
    model = models(order["model"]) if order.get("model") else None
    try:
        await engine.resume(
            run_id, pick=order.get("pick"), model=model, max_retries=order.get("max_retries")
        )
    except RunConflictError:
        # Lost a race: another worker claimed the run, or took it over from this one.
        latest = await engine.get(run_id)
        if latest is None or latest.status in _STOPPED:
            return  # and finished it
        _check_lease(latest, engine.owner)  # still theirs: look again when the lease ends
        raise
    except DecisionError as exc:  # a human pick that does not fit: the run stays as it was
        log.warning("resume_pick_rejected", run_id=run_id, kind=exc.kind, detail=exc.detail)


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
    if run.status not in ("queued", "running"):
        return
    failed = run.model_copy(
        update={
            "status": "failed",
            "error": RunErrorInfo(kind="LookupError", message=message),
            "owner": None,
            "lease_expires_at": None,
            "finished_at": time.time(),
        }
    )
    if await engine.store.update_run(failed, expected_version=run.version) is None:
        log.info("flow_not_importable_run_moved", run_id=run.run_id)  # another worker has it


def _id_of(item: Any, run_id: Callable[[Any], str] | None) -> str:
    if run_id is None:
        return uuid.uuid4().hex
    given = run_id(item)
    check_run_id(given)
    return given


def _check_lease(run: Run, owner: str) -> None:
    """Raise :class:`Busy` while another owner's lease on a running run holds."""
    if run.status != "running" or run.owner in (None, owner):
        return
    left = (run.lease_expires_at or 0.0) - time.time()
    if left > 0:
        raise Busy(run.run_id, left + 0.05)


# -- helpers -----------------------------------------------------------------------------------


def _postgres(store: Store) -> PostgresStore:
    if not isinstance(store, PostgresStore):
        raise TypeError(
            f"distributed runs need a PostgresStore (the workers' database), not {store!r}"
        )
    return store


def _lock(run: Run, max_concurrency: int | None) -> str | None:
    """The procrastinate lock of a run's jobs: one of its flow's lanes, when it has a limit."""
    if max_concurrency is None:
        return None  # the run's lease already keeps two workers from executing it at once
    lane = zlib.crc32(run.run_id.encode()) % max_concurrency
    return f"flow:{run.flow}#{lane}"


async def _stored(store: PostgresStore, run_id: str) -> Run:
    run = await store.get_run(run_id)
    if run is None:
        raise KeyError(f"run {run_id!r} was deleted while being submitted")
    return run
