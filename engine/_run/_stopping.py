"""Stopping runs: one run by id, or every run of an engine in a graceful shutdown.

A run in flight here is stopped through its :class:`~engine._run._leases.Holder`: at once (its
scope is cancelled) or at its next transition (a drain: the model call or step under way
finishes, is journaled, and the run stops before the next one). Either way the executor
records it ``cancelled`` with the reason and its journal intact, so a resume continues it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

from engine._base import CANCELLABLE, RunConflictError, RunNotFoundError, log, release
from engine._run._leases import lease_expired
from engine.store import Run, RunErrorInfo

if TYPE_CHECKING:
    from engine._run._batch import Batch
    from engine._run._executor import Executor

__all__ = ["cancel_run", "shutdown"]


async def cancel_run(executor: Executor, run_id: str) -> Run:
    """Cancel one run: in flight here it stops now; stopped, it is marked ``cancelled``.

    Raises:
        RunNotFoundError: Unknown run id (a ``KeyError``).
        RunConflictError: The run is running under another owner.
    """
    holder = executor.holders.get(run_id)
    if holder is not None:
        holder.stop("cancelled", now=True)
        await holder.wait()
        return holder.run
    store = executor.store
    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(run_id)
    if run.status == "running" and not lease_expired(run):
        raise RunConflictError(
            f"run {run_id!r} is running under owner {run.owner!r}; cancel it there",
            run_id=run_id,
        )
    if run.status not in CANCELLABLE:
        return run  # completed, or cancelled already
    # A suspended run keeps what a person needs to see of the decision it stopped at.
    was = run.error if run.status == "suspended" else None
    error = RunErrorInfo(
        kind="cancelled",
        message="the run was cancelled; resume it to go on",
        where=was.where if was is not None else None,
        options=was.options if was is not None else None,
        replies=was.replies if was is not None else None,
    )
    # It keeps when it finished, if it had (a queued run never did).
    cancelled = release(run, "cancelled", error=error, finished_at=run.finished_at)
    stored = await store.update_run(cancelled, expected_version=run.version)
    if stored is None:
        raise RunConflictError(f"run {run_id!r} changed while it was cancelled", run_id=run_id)
    return stored


async def shutdown(
    executor: Executor,
    batches: Sequence[Batch],
    grace_s: float,
    waits: Sequence[anyio.CancelScope] = (),
) -> None:
    """Start no run, let runs reach their next transition for ``grace_s``, then cut them.

    ``waits`` are run policies waiting to resume a run: they stop waiting, and resume nothing.
    """
    executor.halt.stopping = "shutdown"
    for wait in waits:
        wait.cancel()
    log.warning("engine_shutting_down", in_flight=len(executor.holders), grace_s=grace_s)
    for batch in batches:
        batch.stop_feeding()
    with anyio.move_on_after(grace_s):
        for holder in list(executor.holders.values()):
            await holder.wait()
    for batch in batches:
        batch.cut("shutdown")
    for holder in list(executor.holders.values()):
        holder.stop("shutdown", now=True)
        await holder.wait()
