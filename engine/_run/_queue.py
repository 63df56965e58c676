"""procrastinate's side of distributed runs: its tables, the job of a run, retries, recovery.

Everything here imports procrastinate when called, so the engine imports without it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import anyio

from engine._base import JournalError, RunConflictError, log
from engine.store import PostgresStore

if TYPE_CHECKING:
    from procrastinate import App, BaseRetryStrategy
    from procrastinate.jobs import Job

__all__ = [
    "TASK",
    "Busy",
    "make_job",
    "queue_app",
    "requeue_stalled",
    "retry_policy",
    "stop_when_idle",
]

#: The name of the one procrastinate task that executes runs.
TASK = "engine.execute_run"
_INSTALL_HINT = 'distributed runs need procrastinate; install it with: pip install -e ".[postgres]"'
# procrastinate wakes idle workers when a job is inserted, not when a lock frees up, so a job
# waiting behind its flow's lock would wait for the next poll. This trigger sends the same
# "job_inserted" notice on procrastinate's channels when a job holding a lock leaves
# "doing" (finished, deleted or retried); workers then fetch at once.
_LOCK_RELEASED = (
    """CREATE OR REPLACE FUNCTION engine_notify_lock_released() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE payload text := json_build_object('type', 'job_inserted', 'job_id', OLD.id)::text;
    BEGIN
        PERFORM pg_notify('procrastinate_queue_v1#' || OLD.queue_name, payload);
        PERFORM pg_notify('procrastinate_any_queue_v1', payload);
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER engine_lock_released_on_update AFTER UPDATE OF status
    ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.status = 'doing' AND NEW.status <> 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE FUNCTION engine_notify_lock_released()""",
    """CREATE TRIGGER engine_lock_released_on_delete AFTER DELETE
    ON procrastinate_jobs FOR EACH ROW
    WHEN (OLD.status = 'doing' AND OLD.lock IS NOT NULL)
    EXECUTE FUNCTION engine_notify_lock_released()""",
)


@asynccontextmanager
async def queue_app(store: PostgresStore) -> AsyncIterator[App]:
    """Open a procrastinate app on the store's pool, installing its tables when missing.

    procrastinate's tables go in the store's schema (the connections' search path).
    """
    try:
        import procrastinate
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    pool = await store.open()
    await _install(store)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector())
    await app.open_async(pool)
    try:
        yield app
    finally:
        await app.close_async()


async def _install(store: PostgresStore) -> None:
    """Create procrastinate's tables and the lock-release trigger, once, one process at a time."""
    from procrastinate.schema import SchemaManager

    async with store.transaction(lock=f"queue:{store.schema}") as conn:
        cursor = await conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL")
        found = await cursor.fetchone()
        if not (found and found[0]):
            await conn.execute(SchemaManager.get_schema())
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'procrastinate_jobs'::regclass "
            "AND tgname LIKE 'engine_lock_released%%'"
        )
        found = await cursor.fetchone()
        if not (found and found[0]):
            for statement in _LOCK_RELEASED:
                await conn.execute(statement)


class Busy(Exception):
    """The run is held by a live owner; look again when its lease would run out."""

    def __init__(self, run_id: str, wait_s: float) -> None:
        self.wait_s = wait_s
        super().__init__(f"run {run_id!r} is held by another worker for {wait_s:.1f}s more")


def retry_policy() -> BaseRetryStrategy:
    """Return the task's retry policy (a procrastinate strategy)."""
    from procrastinate import BaseRetryStrategy, RetryDecision

    class Policy(BaseRetryStrategy):
        """Wait out a live lease; back off and retry a database failure a few times."""

        def get_retry_decision(self, *, exception: BaseException, job: Job) -> RetryDecision | None:
            if isinstance(exception, Busy):
                return RetryDecision(retry_at=after(exception.wait_s))
            if isinstance(exception, (JournalError, RunConflictError)) and job.attempts < 5:
                return RetryDecision(retry_at=after(0.5 * 2**job.attempts))
            return None

    return Policy()


async def requeue_stalled(app: App, stalled_after_s: float, every_s: float) -> None:
    """Re-queue the jobs of workers whose heartbeat stopped (procrastinate's recovery)."""
    from procrastinate.exceptions import ProcrastinateException

    while True:
        await anyio.sleep(every_s)
        try:
            stalled = await app.job_manager.get_stalled_jobs(
                task_name=TASK, seconds_since_heartbeat=stalled_after_s
            )
        except ProcrastinateException as exc:  # the database is away: try again next round
            log.warning("stalled_jobs_unreadable", error=str(exc))
            continue
        for job in stalled:
            try:
                await app.job_manager.retry_job(job)
            except ProcrastinateException:
                continue  # another worker re-queued it first
            log.info("job_requeued", job_id=job.id, run_id=job.task_kwargs.get("run_id"))


async def stop_when_idle(
    app: App, queues: Sequence[str] | None, every_s: float, scope: anyio.CancelScope
) -> None:
    """Stop the worker once its queues hold no waiting or running job.

    procrastinate's own ``wait=False`` stops at the first fetch that finds nothing, which
    happens while jobs still wait behind a flow's locks.
    """
    while True:
        await anyio.sleep(every_s)
        stats = await app.job_manager.list_queues_async()
        mine = [q for q in stats if not queues or q["name"] in queues]
        if not any(q["todo"] or q["doing"] for q in mine):
            # Cancelling procrastinate's worker stops it gracefully (jobs in flight finish).
            scope.cancel()
            return


def make_job(
    run_id: str, queue: str, priority: int, lock: str | None, order: dict[str, Any]
) -> Job:
    from procrastinate.jobs import Job

    kwargs: dict[str, Any] = {"run_id": run_id, "resume": order or None}
    return Job(
        id=None,
        queue=queue,
        lock=lock,
        queueing_lock=f"run:{run_id}",  # one waiting job per run
        task_name=TASK,
        task_kwargs=kwargs,
        priority=priority,
    )


def after(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)
