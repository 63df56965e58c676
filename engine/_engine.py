"""Durable runs: the run state machine, journaled execution, resume and crash recovery.

A run moves ``queued → running → completed | suspended | failed | cancelled`` and, on
resume, ``suspended | failed | cancelled → running``. Every status change is a
compare-and-set in the store, so two resumers of one run cannot both proceed. While a run
is ``running`` its owner renews a lease; a run whose lease ran out (its process died) is
taken over by :meth:`Engine.recover` and replayed from its journal.
"""

from __future__ import annotations

import time
import traceback
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import anyio

from engine._branches import gather, map
from engine._context import current_node, current_run_id, current_runtime
from engine._errors import DecisionError, RunConflictError
from engine._flows import FLOWS, decode_input, encode_input
from engine._hooks import current_hooks
from engine._journal import JournalHooks, ProbeDone, ResumeOrder
from engine._jsonable import to_json
from engine._log import log
from engine._runtime import Runtime
from engine._trace import Trace
from engine.models import Model
from engine.store import Run, RunErrorInfo, RunStatus, Store, TokenUsage

__all__ = ["Engine"]


Flow = Callable[..., Any]
_NO_LIMIT: AbstractAsyncContextManager[object] = nullcontext()
_ORPHANABLE: tuple[RunStatus, ...] = ("queued", "running")
_RESUMABLE: frozenset[str] = frozenset({"suspended", "failed", "cancelled", "queued"})


