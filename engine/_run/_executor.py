"""The run executor: one run's claim, journaled execution, lease and outcome.

:class:`Executor` does the work behind :class:`~engine.Engine`: it takes a run over by
compare-and-set, replays and extends its journal through :class:`JournalHooks`, keeps its
lease alive while it runs, and records how it ended (see :mod:`engine._run._outcome`) in one
final transaction with the journal's tail, the retry counts and the trace.

Each run executes inside a cancel scope of its own: a per-run timeout, a wall-time budget,
:meth:`Executor.stop` and a batch's cancel or shutdown cancel that scope, and the run is
recorded and returned like any other outcome. A cancellation from outside (the caller's
scope) records the run as cancelled too, then propagates.
"""

from __future__ import annotations

import functools
import inspect
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from engine._base import (
    Clock,
    DecisionError,
    Flow,
    JournalError,
    RunConflictError,
    Trace,
    WaitingForAnswer,
    cancel_scope,
    claim,
    current_node,
    current_run_id,
    current_runtime,
    failed_at,
    json_safe,
    log,
    unencodable,
)
from engine._retries import OnRetry, RunBudget, current_ledger
from engine._run._flows import decode_input
from engine._run._hooks import JournalHooks, journal_hooks
from engine._run._leases import BATCH_RENEWED, Halt, Holder, Leases, lease_expired
from engine._run._order import ProbeDone, ResumeOrder
from engine._run._outcome import Outcome, ended, failure, log_end, verdict
from engine._run._people import OnWaiting, tell_waiting
from engine._runtime import Runtime, current_hooks
from engine.models import Model, Price
from engine.store import JournalRecord, Run, RunErrorInfo, RunStatus, Store

__all__ = ["Executor", "lease_expired"]

Guard = Callable[[Model], Model]
# How long a probe may replay before the resume goes on without it (a replay calls nothing).
_PROBE_S = 30.0


