"""The Engine's store side: read runs, their traces and ledgers, prune, queue, close.

These methods work on what the store holds (and queue runs for workers, with
:meth:`StoredRuns.submit`); they run, resume and stop nothing in this process, so they live
apart from the running in :mod:`._engine` and :mod:`._runner`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Self

from engine._base import STATUSES, Flow
from engine._run._executor import Executor
from engine._run._journal import ledger_of
from engine._run._submit import submit as submit_runs
from engine._runtime import Runtime
from engine.store import Run, RunStatus, Store

__all__ = ["StoredRuns"]


class StoredRuns:
    """The store side of :class:`~engine.Engine`: its runs as stored, workers' queue, closing."""

    runtime: Runtime
    store: Store
    _executor: Executor
    #: Whether the engine opened its store itself (the default ``engine.db``).
    _owns_store: bool

    async def aclose(self) -> None:
        """Close the store the engine opened itself (the default ``engine.db``) and the
        runtime's model connections; a store passed in stays open for its owner."""
        self._executor.leases.stop()  # its clock, left armed after the last run
        try:
            await self.runtime.aclose()
        finally:
            if self._owns_store:
                await self.store.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def get(self, run_id: str) -> Run | None:
        """Return the stored run, or ``None`` for an unknown id."""
        return await self.store.get_run(run_id)

    async def list_runs(self, status: RunStatus | None = None) -> list[Run]:
        """Return the stored runs, oldest first, optionally only those with ``status``.

        Raises:
            ValueError: ``status`` is not a run status.
        """
        if status is not None and status not in STATUSES:
            raise ValueError(
                f"status must be one of {', '.join(STATUSES)} (or None for every run), "
                f"got {status!r}"
            )
        return await self.store.list_runs(status=status)

    async def trace(self, run_id: str) -> dict[str, Any] | None:
        """Return the stored trace of a run (as exported by :meth:`Trace.to_dict`)."""
        return await self.store.load_trace(run_id)

    async def retries(self, run_id: str) -> list[dict[str, Any]]:
        """Return the run's retry ledger: every retry attempt at every layer, with its cause.

        Each entry holds ``layer``, ``attempt``, ``kind`` (the cause), ``message``, ``key``
        (the node it retried) and ``at`` (a Unix time), oldest first.
        """
        return ledger_of(await self.store.load_journal(run_id))

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        keep_last: int | None = None,
        dry_run: bool = False,
    ) -> int:
        """Delete finished runs older than ``older_than_s`` and beyond the newest ``keep_last``.

        Return how many were deleted (with ``dry_run=True``, how many would be; nothing is).
        A run goes when every rule given holds: the newest ``keep_last`` stay whatever their
        age. Runs that wait for a person, or a decision (suspended), are never pruned.

        Raises:
            ValueError: ``older_than_s`` or ``keep_last`` is negative (or not a number); the
                store is left as it was.
        """
        return await self.store.prune(
            older_than_s=older_than_s, keep_last=keep_last, dry_run=dry_run
        )

    async def submit(
        self,
        flow: Flow,
        inputs: Iterable[Any],
        *,
        run_id: Callable[[Any], str] | None = None,
        queue: str = "engine",
        priority: int = 0,
        max_concurrency: int | None = None,
    ) -> list[Run]:
        """Queue ``flow(item)`` for every input, for worker processes (``engine worker``).

        Needs a :class:`~engine.store.PostgresStore`; each run is created ``queued`` together
        with its procrastinate job. See :func:`engine.distributed.submit` for the arguments.
        """
        return await submit_runs(
            self.store,
            flow,
            inputs,
            run_id=run_id,
            queue=queue,
            priority=priority,
            max_concurrency=max_concurrency,
        )