class Engine:
    """Run flows durably: journal every transition, resume stopped runs, recover crashed ones.

    Args:
        model: The model flows use (a :class:`~engine.models.Model`).
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
        model: Model | None = None,
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
        self._holders: dict[str, _Holder] = {}
        self._batch_renewers = 0

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
            return await self._execute_claimed(flow, stored, ResumeOrder(), journal=False)

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
            self._batch_renewers += 1
            tg.start_soon(self._renew_all)
            try:
                async for pair in receive:
                    yield pair
            finally:
                self._batch_renewers -= 1
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
            await self._probe(fn, run, order)
        if run.status == "running" and not _lease_expired(run):
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
            if _lease_expired(run)
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

    async def _probe(self, flow: Flow, run: Run, order: ResumeOrder) -> None:
        """Replay without writing up to the failing decision, to validate a human pick first."""
        journal = await self.store.load_journal(run.run_id)
        hooks = JournalHooks(run.run_id, self.store, journal, order=order, probe=True)
        try:
            await self._call_flow(flow, run, hooks, Trace())
        except ProbeDone:
            return
        except DecisionError as exc:
            if getattr(exc, "human_pick", False):
                raise
        except Exception:
            return

    # -- execution -----------------------------------------------------------------------------

    async def _execute(self, flow: Flow, run: Run, order: ResumeOrder, *, journal: bool) -> Run:
        async with self._slot():
            return await self._execute_claimed(flow, run, order, journal)

    def _slot(self) -> AbstractAsyncContextManager[object]:
        """Hold one of the engine's run slots (a no-op without ``concurrency=``)."""
        return self._limiter if self._limiter is not None else _NO_LIMIT

    async def _execute_claimed(
        self, flow: Flow, run: Run, order: ResumeOrder, journal: bool
    ) -> Run:
        if journal:  # a resume or a recovery: take the run over, then read its journal
            run = await self._claim(run)
        records = await self.store.load_journal(run.run_id) if journal else []
        hooks = JournalHooks(run.run_id, self.store, records, owner=self.owner, order=order)
        trace = Trace()
        holder = _Holder(run)
        log.debug("run_started", run_id=run.run_id, flow=run.flow, resume=journal)
        outcome: Exception | None = None
        result: Any = None
        self._holders[run.run_id] = holder
        try:
            if self._batch_renewers:  # a batch renewer keeps this run's lease alive
                try:
                    result = await self._call_flow(flow, run, hooks, trace)
                except Exception as exc:
                    outcome = exc
            else:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._renew_lease, holder)
                    try:
                        result = await self._call_flow(flow, run, hooks, trace)
                    except Exception as exc:  # handled below, outside the task group
                        outcome = exc
                    finally:
                        tg.cancel_scope.cancel()
        except BaseException:
            self._holders.pop(run.run_id, None)
            with anyio.CancelScope(shield=True):
                await self._finish(holder, hooks, trace, "cancelled")
            raise
        self._holders.pop(run.run_id, None)
        if isinstance(outcome, DecisionError):
            return await self._finish(holder, hooks, trace, "suspended", error=_suspension(outcome))
        if outcome is not None:
            return await self._finish(holder, hooks, trace, "failed", error=_failure(outcome))
        try:
            data = to_json(result, what=f"the result of flow {run.flow}")
        except Exception as exc:
            return await self._finish(holder, hooks, trace, "failed", error=_failure(exc))
        return await self._finish(holder, hooks, trace, "completed", result=data)

    async def _call_flow(self, flow: Flow, run: Run, hooks: JournalHooks, trace: Trace) -> Any:
        args, kwargs = decode_input(flow, run.input)
        root = trace.open("run", run.flow, parent=None, run_id=run.run_id)
        tokens = (
            current_hooks.set(hooks),
            current_node.set(root),
            current_runtime.set(self.runtime),
            current_run_id.set(run.run_id),
        )
        try:
            return await flow(*args, **kwargs)
        finally:
            current_run_id.reset(tokens[3])
            current_runtime.reset(tokens[2])
            current_node.reset(tokens[1])
            current_hooks.reset(tokens[0])
            root.close()

    async def _claim(self, run: Run) -> Run:
        now = time.time()
        held = run.owner is not None and run.owner != self.owner
        if held and not _lease_expired(run, now):
            raise RunConflictError(
                f"run {run.run_id!r} is held by {run.owner!r} until its lease runs out",
                run_id=run.run_id,
            )
        if run.status not in _RESUMABLE and run.status != "running":
            raise RunConflictError(f"run {run.run_id!r} is {run.status}", run_id=run.run_id)
        resumed = run.status != "queued"
        update = {
            "status": "running",
            "owner": self.owner,
            "lease_expires_at": now + self.lease_s,
            "started_at": run.started_at or now,
            "resumes": run.resumes + int(resumed),
        }
        claimed = await self.store.update_run(
            run.model_copy(update=update), expected_version=run.version
        )
        if claimed is None:
            raise RunConflictError(
                f"run {run.run_id!r} was changed by another worker while this one tried to "
                "start it; only one may proceed",
                run_id=run.run_id,
            )
        return claimed

    async def _renew_lease(self, holder: _Holder) -> None:
        while True:
            await anyio.sleep(self.lease_s / 3)
            if not await self._renew(holder):
                return

    async def _renew_all(self) -> None:
        while True:
            await anyio.sleep(self.lease_s / 3)
            async with anyio.create_task_group() as tg:  # concurrent: one group commit
                for holder in list(self._holders.values()):
                    tg.start_soon(self._renew, holder)

    async def _renew(self, holder: _Holder) -> bool:
        """Extend one run's lease; return False when the run is no longer this owner's."""
        # Shielded: a renewal that commits must also update the holder, or the run's final
        # compare-and-set would use a stale version.
        async with holder.lock:
            run = holder.run
            if run.owner != self.owner or run.status != "running":
                return False
            with anyio.CancelScope(shield=True):
                renewed = await self.store.update_run(
                    run.model_copy(update={"lease_expires_at": time.time() + self.lease_s}),
                    expected_version=run.version,
                )
            if renewed is None:
                log.warning("lease_lost", run_id=run.run_id)
                return False
            holder.run = renewed
            return True

    async def _write_final(
        self, hooks: JournalHooks, final: Run, version: int, trace: Trace
    ) -> Run | None:
        """Write the run's outcome, its last journal records and its trace in one transaction."""
        records = hooks.take_pending()
        exported = trace.to_dict()
        stored = await self.store.finish_run(
            final, expected_version=version, records=records, trace=exported
        )
        if stored is None:  # our own lease renewal may have raced us: retry on its version
            current = await self.store.get_run(final.run_id)
            if current is not None and current.owner == self.owner:
                stored = await self.store.finish_run(
                    final, expected_version=current.version, records=records, trace=exported
                )
        return stored

    async def _finish(
        self,
        holder: _Holder,
        hooks: JournalHooks,
        trace: Trace,
        status: RunStatus,
        *,
        result: Any = None,
        error: RunErrorInfo | None = None,
    ) -> Run:
        async with holder.lock:
            run = holder.run
            counts = hooks.counts
            usage = TokenUsage(
                input_tokens=run.usage.input_tokens + counts.input_tokens,
                output_tokens=run.usage.output_tokens + counts.output_tokens,
            )
            final = run.model_copy(
                update={
                    "status": status,
                    "result": result,
                    "error": error,
                    "owner": None,
                    "lease_expires_at": None,
                    "finished_at": time.time(),
                    "usage": usage,
                    "transitions": run.transitions + counts.transitions,
                    "model_calls": run.model_calls + counts.model_calls,
                }
            )
            stored = await self._write_final(hooks, final, run.version, trace)
            if stored is None:
                raise RunConflictError(
                    f"run {run.run_id!r} was taken over by another worker before it finished "
                    "here; its outcome is theirs to record",
                    run_id=run.run_id,
                )
            holder.run = stored
        log.info(_EVENTS[status], run_id=run.run_id, flow=run.flow)
        return stored


_EVENTS: dict[str, str] = {
    "completed": "run_completed",
    "suspended": "run_suspended",
    "failed": "run_failed",
    "cancelled": "run_cancelled",
}


class _Holder:
    """The latest stored version of a running run, shared by the run and its lease renewer."""

    __slots__ = ("lock", "run")

    def __init__(self, run: Run) -> None:
        self.run = run
        self.lock = anyio.Lock()


def _lease_expired(run: Run, now: float | None = None) -> bool:
    return run.lease_expires_at is None or run.lease_expires_at < (now or time.time())


def _suspension(exc: DecisionError) -> RunErrorInfo:
    return RunErrorInfo(
        kind=exc.kind,
        message=str(exc),
        where=getattr(exc, "where", None),
        options=exc.options,
        replies=exc.replies,
    )


def _failure(exc: BaseException) -> RunErrorInfo:
    return RunErrorInfo(
        kind=type(exc).__name__,
        message=str(exc),
        where=getattr(exc, "where", None),
        traceback="".join(traceback.format_exception(exc)),
    )
