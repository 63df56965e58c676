"""Durable runs: the run state machine, journaled execution, resume and crash recovery.

A run moves ``queued → running → completed | suspended | failed | cancelled`` and, on
resume, ``suspended | failed | cancelled → running``. Every status change is a
compare-and-set in the store, so two resumers of one run cannot both proceed. While a run
is ``running`` its owner renews a lease; a run whose lease ran out (its process died) is
taken over by :meth:`Engine.recover` and replayed from its journal.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import anyio

from engine._branches import gather, map
from engine._errors import RunConflictError
from engine._executor import Executor, lease_expired
from engine._flows import FLOWS, encode_input
from engine._journal import ResumeOrder
from engine._log import log
from engine._runtime import Runtime
from engine.models import Model
from engine.store import Run, RunStatus, Store

__all__ = ["Engine"]


Flow = Callable[..., Any]
_NO_LIMIT: AbstractAsyncContextManager[object] = nullcontext()
_ORPHANABLE: tuple[RunStatus, ...] = ("queued", "running")
_RESUMABLE: frozenset[str] = frozenset({"suspended", "failed", "cancelled", "queued"})


class Engine:
    """Run flows durably: journal every transition, resume stopped runs, recover crashed ones.

    Args:
        model: The model flows use: a :class:`~engine.models.Model`, or a string such as
            ``"openai:gpt-4o-mini"`` or ``"simulated:42"``.
        store: Where runs and journals live (an embedded SQLite file ``engine.db`` by default).
        concurrency: The most runs of this engine in flight at once (no cap by default).
        runtime: A ready :class:`~engine.Runtime` to use instead of ``model``.
        lease_s: How long a running run's ownership lasts without renewal; a run whose owner
            stopped renewing is taken over by :meth:`recover` after this long.
    """

    gather = staticmethod(gather)
    map = staticmethod(map)

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        store: Store | None = None,
        concurrency: int | None = None,
        runtime: Runtime | None = None,
        lease_s: float = 60.0,
    ) -> None:
        if runtime is None:
            if model is None:
                raise TypeError("Engine needs model= (or runtime=)")
            runtime = Runtime(model=model)
        if store is None:
            from engine.store import SQLiteStore

            store = SQLiteStore("engine.db")
        self.runtime = runtime
        self.store = store
        self.lease_s = lease_s
        self.owner = f"{uuid.uuid4().hex[:12]}"
        self._limiter = anyio.CapacityLimiter(concurrency) if concurrency else None
        self._flows = FLOWS
        self._executor = Executor(store, runtime, self.owner, lease_s)

    # -- starting runs -------------------------------------------------------------------------

    async def run(self, flow: Flow, *args: Any, run_id: str | None = None, **kwargs: Any) -> Run:
        """Run ``flow(*args, **kwargs)`` as a durable run and return the stored :class:`Run`.

        An existing ``run_id`` returns the stored run whatever its status, without running
        or resuming it. A ``DecisionError`` suspends the run and any other exception fails
        it: both are returned, not raised.
        """
        name = self._flows.remember(flow)
        async with self._slot():
            now = time.time()
            # Started at once, so created running: the insert is also the claim.
            record = Run(
                run_id=run_id or uuid.uuid4().hex,
                flow=name,
                status="running",
                input=encode_input(name, args, kwargs),
                owner=self.owner,
                lease_expires_at=now + self.lease_s,
                started_at=now,
            )
            stored, created = await self.store.create_run(record)
            if not created:
                return stored
            return await self._executor.execute(flow, stored, ResumeOrder(), journal=False)

    async def run_many(
        self,
        flow: Flow,
        inputs: Iterable[Any],
        *,
        concurrency: int | None = None,
        run_id: Callable[[Any], str] | None = None,
    ) -> list[Run]:
        """Run ``flow(item)`` for every input; return the runs in input order.

        At most ``concurrency`` runs of this batch are in flight. Stopped runs are returned,
        not raised.
        """
        out = {index: run async for index, run in self._indexed(flow, inputs, concurrency, run_id)}
        return [out[i] for i in range(len(out))]

    async def as_completed(
        self,
        flow: Flow,
        inputs: Iterable[Any],
        *,
        concurrency: int | None = None,
        run_id: Callable[[Any], str] | None = None,
    ) -> AsyncIterator[Run]:
        """Like :meth:`run_many`, but yield each run as it finishes."""
        async for _, run in self._indexed(flow, inputs, concurrency, run_id):
            yield run

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
        from engine._distributed import submit

        return await submit(
            self.store,
            flow,
            inputs,
            run_id=run_id,
            queue=queue,
            priority=priority,
            max_concurrency=max_concurrency,
        )

    async def _indexed(
        self,
        flow: Flow,
        inputs: Iterable[Any],
        concurrency: int | None,
        run_id: Callable[[Any], str] | None,
    ) -> AsyncIterator[tuple[int, Run]]:
        limiter = anyio.CapacityLimiter(concurrency) if concurrency else None
        send, receive = anyio.create_memory_object_stream[tuple[int, Run]](max_buffer_size=64)

        async def one(index: int, item: Any) -> None:
            try:
                run = await self.run(flow, item, run_id=run_id(item) if run_id else None)
                await send.send((index, run))
            finally:
                if limiter is not None:
                    limiter.release_on_behalf_of(index)

        async def feed() -> None:
            async with send, anyio.create_task_group() as tg:
                for index, item in enumerate(inputs):
                    if limiter is not None:
                        await limiter.acquire_on_behalf_of(index)
                    tg.start_soon(one, index, item)

        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(feed)
            # One renewer keeps every lease of the batch alive, instead of a task per run.
            self._executor.batch_renewers += 1
            tg.start_soon(self._executor.renew_all)
            try:
                async for pair in receive:
                    yield pair
            finally:
                self._executor.batch_renewers -= 1
                tg.cancel_scope.cancel()

    # -- reading runs --------------------------------------------------------------------------

    async def get(self, run_id: str) -> Run | None:
        """Return the stored run, or ``None`` for an unknown id."""
        return await self.store.get_run(run_id)

    async def list_runs(self, status: RunStatus | None = None) -> list[Run]:
        """Return the stored runs, oldest first, optionally only those with ``status``."""
        return await self.store.list_runs(status=status)

    async def trace(self, run_id: str) -> dict[str, Any] | None:
        """Return the stored trace of a run (as exported by :meth:`Trace.to_dict`)."""
        return await self.store.load_trace(run_id)

    async def prune(
        self, *, older_than_s: float | None = None, keep_last: int | None = None
    ) -> int:
        """Delete finished runs by age or beyond the newest ``keep_last``; return how many."""
        return await self.store.prune(older_than_s=older_than_s, keep_last=keep_last)

    # -- resuming ------------------------------------------------------------------------------

    async def resume(
        self,
        run_id: str,
        *,
        pick: Mapping[str, Any] | None = None,
        model: Model | None = None,
        max_retries: int | None = None,
        flow: Flow | None = None,
    ) -> Run:
        """Resume a stopped run from its journal and return it.

        The failing decision is asked afresh (its original request, a new re-pick budget),
        on ``model`` when given, or settled by a human ``pick`` validated against the same
        menu. Completed steps and journaled model calls are replayed, not redone.

        Raises:
            KeyError: Unknown run id.
            LookupError: The flow cannot be found; pass ``flow=``.
            DecisionError: ``pick`` is invalid; the stored run is left exactly as it was.
            RunConflictError: Another worker holds the run, or won the race to resume it.
        """
        run = await self.store.get_run(run_id)
        if run is None:
            raise KeyError(f"unknown run {run_id!r}")
        if run.status == "completed":
            return run
        fn = self._flows.find(run.flow, flow)
        if pick is not None and run.status != "suspended":
            raise ValueError(
                f"pick= settles a suspended run's decision; run {run_id!r} is {run.status}"
            )
        where = run.error.where if run.error is not None and run.status == "suspended" else None
        order = ResumeOrder(where=where, pick=pick, model=model, max_retries=max_retries)
        if pick is not None:
            await self._executor.probe(fn, run, order)
        if run.status == "running" and not lease_expired(run):
            raise RunConflictError(
                f"run {run_id!r} is running under owner {run.owner!r}; wait for it to stop",
                run_id=run_id,
            )
        return await self._execute(fn, run, order, journal=True)

    async def recover(self, *, concurrency: int | None = None) -> list[Run]:
        """Resume every run whose owner stopped renewing its lease (its process died).

        A live owner is never displaced: only runs whose lease has run out are taken, each by
        compare-and-set, so two recovering processes never both resume one run.
        """
        orphans = [
            run
            for status in _ORPHANABLE
            for run in await self.store.list_runs(status=status)
            if lease_expired(run)
        ]
        recovered: list[Run] = []
        limiter = anyio.CapacityLimiter(concurrency) if concurrency else None

        async def take(run: Run) -> None:
            fn = self._flows.find(run.flow)
            async with limiter if limiter is not None else _NO_LIMIT:
                try:
                    recovered.append(await self._execute(fn, run, ResumeOrder(), journal=True))
                except RunConflictError:
                    log.info("recover_skipped", run_id=run.run_id)  # another process took it

        async with anyio.create_task_group() as tg:
            for run in orphans:
                tg.start_soon(take, run)
        return recovered

    # -- execution -----------------------------------------------------------------------------

    async def _execute(self, flow: Flow, run: Run, order: ResumeOrder, *, journal: bool) -> Run:
        async with self._slot():
            return await self._executor.execute(flow, run, order, journal)

    def _slot(self) -> AbstractAsyncContextManager[object]:
        """Hold one of the engine's run slots (a no-op without ``concurrency=``)."""
        return self._limiter if self._limiter is not None else _NO_LIMIT
