"""The public face of the run engine: :class:`Engine` runs, resumes, recovers and stops runs.

Its running lives in :mod:`._runner`, its store side (reading, pruning, queueing runs for
workers) in :mod:`._engine_reads`, and many runs at once in :mod:`._batch`; the statuses a
run moves through are :mod:`engine._base._status`'s. Every status change is a
compare-and-set in the store, so two resumers of one run cannot both proceed. While a run
is ``running`` its owner renews a lease; a run whose lease ran out (its process died) is
taken over by :meth:`Engine.recover` and replayed from its journal.

Every model call of every run goes through the engine's :class:`~engine.ProviderGuard`:
its provider limits, its rate-limit pauses and its circuit breakers are shared by all the
runs of the engine (and of every engine given the same guard).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine._base import Clock, Flow
from engine._limits import CircuitBreaker, ModelLimits, ProviderGuard
from engine._retries import OnRetry, RunBudget
from engine._run._answers import Answers
from engine._run._batch import DEFAULT_CONCURRENCY, Batch, OnError, OnProgress, StartRun
from engine._run._engine_reads import StoredRuns
from engine._run._executor import Executor
from engine._run._people import OnWaiting
from engine._run._runner import Runner
from engine._run._stopping import Stops, cancel_run
from engine._runtime import Runtime, check_timeout, gather, map
from engine.models import Model, Price, model_from_string
from engine.store import Run, Store

if TYPE_CHECKING:
    from tenacity import AsyncRetrying

    from engine._retries import DecisionPolicy

__all__ = ["Engine"]

Inputs = Iterable[Any] | AsyncIterable[Any]
_DEFAULT_BREAKER = CircuitBreaker()


class Engine(Answers, StoredRuns):
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
        prices: :class:`~engine.Price` by model name (a local server's model, a simulated
            one); they win over the maintained table, a model's own ``price=`` over them.
        timeout_s: The longest any run may run at once; past it the run is recorded
            ``cancelled`` (``timeout``) and resumes.
        on_retry: Called with every retry attempt at every layer of every run.
        grace_s: How long :meth:`shutdown` lets runs reach their next transition.
        on_waiting: Called with each run once it is stored ``waiting`` for a person (a
            human decision, an approval): post its question to a queue or a chat; sync or
            async; what it raises is logged.
        clock: The time of day in seconds (``time.time`` by default), for the deadlines of
            human decisions; inject one in tests.
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
        prices: Mapping[str, Price] | None = None,
        timeout_s: float | None = None,
        on_retry: OnRetry | None = None,
        grace_s: float = 10.0,
        on_waiting: OnWaiting | None = None,
        clock: Clock | None = None,
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
        self.on_retry = on_retry
        self.grace_s = grace_s
        self.owner = f"{uuid.uuid4().hex[:12]}"
        self.clock = clock if clock is not None else time.time
        self.guard = (
            limits if isinstance(limits, ProviderGuard) else ProviderGuard(limits, breaker=breaker)
        )
        self._executor = Executor(
            store,
            runtime,
            self.owner,
            lease_s,
            guard=self.guard.wrap,
            budget=budget,
            prices=prices,
            on_retry=on_retry,
            clock=self.clock,
            on_waiting=on_waiting,
        )
        self._stops = Stops(self._executor)
        self._runner = Runner(
            self._executor,
            self._stops,
            concurrency=concurrency,
            timeout_s=timeout_s,
            run_policy=run_policy,
        )

    @property
    def timeout_s(self) -> float | None:
        """The longest any run may run at once (``timeout_s=``); settable."""
        return self._runner.timeout_s

    @timeout_s.setter
    def timeout_s(self, timeout_s: float | None) -> None:
        if timeout_s is not None:
            check_timeout(timeout_s)
        self._runner.timeout_s = timeout_s

    @property
    def run_policy(self) -> AsyncRetrying | None:
        """Layer 4, the run policy (``run_policy=``); settable."""
        return self._runner.run_policy

    @run_policy.setter
    def run_policy(self, policy: AsyncRetrying | None) -> None:
        self._runner.run_policy = policy

    @property
    def stopping(self) -> bool:
        """Whether :meth:`shutdown` was called: runs stop at their next transition."""
        return self._stops.stopping

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
        return await self._runner.start(flow, args, kwargs, run_id, self.timeout_s)

    async def run_many(
        self,
        flow: Flow,
        inputs: Inputs,
        *,
        concurrency: int | None = None,
        run_id: Callable[[Any], str] | None = None,
        timeout_s: float | None = None,
        progress: OnProgress | None = None,
        on_error: OnError | None = None,
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
            on_error=on_error,
            handle_signals=handle_signals,
        )
        return await batch.collect()

    def as_completed(
        self,
        flow: Flow,
        inputs: Inputs,
        *,
        concurrency: int | None = None,
        run_id: Callable[[Any], str] | None = None,
        timeout_s: float | None = None,
        progress: OnProgress | None = None,
        on_error: OnError | None = None,
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
            on_error: Called with ``(input, run_id, error)`` for an input whose run cannot
                start (a run id that is not a non-empty string, an input that is not JSON),
                and the batch goes on; without it, that error stops the batch and is raised.
            handle_signals: On SIGINT or SIGTERM, :meth:`shutdown` the engine gracefully
                (a second signal cuts the grace period short).

        While a batch runs, the garbage collector's youngest generation is collected every
        :data:`~engine._run._pacing.GC_YOUNG_THRESHOLD` allocations instead of every 700 (the
        setting is put back when the last batch ends, unless the application changed it).
        """
        if timeout_s is not None:
            check_timeout(timeout_s)
        timeout = timeout_s if timeout_s is not None else self.timeout_s
        start = self._runner.start

        async def one(item: Any, run_id: str) -> Run:
            return await start(flow, (item,), {}, run_id, timeout)

        return self._batch(inputs, one, concurrency, run_id, progress, on_error, handle_signals)

    def resume_as_completed(
        self,
        run_ids: Inputs,
        *,
        model: Model | str | None = None,
        max_retries: int | None = None,
        concurrency: int | None = None,
        progress: OnProgress | None = None,
        on_error: OnError | None = None,
        handle_signals: bool = False,
    ) -> Batch:
        """Resume every run of ``run_ids`` as :meth:`resume` does; hand each back as it ends.

        The batch twin of :meth:`resume`, used like :meth:`as_completed` (``async with``,
        early exit, ``cancel()``, ``progress``, ``handle_signals``): the run ids are read one
        at a time as slots free up, and a completed run comes back as it is.

        Args:
            run_ids: The runs to resume: any iterable or async iterable of run ids.
            model: The model every live call of these resumes uses (the engine's otherwise).
            max_retries: Re-picks for each decision asked again.
            concurrency: Resumed runs in flight at most, as for :meth:`as_completed`.
            progress: As for :meth:`as_completed`.
            on_error: Called with ``(run_id, run_id, error)`` for a run that cannot be
                resumed (an unknown id, a flow that cannot be found, a run another worker
                holds), and the batch goes on; without it, that error stops the batch.
            handle_signals: As for :meth:`as_completed`.
        """
        chosen = model_from_string(model) if isinstance(model, str) else model
        resume = self._runner.resume

        async def one(item: Any, run_id: str) -> Run:
            return await resume(run_id, model=chosen, max_retries=max_retries)

        return self._batch(run_ids, one, concurrency, _same, progress, on_error, handle_signals)

    def _batch(
        self,
        inputs: Inputs,
        start: StartRun,
        concurrency: int | None,
        run_id: Callable[[Any], str] | None,
        progress: OnProgress | None,
        on_error: OnError | None,
        handle_signals: bool,
    ) -> Batch:
        return Batch(
            inputs,
            start,
            store=self.store,
            leases=self._executor.leases,
            stops=self._stops,
            concurrency=concurrency or self.concurrency or DEFAULT_CONCURRENCY,
            run_id=run_id,
            progress=progress,
            on_error=on_error,
            handle_signals=handle_signals,
            grace_s=self.grace_s,
        )

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
        return await self._runner.resume(
            run_id, pick=pick, model=model, max_retries=max_retries, flow=flow
        )

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
        return await self._runner.recover(concurrency=concurrency, flows=flows)

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
        await self._stops.shutdown(self.grace_s if grace_s is None else grace_s)


def _same(run_id: str) -> str:
    """A resume batch's inputs are its run ids."""
    return run_id