class Executor:
    """Execute runs of one engine: the owner token, the leases, the store and the runtime."""

    def __init__(
        self,
        store: Store,
        runtime: Runtime,
        owner: str,
        lease_s: float,
        *,
        guard: Guard | None = None,
        budget: RunBudget | None = None,
        prices: Mapping[str, Price] | None = None,
        on_retry: OnRetry | None = None,
        clock: Clock | None = None,
        on_waiting: OnWaiting | None = None,
    ) -> None:
        self.clock = clock
        self.on_waiting = on_waiting
        self.store = store
        #: Whether the store's writes are done before they could wait (see ``MemoryStore``):
        #: a write to it needs no shield, since no cancel can cut it short.
        self.at_once = getattr(store, "writes_at_once", False) is True
        self.runtime = runtime
        self.owner = owner
        self.lease_s = lease_s
        self.guard = guard
        self.budget = budget
        self.prices = prices
        self.on_retry = on_retry
        self.leases = Leases(store, owner, lease_s)
        #: The engine's shutdown: every run stops at its next transition once it is set.
        self.halt = Halt()

    @property
    def holders(self) -> dict[str, Holder]:
        """The runs in flight here, by id."""
        return self.leases.holders

    async def probe(self, flow: Flow, run: Run, order: ResumeOrder) -> None:
        """Replay without writing up to the failing decision, to validate a human pick first.

        Live work on the way parks (another branch may still reach the decision) and an
        unfinished step is entered when the decision lies inside it. A probe that cannot
        reach the decision (a flow that no longer goes there) leaves the check to the resume.

        Raises:
            DecisionError: The pick does not validate against the decision's menu.
        """
        journal = await self.store.load_journal(run.run_id)
        hooks = journal_hooks(
            run.run_id, self.store, journal, order=order, probe=True, clock=self.clock
        )
        with anyio.move_on_after(_PROBE_S):
            try:
                await self.call_flow(flow, run, hooks, Trace())
            except Exception as exc:
                rejected = _found(exc, _rejects_human_pick)
                if rejected is not None:
                    raise rejected from None
                if _found(exc, lambda e: isinstance(e, ProbeDone)) is not None:
                    return
        log.warning("resume_pick_unchecked", run_id=run.run_id, where=order.where)

    async def start(
        self, flow: Flow, run_id: str, name: str, data: dict[str, Any], timeout_s: float | None
    ) -> tuple[Run, bool]:
        """Create a run of ``flow`` (named ``name``, its input ``data``) and execute it.

        Returns:
            The run as stored when it ended (or as found: an existing id is not run again),
            and whether it was created here.
        """
        stored, created = await self._create(run_id, name, data)
        if not created:
            return stored, False
        order = ResumeOrder()
        return await self.execute(flow, stored, order, journal=False, timeout_s=timeout_s), True

    async def _create(self, run_id: str, name: str, data: dict[str, Any]) -> tuple[Run, bool]:
        """Insert the run, started at once, so created running: the insert is also the claim.

        The run handed to the store is not kept: only the store's copy lives on while the
        run executes.
        """
        now = time.time()
        record = Run.started(
            run_id, name, data, owner=self.owner, lease_expires_at=now + self.lease_s, now=now
        )
        # Shielded: a run that exists must also be executed here, or be recorded as cut (a
        # store whose writes are done before they could wait needs no shield for that).
        if self.at_once:
            return await self.store.create_run(record)
        with cancel_scope(shield=True):
            stored, created = await self.store.create_run(record)
        return stored, created

    async def execute(
        self,
        flow: Flow,
        run: Run,
        order: ResumeOrder,
        journal: bool,
        *,
        timeout_s: float | None = None,
    ) -> Run:
        """Run (or resume, with ``journal``) one run to its end and return it as stored."""
        if journal:  # a resume or a recovery: take the run over, then read its journal
            run = await self.claim(run)
        records = await self.store.load_journal(run.run_id) if journal else []
        holder = Holder(run, self.halt)
        hooks = journal_hooks(
            run.run_id,
            self.store,
            records,
            owner=self.owner,
            order=order,
            guard=self.guard,
            budget=self.budget,
            before=run,
            prices=self.prices,
            control=holder,
            on_retry=self.on_retry,
            clock=self.clock,
        )
        trace = Trace()
        if journal:  # what the run's earlier executions did stays in its trace
            trace.follow(await self.store.load_trace(run.run_id))
        log.debug("run_started", run_id=run.run_id, flow=run.flow, resume=journal)
        self.holders[run.run_id] = holder
        try:
            outcome = await self._run(flow, holder, hooks, trace, timeout_s)
        except BaseException:  # cancelled from outside: record where it stands, then go on
            self.holders.pop(run.run_id, None)
            with cancel_scope(shield=True):
                await self._finish(holder, hooks, trace, Outcome(stopped="cancelled"))
            holder.finish()
            raise
        self.holders.pop(run.run_id, None)
        try:
            # Shielded: the outcome is known, and a cancel arriving now must not leave the
            # run stored as running (the store bounds the write). Where nothing in it can
            # wait (its lock is free, its store writes at once), no cancel can reach it.
            if self.at_once and not holder.taken:
                stored = await self._record_end(holder, hooks, trace, outcome)
            else:
                with cancel_scope(shield=True):
                    stored = await self._finish(holder, hooks, trace, outcome)
        finally:
            holder.finish()
            # Nodes and their trace refer to each other: dropping the nodes now frees a
            # finished run's trace at once instead of leaving it to the garbage collector.
            trace.nodes.clear()
        if stored.status == "waiting" and self.on_waiting is not None:
            await tell_waiting(self.on_waiting, stored)
        return stored

    async def _run(
        self,
        flow: Flow,
        holder: Holder,
        hooks: JournalHooks,
        trace: Trace,
        timeout_s: float | None,
    ) -> Outcome:
        """Run the flow in the run's own cancel scope; return how it ended."""
        deadline, why, limit = self._deadline(holder.run, timeout_s)
        outcome = Outcome()
        with cancel_scope(deadline=deadline) as scope:
            holder.scope = scope
            try:
                if hooks.order.retry is not None:
                    await hooks.spending.ledger.note(hooks.order.retry)  # a run policy's resume
                if BATCH_RENEWED.get():  # the batch's renewer keeps this run's lease alive
                    outcome.value = await self.call_flow(flow, holder.run, hooks, trace)
                else:
                    outcome.value = await self._with_lease(flow, holder, hooks, trace)
            except Exception as exc:  # recorded by the caller, outside the scope
                outcome.error = exc
                # The innermost node it came out of; else the run's own node.
                outcome.where = failed_at(exc) or (trace.nodes[0].key if trace.nodes else None)
        holder.scope = None
        if scope.cancelled_caught:
            outcome.stopped = holder.stop_reason or why
            outcome.limit = limit
        outcome.spent_s = holder.run.active_s + time.monotonic() - holder.started
        return outcome

    def _deadline(self, run: Run, timeout_s: float | None) -> tuple[float, str, float | None]:
        """Return the run's deadline (anyio time), what it is, and the limit behind it."""
        deadline, why, limit = math.inf, "cancelled", None
        wall = self.budget.wall_s if self.budget is not None else None
        if timeout_s is None and wall is None:
            return deadline, why, limit
        now = anyio.current_time()
        if timeout_s is not None:
            deadline, why, limit = now + timeout_s, "timeout", timeout_s
        if wall is not None and now + wall - run.active_s < deadline:
            deadline, why, limit = now + wall - run.active_s, "budget_exceeded", wall
        return deadline, why, limit

    async def _with_lease(
        self, flow: Flow, holder: Holder, hooks: JournalHooks, trace: Trace
    ) -> Any:
        """Call the flow with its lease kept alive: by the lease clock, else a renewer."""
        if self.leases.keep(holder):
            try:
                return await self.call_flow(flow, holder.run, hooks, trace)
            finally:
                self.leases.drop(holder)
        error: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.leases.renew_one, holder)
            try:
                value = await self.call_flow(flow, holder.run, hooks, trace)
            except Exception as exc:  # raised outside the group, not wrapped in an exception group
                error = exc
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        return value

    async def call_flow(self, flow: Flow, run: Run, hooks: JournalHooks, trace: Trace) -> Any:
        """Call the flow with the run's hooks, trace root, runtime, id and retry ledger."""
        args, kwargs = decode_input(flow, run.input)
        root = trace.open("run", run.flow, parent=None, run_id=run.run_id)
        retry = hooks.order.retry
        if retry is not None:
            node = root.child("retry", "run", layer="run", attempt=retry.attempt, after=retry.kind)
            node.close("ok")
        tokens = (
            current_hooks.set(hooks),
            current_node.set(root),
            current_runtime.set(self.runtime),
            current_run_id.set(run.run_id),
            current_ledger.set(hooks.spending.ledger),
        )
        status = "ok"  # the run node's status in the stored trace says how the run ended
        try:
            if _is_async(flow):
                return await flow(*args, **kwargs)
            # A plain def flow may block: run it on a worker thread (with this context).
            result = await anyio.to_thread.run_sync(functools.partial(flow, *args, **kwargs))
            return await result if inspect.isawaitable(result) else result
        except WaitingForAnswer:
            status = "waiting"
            raise
        except DecisionError:
            status = "suspended"
            raise
        except Exception:
            status = "error"
            raise
        except BaseException:
            status = "cancelled"
            raise
        finally:
            current_ledger.reset(tokens[4])
            current_run_id.reset(tokens[3])
            current_runtime.reset(tokens[2])
            current_node.reset(tokens[1])
            current_hooks.reset(tokens[0])
            root.close(status)

    async def claim(self, run: Run) -> Run:
        """Take a run over by compare-and-set: ``running``, owned here, with a fresh lease.

        Raises:
            RunConflictError: Another owner holds a live lease on it, or won the race.
        """
        now = time.time()
        held = run.owner is not None and run.owner != self.owner
        if held and not lease_expired(run, now):
            raise RunConflictError(
                f"run {run.run_id!r} is held by {run.owner!r} until its lease runs out",
                run_id=run.run_id,
            )
        taken = claim(run, owner=self.owner, lease_expires_at=now + self.lease_s, now=now)
        claimed = await self.store.update_run(taken, expected_version=run.version)
        if claimed is None:
            raise RunConflictError(
                f"run {run.run_id!r} was changed by another worker while this one tried to "
                "start it; only one may proceed",
                run_id=run.run_id,
            )
        return claimed

    async def _write_final(
        self,
        final: Run,
        version: int,
        records: list[JournalRecord],
        exported: dict[str, Any],
    ) -> Run | None:
        """Write the run's outcome, its last journal records and its trace in one transaction."""
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
        self, holder: Holder, hooks: JournalHooks, trace: Trace, outcome: Outcome
    ) -> Run:
        async with holder.lock:  # not while a renewal writes the run
            return await self._record_end(holder, hooks, trace, outcome)

    async def _record_end(
        self, holder: Holder, hooks: JournalHooks, trace: Trace, outcome: Outcome
    ) -> Run:
        """Store how the run ended (its outcome, last records and trace); return it."""
        run = holder.run
        status, result, error = verdict(outcome, run.flow)
        final = _final(run, hooks, holder, status, result, error)
        records = hooks.journal.take_pending()
        exported = trace.export()  # a store takes a JSON dict
        try:
            stored = await self._write_final(final, run.version, records, exported)
        except JournalError as exc:
            # A value JSON cannot carry got past the checks on the way (the store wrote
            # nothing of the transaction): the run must not stay running, so it fails
            # with the reason, without the records that cannot be stored (only ones a
            # replay re-derives ride to the end) and with its trace made safe.
            status, error = "failed", failure(exc, outcome.where)
            final = _final(run, hooks, holder, status, None, error)
            kept = [r for r in records if unencodable(r.data) is None]
            stored = await self._write_final(final, run.version, kept, json_safe(exported))
        if stored is None:
            raise RunConflictError(
                f"run {run.run_id!r} was taken over by another worker before it finished "
                "here; its outcome is theirs to record",
                run_id=run.run_id,
            )
        holder.run = stored
        log_end(run, status, error)
        return stored


def _final(
    run: Run,
    hooks: JournalHooks,
    holder: Holder,
    status: RunStatus,
    result: Any,
    error: RunErrorInfo | None,
) -> Run:
    """The run as it ended: its outcome, with this execution's counts added to its own."""
    retries = dict(hooks.spending.ledger.counts)
    active_s = run.active_s + (time.monotonic() - holder.started)
    return ended(run, status, result, error, hooks.spending.counts, retries, active_s)


def _is_async(flow: Flow) -> bool:
    return inspect.iscoroutinefunction(flow) or inspect.iscoroutinefunction(
        getattr(flow, "__call__", None)  # noqa: B004 - an async callable object
    )


def _rejects_human_pick(exc: BaseException) -> bool:
    return isinstance(exc, DecisionError) and exc.human_pick


def _found(exc: BaseException, match: Callable[[BaseException], bool]) -> BaseException | None:
    """Return ``exc``, or the first exception of its group (at any depth), that ``match``es."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _found(inner, match)
            if found is not None:
                return found
        return None
    return exc if match(exc) else None
