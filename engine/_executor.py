"""The run executor: one run's claim, journaled execution, lease and outcome.

:class:`Executor` does the work behind :class:`~engine.Engine`: it takes a run over by
compare-and-set, replays and extends its journal through :class:`JournalHooks`, keeps its
lease alive while it runs, and records how it ended (completed, suspended on a
``DecisionError``, failed with a traceback, or cancelled) in one final transaction with the
journal's tail and the trace.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

import anyio

from engine._context import current_node, current_run_id, current_runtime
from engine._errors import DecisionError, RunConflictError
from engine._flows import decode_input
from engine._hooks import current_hooks
from engine._journal import JournalHooks, ProbeDone, ResumeOrder
from engine._jsonable import to_json
from engine._log import log
from engine._runtime import Runtime
from engine._trace import Trace
from engine.store import Run, RunErrorInfo, RunStatus, Store, TokenUsage

__all__ = ["Executor", "lease_expired"]

Flow = Callable[..., Any]
_RESUMABLE: frozenset[str] = frozenset({"suspended", "failed", "cancelled", "queued"})


class Executor:
    """Execute runs of one engine: the owner token, the lease, the store and the runtime."""

    def __init__(self, store: Store, runtime: Runtime, owner: str, lease_s: float) -> None:
        self.store = store
        self.runtime = runtime
        self.owner = owner
        self.lease_s = lease_s
        self.holders: dict[str, _Holder] = {}
        self.batch_renewers = 0

    async def probe(self, flow: Flow, run: Run, order: ResumeOrder) -> None:
        """Replay without writing up to the failing decision, to validate a human pick first."""
        journal = await self.store.load_journal(run.run_id)
        hooks = JournalHooks(run.run_id, self.store, journal, order=order, probe=True)
        try:
            await self.call_flow(flow, run, hooks, Trace())
        except ProbeDone:
            return
        except DecisionError as exc:
            if getattr(exc, "human_pick", False):
                raise
        except Exception:
            return

    async def execute(self, flow: Flow, run: Run, order: ResumeOrder, journal: bool) -> Run:
        if journal:  # a resume or a recovery: take the run over, then read its journal
            run = await self.claim(run)
        records = await self.store.load_journal(run.run_id) if journal else []
        hooks = JournalHooks(run.run_id, self.store, records, owner=self.owner, order=order)
        trace = Trace()
        holder = _Holder(run)
        log.debug("run_started", run_id=run.run_id, flow=run.flow, resume=journal)
        outcome: Exception | None = None
        result: Any = None
        self.holders[run.run_id] = holder
        try:
            if self.batch_renewers:  # a batch renewer keeps this run's lease alive
                try:
                    result = await self.call_flow(flow, run, hooks, trace)
                except Exception as exc:
                    outcome = exc
            else:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._renew_lease, holder)
                    try:
                        result = await self.call_flow(flow, run, hooks, trace)
                    except Exception as exc:  # handled below, outside the task group
                        outcome = exc
                    finally:
                        tg.cancel_scope.cancel()
        except BaseException:
            self.holders.pop(run.run_id, None)
            with anyio.CancelScope(shield=True):
                await self._finish(holder, hooks, trace, "cancelled")
            raise
        self.holders.pop(run.run_id, None)
        if isinstance(outcome, DecisionError):
            return await self._finish(holder, hooks, trace, "suspended", error=_suspension(outcome))
        if outcome is not None:
            return await self._finish(holder, hooks, trace, "failed", error=_failure(outcome))
        try:
            data = to_json(result, what=f"the result of flow {run.flow}")
        except Exception as exc:
            return await self._finish(holder, hooks, trace, "failed", error=_failure(exc))
        return await self._finish(holder, hooks, trace, "completed", result=data)

    async def call_flow(self, flow: Flow, run: Run, hooks: JournalHooks, trace: Trace) -> Any:
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

    async def claim(self, run: Run) -> Run:
        now = time.time()
        held = run.owner is not None and run.owner != self.owner
        if held and not lease_expired(run, now):
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

    async def renew_all(self) -> None:
        while True:
            await anyio.sleep(self.lease_s / 3)
            async with anyio.create_task_group() as tg:  # concurrent: one group commit
                for holder in list(self.holders.values()):
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


def lease_expired(run: Run, now: float | None = None) -> bool:
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
