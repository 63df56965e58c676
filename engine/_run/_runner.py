"""How an engine runs one run: its run slots, its executor, its flows and its run policy.

:class:`Runner` is the running half of :class:`~engine.Engine`: it starts a run (creates and
executes it), resumes a stopped one from its journal, recovers the runs whose owner died, and
applies the run policy (layer 4) to how each one ended. The Engine is its public face, and a
batch is handed the runner's :meth:`~Runner.start` or :meth:`~Runner.resume` as the one thing
it calls for each input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio

from engine._base import (
    ENDED_IN_ERROR,
    Flow,
    RunConflictError,
    RunNotFoundError,
    log,
)
from engine._retries import RetryEvent, retry_run
from engine._run._executor import Executor, lease_expired
from engine._run._flows import FLOWS, encode_input, flow_name
from engine._run._leases import unfinished_runs
from engine._run._order import ResumeOrder
from engine._run._pacing import check_run_id
from engine._run._stopping import Stops
from engine._runtime import Approval
from engine.models import Model, model_from_string
from engine.store import Run

if TYPE_CHECKING:
    from tenacity import AsyncRetrying

__all__ = ["Runner"]

_NO_LIMIT: AbstractAsyncContextManager[object] = nullcontext()


class _PolicyYields(Exception):
    """The run policy stops: the run changed while it waited, or the engine is stopping."""

    def __init__(self, run: Run) -> None:
        super().__init__(run.run_id)
        self.run = run


class Runner:
    """Start, resume and recover the runs of one engine (see :class:`~engine.Engine`).

    Args:
        executor: Executes each run: claim, journaled execution, lease, outcome.
        stops: The engine's stopping: a shutdown ends the run policy's waits.
        concurrency: The most runs in flight at once (no cap when ``None``).
        timeout_s: The longest a resumed or recovered run may run at once.
        run_policy: Layer 4: resumes runs that stopped for a reason worth a retry.
    """

    def __init__(
        self,
        executor: Executor,
        stops: Stops,
        *,
        concurrency: int | None = None,
        timeout_s: float | None = None,
        run_policy: AsyncRetrying | None = None,
    ) -> None:
        self.executor = executor
        self.store = executor.store
        self.stops = stops
        self.timeout_s = timeout_s
        self.run_policy = run_policy
        self.flows = FLOWS
        self._limiter = anyio.CapacityLimiter(concurrency) if concurrency else None

    async def start(
        self,
        flow: Flow,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        run_id: str,
        timeout_s: float | None,
    ) -> Run:
        """Create the run and execute it; apply the run policy to how it ended.

        An existing ``run_id`` is returned as stored, neither run nor resumed.

        Raises:
            ValueError: ``run_id`` is not a non-empty string (nothing is stored).
        """
        check_run_id(run_id)
        name = self.flows.remember(flow)
        async with self._slot():
            run, created = await self.executor.start(
                flow, run_id, name, encode_input(name, args, kwargs), timeout_s
            )
        return await self._after(flow, run) if created else run

    async def resume(
        self,
        run_id: str,
        *,
        pick: Mapping[str, Any] | None = None,
        model: Model | str | None = None,
        max_retries: int | None = None,
        flow: Flow | None = None,
    ) -> Run:
        """Resume a stopped run from its journal (see :meth:`Engine.resume`)."""
        run = await self._stored(run_id)
        if run.status == "completed":
            return run
        fn = self.flows.find(run.flow, flow)
        order = ResumeOrder.of(run, pick=pick, model=_model(model), max_retries=max_retries)
        return await self._go_on(fn, run, order, check=pick is not None)

    async def answer(
        self,
        run_id: str,
        *,
        pick: Mapping[str, Any] | None = None,
        approval: Approval | None = None,
        where: str | None = None,
        model: Model | str | None = None,
        flow: Flow | None = None,
    ) -> Run:
        """Answer one of a waiting run's questions and go on (see :meth:`Engine.answer`)."""
        run = await self._stored(run_id)
        fn = self.flows.find(run.flow, flow)
        order = ResumeOrder.answering(
            run, pick=pick, approval=approval, where=where, model=_model(model)
        )
        return await self._go_on(fn, run, order, check=True)

    async def _stored(self, run_id: str) -> Run:
        run = await self.store.get_run(run_id)
        if run is None:
            raise RunNotFoundError(run_id)
        return run

    async def _go_on(self, fn: Flow, run: Run, order: ResumeOrder, *, check: bool) -> Run:
        """Execute ``run`` from its journal as ``order`` says; ``check`` its person's answer
        first, by a replay that writes nothing (an invalid one changes nothing)."""
        if check:
            await self.executor.probe(fn, run, order)
        if run.status == "running" and not lease_expired(run):
            raise RunConflictError(
                f"run {run.run_id!r} is running under owner {run.owner!r}; wait for it to stop",
                run_id=run.run_id,
            )
        return await self._after(fn, await self._execute(fn, run, order))

    async def recover(self, *, concurrency: int | None, flows: Iterable[Flow]) -> list[Run]:
        """Resume every run whose lease ran out (see :meth:`Engine.recover`)."""
        given = {flow_name(fn): fn for fn in flows}
        orphans, _ = await unfinished_runs(self.store)
        recovered: list[Run] = []
        limiter = anyio.CapacityLimiter(concurrency) if concurrency else None

        async def take(run: Run) -> None:
            try:
                fn = self.flows.find(run.flow, given.get(run.flow))
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

    async def _execute(self, flow: Flow, run: Run, order: ResumeOrder) -> Run:
        async with self._slot():
            return await self.executor.execute(
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
            if stored is None or stored.version != stopped.version or self.stops.stopping:
                raise _PolicyYields(stored or stopped)
            try:
                return await self._execute(flow, stored, ResumeOrder.of(stored, retry=event))
            except RunConflictError:  # taken by another resumer between the read and the claim
                raise _PolicyYields(await self.store.get_run(stopped.run_id) or stored) from None

        policy = self.run_policy.copy(sleep=self.stops.interruptible(self.run_policy.sleep))
        try:
            return await retry_run(policy, run, resume)
        except _PolicyYields as yielded:
            return yielded.run

    def _slot(self) -> AbstractAsyncContextManager[object]:
        """Hold one of the engine's run slots (a no-op without ``concurrency=``)."""
        return self._limiter if self._limiter is not None else _NO_LIMIT


def _model(model: Model | str | None) -> Model | None:
    return model_from_string(model) if isinstance(model, str) else model
