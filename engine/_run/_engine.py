"""Durable runs: the run state machine, journaled execution, resume and crash recovery.

A run moves ``queued → running → completed | suspended | failed | cancelled`` and, on
resume, ``suspended | failed | cancelled → running``. Every status change is a
compare-and-set in the store, so two resumers of one run cannot both proceed. While a run
is ``running`` its owner renews a lease; a run whose lease ran out (its process died) is
taken over by :meth:`Engine.recover` and replayed from its journal.

Every model call of every run goes through the engine's :class:`~engine.ProviderGuard`:
its provider limits, its rate-limit pauses and its circuit breakers are shared by all the
runs of the engine (and of every engine given the same guard).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio

from engine._base import (
    ENDED_IN_ERROR,
    STATUSES,
    UNFINISHED,
    Flow,
    RunConflictError,
    RunNotFoundError,
    log,
)
from engine._limits import CircuitBreaker, ModelLimits, ProviderGuard
from engine._retries import OnRetry, RetryEvent, RunBudget, retry_run
from engine._run._batch import DEFAULT_CONCURRENCY, Batch, OnProgress
from engine._run._executor import Executor, lease_expired
from engine._run._flows import FLOWS, encode_input, flow_name
from engine._run._journal import ledger_of
from engine._run._order import ResumeOrder
from engine._run._pacing import check_run_id
from engine._run._stopping import cancel_run, shutdown
from engine._run._submit import submit as submit_runs
from engine._runtime import Runtime, check_timeout, gather, map
from engine.models import Model, model_from_string
from engine.store import Run, RunStatus, Store

if TYPE_CHECKING:
    from tenacity import AsyncRetrying

    from engine._retries import DecisionPolicy

__all__ = ["Engine"]

Inputs = Iterable[Any] | AsyncIterable[Any]
_NO_LIMIT: AbstractAsyncContextManager[object] = nullcontext()
_ORPHANABLE: tuple[RunStatus, ...] = tuple(s for s in STATUSES if s in UNFINISHED)
_DEFAULT_BREAKER = CircuitBreaker()


class _PolicyYields(Exception):
    """The run policy stops: the run changed while it waited, or the engine is stopping."""

    def __init__(self, run: Run) -> None:
        super().__init__(run.run_id)
        self.run = run


class Engine:
    """Run flows durably: journal every transition, resume stopped runs, recover crashed ones.

    Every setting has a default that does the right thing without configuration; the table
    in ``docs/retries.md`` lists them.

    Args:
        model: The model flows use: a :class:`~engine.models.Model`, or a string such as
            ``"openai:gpt-4o-mini"`` or ``"simulated:42"``.
        store: Where runs and journals live (an embedded SQLite file ``engine.db`` by default).
        concurrency: The most runs of this engine in flight at once (no cap by default).
        runtime: A ready :class:`~engine.Runtime` to use instead of ``model``.
        lease_s: How long a running run's ownership lasts without renewal; a run whose owner
            stopped renewing is taken over by :meth:`recover` after this long.
        limits: Provider limits (:class:`~engine.ModelLimits`) for every model, or by model
            name, or a :class:`~engine.ProviderGuard` shared with other engines. A 429's
            ``retry_after`` pauses the model for every run in any case.
        breaker: The circuit breaker of each provider (``None``: none); ignored when
            ``limits`` is a guard, which has its own.
        decision_policy: Layer 2 (see :func:`~engine.decision_policy`): ask a failed decision
            again from scratch, optionally on fallback models; off by default.
        run_policy: Layer 4 (see :func:`~engine.run_policy`): resume runs that suspended
            for a reason worth a retry (an unavailable provider); off by default.
        budget: What each run may spend, resumes included (:class:`~engine.RunBudget`).
        timeout_s: The longest any run may run at once; past it the run is recorded
            ``cancelled`` (``timeout``) and resumes.
        on_retry: Called with every retry attempt at every layer of every run.
        grace_s: How long :meth:`shutdown` lets runs reach their next transition.
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
        limits: ModelLimits | Mapping[str, ModelLimits] | ProviderGuard | None = None,
        breaker: CircuitBreaker | None = _DEFAULT_BREAKER,
        decision_policy: DecisionPolicy | None = None,
        run_policy: AsyncRetrying | None = None,
        budget: RunBudget | None = None,
        timeout_s: float | None = None,
        on_retry: OnRetry | None = None,
        grace_s: float = 10.0,
    ) -> None:
        if runtime is None:
            if model is None:
                raise TypeError("Engine needs model= (or runtime=)")
            runtime = Runtime(model=model)
        if decision_policy is not None:
            runtime.decision = decision_policy
        if timeout_s is not None:
            check_timeout(timeout_s)
        self._owns_store = store is None
        if store is None:
            from engine.store import SQLiteStore

            store = SQLiteStore("engine.db")
        self.runtime = runtime
        self.store = store
        self.lease_s = lease_s
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.run_policy = run_policy
        self.on_retry = on_retry
        self.grace_s = grace_s
        self.owner = f"{uuid.uuid4().hex[:12]}"
        self.guard = (
            limits if isinstance(limits, ProviderGuard) else ProviderGuard(limits, breaker=breaker)
        )
        self._limiter = anyio.CapacityLimiter(concurrency) if concurrency else None
        self._flows = FLOWS
        self._executor = Executor(
            store,
            runtime,
            self.owner,
            lease_s,
            guard=self.guard.wrap,
            budget=budget,
            on_retry=on_retry,
        )
        self._batches: set[Batch] = set()
        #: The waits of run policies between two resumes of a run (a shutdown ends them).
        self._waits: set[anyio.CancelScope] = set()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`shutdown` was called: runs stop at their next transition."""
        return self._executor.halt.stopping is not None

    # -- starting runs -------------------------------------------------------------------------

    async def run(self, flow: Flow, *args: Any, run_id: str | None = None, **kwargs: Any) -> Run:
        """Run ``flow(*args, **kwargs)`` as a durable run and return the stored :class:`Run`.

        An existing ``run_id`` returns the stored run whatever its status, without running
        or resuming it; ``None`` makes a new id. A ``DecisionError`` suspends the run and any
        other exception fails it: both are returned, not raised (see ``docs/retries.md`` for
        every outcome).

        Raises:
            ValueError: ``run_id`` is not a non-empty string (nothing is stored).
        """
        if run_id is None:
            run_id = uuid.uuid4().hex
        return await self._start(flow, args, kwargs, run_id, self.timeout_s)

    async def run_many(
        self,
        flow: Flow,
        inputs: Inputs,
        *,
        concurrency: int | None = None,
        run_id: Callable[[Any], str] | None = None,
        timeout_s: float | None = None,
        progress: OnProgress | None = None,
        handle_signals: bool = False,
    ) -> list[Run]:
        """Run ``flow(item)`` for every input; return the runs in input order.

        Stopped runs are returned, not raised; after a shutdown, only the runs that started
        are. The arguments are :meth:`as_completed`'s.
        """
        batch = self.as_completed(
            flow,
            inputs,
            concurrency=concurrency,
            run_id=run_id,
            timeout_s=timeout_s,
            progress=progress,
            handle_signals=handle_signals,
        )
        return await batch._collect()

    def as_completed(
        self,
        flow: Flow,
        inputs: Inputs,
        *,
        concurrency: int | None = None,
        run_id: Callable[[Any], str] | None = None,
        timeout_s: float | None = None,
        progress: OnProgress | None = None,
        handle_signals: bool = False,
    ) -> Batch:
        """Run ``flow(item)`` for every input; hand each run back as it finishes.

        Use it as ``async with engine.as_completed(flow, inputs) as runs: async for run in
        runs: ...``. Leaving the block early cancels the runs still in flight (recorded
        ``cancelled``, resumable); ``runs.cancel()`` does the same from inside it.

        Args:
            flow: The flow; each input is its one argument.
            inputs: Any iterable or async iterable, read one item at a time as slots free up
                (a generator or a file's lines: memory stays flat).
            concurrency: Runs of this batch in flight at most (the engine's ``concurrency``,
                else :data:`~engine._run._batch.DEFAULT_CONCURRENCY`).
            run_id: A function of the input giving its run id; random ids otherwise.
            timeout_s: Per run: past it, the run is recorded ``cancelled`` (``timeout``).
            progress: Called with a :class:`~engine.BatchProgress` at each start and end.
            handle_signals: On SIGINT or SIGTERM, :meth:`shutdown` the engine gracefully
                (a second signal cuts the grace period short).

        While a batch runs, the garbage collector's youngest generation is collected every
        :data:`~engine._run._pacing.GC_YOUNG_THRESHOLD` allocations instead of every 700 (the
        setting is put back when the last batch ends, unless the application changed it).
        """
        if timeout_s is not None:
            check_timeout(timeout_s)
        return Batch(
            self,
            flow,
            inputs,
            concurrency=concurrency or self.concurrency or DEFAULT_CONCURRENCY,
            run_id=run_id,
            timeout_s=timeout_s if timeout_s is not None else self.timeout_s,
            progress=progress,
            handle_signals=handle_signals,
            grace_s=self.grace_s,
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

    async def _start(
        self,
        flow: Flow,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        run_id: str,
        timeout_s: float | None,
    ) -> Run:
        """Create the run and execute it; apply the run policy to how it ended."""
        check_run_id(run_id)
        name = self._flows.remember(flow)
        async with self._slot():
            run, created = await self._executor.start(
                flow, run_id, name, encode_input(name, args, kwargs), timeout_s
            )
        return await self._after(flow, run) if created else run

    # -- reading runs --------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the store the engine opened itself (the default ``engine.db``) and the
        runtime's model connections; a store passed in stays open for its owner."""
        try:
            await self.runtime.aclose()
        finally:
            if self._owns_store:
                await self.store.close()

    async def __aenter__(self) -> Engine:
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
        self, *, older_than_s: float | None = None, keep_last: int | None = None
    ) -> int:
        """Delete finished runs by age or beyond the newest ``keep_last``; return how many.

        Raises:
            ValueError: ``older_than_s`` or ``keep_last`` is negative (or not a number); the
                store is left as it was.
        """
        return await self.store.prune(older_than_s=older_than_s, keep_last=keep_last)

    # -- resuming ------------------------------------------------------------------------------

    async def resume(
        self,
        run_id: str,
        *,
        pick: Mapping[str, Any] | None = None,
        model: Model | str | None = None,
        max_retries: int | None = None,
        flow: Flow | None = None,
    ) -> Run:
        """Resume a stopped run from its journal and return it.

        The failing decision is asked afresh (its original request, a new re-pick budget),
        on ``model`` when given, or settled by a human ``pick`` validated against the same
        menu. Completed steps and journaled model calls are replayed, not redone.

        Raises:
            RunNotFoundError: Unknown run id (a ``KeyError``).
            LookupError: The flow cannot be found; pass ``flow=``.
            DecisionError: ``pick`` is invalid; the stored run is left exactly as it was.
            RunConflictError: Another worker holds the run, or won the race to resume it.
        """
        run = await self.store.get_run(run_id)
        if run is None:
            raise RunNotFoundError(run_id)
        if run.status == "completed":
            return run
        fn = self._flows.find(run.flow, flow)
        if isinstance(model, str):
            model = model_from_string(model)
        order = ResumeOrder.of(run, pick=pick, model=model, max_retries=max_retries)
        if pick is not None:
            await self._executor.probe(fn, run, order)
        if run.status == "running" and not lease_expired(run):
            raise RunConflictError(
                f"run {run_id!r} is running under owner {run.owner!r}; wait for it to stop",
                run_id=run_id,
            )
        return await self._after(fn, await self._execute(fn, run, order))

    async def recover(
        self, *, concurrency: int | None = None, flows: Iterable[Flow] = ()
    ) -> list[Run]:
        """Resume every run whose owner stopped renewing its lease (its process died).

        A live owner is never displaced: only runs whose lease has run out are taken, each by
        compare-and-set, so two recovering processes never both resume one run. Each run is
        recovered on its own: one that cannot be is skipped (a ``recover_skipped`` log event
        says why) and left as it is for a later call, and the others go on.

        Args:
            concurrency: Recovered runs in flight at most (the engine's ``concurrency`` caps
                them too).
            flows: Flows to look among first, by the name each run recorded, as
                :meth:`resume`'s ``flow=`` does for one run: needed for a flow defined inside
                a function. Other flows are found as :meth:`resume` finds them; a run whose
                flow is found nowhere is skipped.

        Returns:
            The recovered runs, as each stopped.

        Raises:
            TypeError: An entry of ``flows`` is not a function (nothing is recovered).
        """
        given = {flow_name(fn): fn for fn in flows}
        orphans = [
            run
            for status in _ORPHANABLE
            for run in await self.store.list_runs(status=status)
            if lease_expired(run)
        ]
        recovered: list[Run] = []
        limiter = anyio.CapacityLimiter(concurrency) if concurrency else None

        async def take(run: Run) -> None:
            try:
                fn = self._flows.find(run.flow, given.get(run.flow))
            except LookupError as exc:
                reason = f"{exc} (or flows= to recover it)"
                log.warning("recover_skipped", run_id=run.run_id, flow=run.flow, reason=reason)
                return
            async with limiter if limiter is not None else _NO_LIMIT:
                try:
                    recovered.append(await self._execute(fn, run, ResumeOrder()))
                except RunConflictError:
                    log.info(
                        "recover_skipped", run_id=run.run_id, reason="taken by another process"
                    )

        async with anyio.create_task_group() as tg:
            for run in orphans:
                tg.start_soon(take, run)
        return recovered

    # -- stopping ------------------------------------------------------------------------------

    async def cancel(self, run_id: str) -> Run:
        """Cancel one run: in flight here, it stops now; stopped, it is marked ``cancelled``.

        Either way the run keeps its journal and resumes. A completed or cancelled run is
        returned as it is.

        Raises:
            RunNotFoundError: Unknown run id (a ``KeyError``).
            RunConflictError: The run is running under another owner.
        """
        return await cancel_run(self._executor, run_id)

    async def shutdown(self, grace_s: float | None = None) -> None:
        """Stop gracefully: start no run, let runs reach their next transition, then cut.

        Every batch stops starting runs. Each run in flight goes on until its current model
        call or step ends, and stops before the next one (nothing paid for is lost); after
        ``grace_s`` (the engine's ``grace_s`` by default) the runs still going are cancelled.
        Every stopped run is recorded ``cancelled`` (``shutdown``) with its journal intact.
        After a shutdown the engine stops every run at its first transition.
        """
        grace = self.grace_s if grace_s is None else grace_s
        await shutdown(self._executor, list(self._batches), grace, list(self._waits))

    # -- execution -----------------------------------------------------------------------------

    async def _execute(self, flow: Flow, run: Run, order: ResumeOrder) -> Run:
        async with self._slot():
            return await self._executor.execute(
                flow, run, order, journal=True, timeout_s=self.timeout_s
            )

    async def _after(self, flow: Flow, run: Run) -> Run:
        """Apply the run policy (layer 4): resume a stopped run while the policy says so.

        The policy gives way to anything that touched the run while it waited (a cancel, a
        resume by hand, another worker) and to a shutdown, which also ends its wait.
        """
        if self.run_policy is None or run.status not in ENDED_IN_ERROR:
            return run

        async def resume(stopped: Run, event: RetryEvent) -> Run:
            stored = await self.store.get_run(stopped.run_id)
            if stored is None or stored.version != stopped.version or self.stopping:
                raise _PolicyYields(stored or stopped)
            try:
                return await self._execute(flow, stored, ResumeOrder.of(stored, retry=event))
            except RunConflictError:  # taken by another resumer between the read and the claim
                raise _PolicyYields(await self.store.get_run(stopped.run_id) or stored) from None

        policy = self.run_policy.copy(sleep=self._policy_sleep(self.run_policy.sleep))
        try:
            return await retry_run(policy, run, resume)
        except _PolicyYields as yielded:
            return yielded.run

    def _policy_sleep(self, sleep: Callable[[float], Any]) -> Callable[[float], Any]:
        """Wrap a run policy's sleep so that a shutdown ends the wait at once."""

        async def interruptible(seconds: float) -> None:
            with anyio.CancelScope() as scope:
                self._waits.add(scope)
                try:
                    await sleep(seconds)
                finally:
                    self._waits.discard(scope)

        return interruptible

    def _slot(self) -> AbstractAsyncContextManager[object]:
        """Hold one of the engine's run slots (a no-op without ``concurrency=``)."""
        return self._limiter if self._limiter is not None else _NO_LIMIT
