"""Queued runs: each created ``queued`` in PostgreSQL with its procrastinate job, for workers.

:func:`submit` creates each run ``queued`` in the :class:`~engine.store.PostgresStore` and
defers one procrastinate job for it, in the same transaction, so a run never exists without
its job nor a job without its run; :func:`request_resume` queues a resume of a stopped run,
:func:`request_answer` a person's answer to a waiting one. The workers that execute the
jobs are :mod:`engine._workers`'.

Per-flow limits and priorities are procrastinate's: each run's job goes to a ``queue`` with a
``priority``; ``max_concurrency=N`` spreads a flow's runs over N procrastinate locks (jobs
sharing a lock run one at a time, whichever worker they are on), so at most N of them run
at once across all workers. procrastinate is imported by the functions that need it.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from engine._base import STOPPED, RunConflictError, RunNotFoundError, log
from engine._run._answers import answer_approval
from engine._run._flows import FLOWS, encode_input
from engine._run._order import ResumeOrder
from engine._run._pacing import check_run_id
from engine._run._queue import make_job, queue_app
from engine.store import PostgresStore, Run, Store

__all__ = ["DEFAULT_QUEUE", "postgres", "request_answer", "request_resume", "submit"]

#: The queue runs go to unless ``submit`` names another.
DEFAULT_QUEUE = "engine"
_CHUNK = 500


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
    pg = postgres(store)
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
        RunNotFoundError: Unknown run id (a ``KeyError``).
        ValueError: The run is not suspended, failed or cancelled (a pick needs suspended).
        RunConflictError: A job for this run is already waiting.
    """
    pg = postgres(store)
    run = await pg.get_run(run_id)
    if run is None:
        raise RunNotFoundError(run_id)
    if run.status not in STOPPED or (pick is not None and run.status != "suspended"):
        needs = "suspended" if pick is not None else "suspended, failed or cancelled"
        raise ValueError(f"run {run_id!r} is {run.status}; only a {needs} run can be resumed so")
    order = {"pick": dict(pick) if pick else None, "model": model, "max_retries": max_retries}
    await _defer(pg, run_id, order)
    log.info("resume_requested", run_id=run_id)


async def request_answer(
    store: Store,
    run_id: str,
    *,
    pick: Mapping[str, Any] | None = None,
    approve: bool = False,
    edit: Mapping[str, Any] | None = None,
    reject: str | None = None,
    where: str | None = None,
    model: str | None = None,
) -> None:
    """Queue a person's answer to a waiting run, for some worker to execute.

    The worker answers with :meth:`Engine.answer` (the same arguments) and goes on with the
    run; the answer can so come from any machine that reaches the database. Whether it
    answers an open question of the right kind is checked here; the worker validates it
    strictly against the question's menu, and an answer that does not fit is logged
    (``answer_rejected``) and leaves the run waiting as it was.

    Raises:
        RunNotFoundError: Unknown run id (a ``KeyError``).
        ValueError: The run is not waiting; the answer does not fit the kind of question,
            names no open question, or is not exactly one of ``pick``/``approve``/``edit``/
            ``reject``.
        RunConflictError: A job for this run is already waiting.
    """
    pg = postgres(store)
    run = await pg.get_run(run_id)
    if run is None:
        raise RunNotFoundError(run_id)
    given = answer_approval(pick, approve, edit, reject)
    ResumeOrder.answering(run, pick=pick, approval=given, where=where)
    said = {
        "pick": dict(pick) if pick is not None else None,
        "approve": approve,
        "edit": dict(edit) if edit is not None else None,
        "reject": reject,
        "where": where,
    }
    await _defer(pg, run_id, {"answer": said, "model": model})
    log.info("answer_requested", run_id=run_id)


async def _defer(pg: PostgresStore, run_id: str, order: dict[str, Any]) -> None:
    """Defer a job that executes ``order`` on the run, on the queue it was submitted to."""
    queue, priority, lock = await pg.load_dispatch(run_id) or (DEFAULT_QUEUE, 0, None)
    from procrastinate.exceptions import AlreadyEnqueued

    async with queue_app(pg) as app:
        try:
            await app.job_manager.defer_job_async(make_job(run_id, queue, priority, lock, order))
        except AlreadyEnqueued as exc:
            raise RunConflictError(
                f"a job for run {run_id!r} is already waiting; a worker will take it",
                run_id=run_id,
            ) from exc
    log.info("job_deferred", run_id=run_id, queue=queue)


def _id_of(item: Any, run_id: Callable[[Any], str] | None) -> str:
    if run_id is None:
        return uuid.uuid4().hex
    given = run_id(item)
    check_run_id(given)
    return given


# -- helpers -----------------------------------------------------------------------------------


def postgres(store: Store) -> PostgresStore:
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
        raise RunNotFoundError(run_id, detail="it was deleted while being submitted")
    return run
