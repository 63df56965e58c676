"""Stopping runs: one run by id, or every run of an engine in a graceful shutdown.

A run in flight here is stopped through its :class:`~engine._run._leases.Holder`: at once (its
scope is cancelled) or at its next transition (a drain: the model call or step under way
finishes, is journaled, and the run stops before the next one). Either way the executor
records it ``cancelled`` with the reason and its journal intact, so a resume continues it.

An engine's :class:`Stops` holds what a shutdown reaches besides the runs: the open batches
(they start no more runs) and the run policies waiting to resume a run (they stop waiting).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from engine._base import CANCELLABLE, RunConflictError, RunNotFoundError, log, release
from engine._run._leases import lease_expired
from engine.store import Run, RunErrorInfo

if TYPE_CHECKING:
    from engine._run._executor import Executor

__all__ = ["Feeding", "Stops", "cancel_run"]


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


class Feeding(Protocol):
    """What a shutdown asks of an open batch: start no more runs, then cut those in flight."""

    def stop_feeding(self) -> None:
        """Start no more runs; those in flight go on."""

    def cut(self, reason: str) -> None:
        """Stop every run of the batch still in flight now, recording ``reason``."""


class Stops:
    """An engine's stopping: its shutdown, the open batches and the run policies' waits."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._batches: set[Feeding] = set()
        self._waits: set[anyio.CancelScope] = set()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`shutdown` was called: runs stop at their next transition."""
        return self.executor.halt.stopping is not None

    def open(self, batch: Feeding) -> None:
        """Count ``batch`` among the open batches, which a shutdown stops, until :meth:`close`."""
        self._batches.add(batch)

    def close(self, batch: Feeding) -> None:
        """The batch ended (see :meth:`open`)."""
        self._batches.discard(batch)

    def interruptible(self, sleep: Callable[[float], Any]) -> Callable[[float], Awaitable[None]]:
        """Wrap a run policy's sleep so that a shutdown ends the wait at once."""

        async def interruptible(seconds: float) -> None:
            with anyio.CancelScope() as scope:
                self._waits.add(scope)
                try:
                    await sleep(seconds)
                finally:
                    self._waits.discard(scope)

        return interruptible

    async def shutdown(self, grace_s: float) -> None:
        """Start no run, let runs reach their next transition for ``grace_s``, then cut them.

        Every open batch stops starting runs; run policies waiting to resume a run stop
        waiting, and resume nothing.
        """
        executor = self.executor
        executor.halt.stopping = "shutdown"
        for wait in list(self._waits):
            wait.cancel()
        log.warning("engine_shutting_down", in_flight=len(executor.holders), grace_s=grace_s)
        batches = list(self._batches)
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
