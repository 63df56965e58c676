"""The runs an executor holds: their latest stored version, their leases, how to stop them.

While a run is ``running`` its owner renews a lease on it; a run whose lease ran out (its
process died) may be taken over by another worker. One :class:`Holder` per run carries the
latest stored version (shared by the run and its renewer, under a lock), the run's cancel
scope, and the engine's request to stop it: at its next transition (a drain), or at once.
A run started by a batch renews no lease of its own: the batch's one renewer renews every
held lease in one group commit, for hundreds of runs in flight. Any other run is renewed by
the executor's one lease clock (on asyncio): a timer armed while such runs are in flight,
which every third of a lease renews the leases of all of them at once, so a run costs a
timer and no task of its own. On another event loop each run keeps a renewer task.
"""

from __future__ import annotations

import asyncio
import time
from contextvars import ContextVar

import anyio

from engine._base import STATUSES, UNFINISHED, cancel_scope, fast_lock, log
from engine.store import Run, Store

__all__ = ["BATCH_RENEWED", "Halt", "Holder", "Leases", "lease_expired", "unfinished_runs"]

#: Set in a batch's own tasks (and so in the runs they start): the batch's renewer, which
#: runs until the batch ends, keeps their leases alive. A run started anywhere else, even
#: while a batch of the same engine runs, renews its own.
BATCH_RENEWED: ContextVar[bool] = ContextVar("engine_batch_renewed", default=False)


class Halt:
    """An engine-wide request to stop every run at its next transition (a shutdown)."""

    __slots__ = ("stopping",)

    def __init__(self) -> None:
        self.stopping: str | None = None


class Holder:
    """A run in flight here: its latest stored version, its scope, and any stop request."""

    __slots__ = (
        "_done",
        "_lock",
        "_stopping",
        "finished",
        "halt",
        "run",
        "scope",
        "started",
        "stop_reason",
    )

    def __init__(self, run: Run, halt: Halt | None = None) -> None:
        self.run = run
        self.halt = halt
        self._lock: anyio.Lock | None = None  # made when first taken (see lock)
        self.finished = False
        self._done: anyio.Event | None = None  # made only when someone waits
        self.started = time.monotonic()
        self.scope: anyio.CancelScope | None = None
        self._stopping: str | None = None
        #: Why the run's scope was cancelled, when the engine cancelled it.
        self.stop_reason: str | None = None

    @property
    def lock(self) -> anyio.Lock:
        """The lock its renewals and its end take, made when first taken (most runs take it
        once, at their end, and a lock holds its waiters' queue from the start).

        Fast: almost never contended, and a yield on every uncontended take would cost each
        run a trip through the event loop.
        """
        if self._lock is None:
            self._lock = fast_lock()
        return self._lock

    @property
    def taken(self) -> bool:
        """Whether its lock is held now (by a renewal under way), so taking it would wait."""
        return self._lock is not None and self._lock.locked()

    async def wait(self) -> None:
        """Wait until the run has been recorded as it ended."""
        if not self.finished:
            if self._done is None:
                self._done = anyio.Event()
            await self._done.wait()

    def finish(self) -> None:
        """Mark the run recorded; wake whoever waits."""
        self.finished = True
        if self._done is not None:
            self._done.set()

    @property
    def stopping(self) -> str | None:
        """Why the run should stop at its next transition (a drain), or ``None``."""
        if self._stopping is None and self.halt is not None:
            return self.halt.stopping
        return self._stopping

    def stop(self, reason: str, *, now: bool) -> None:
        """Ask the run to stop: at its next model call or step, or ``now`` (cancelled)."""
        if self._stopping is None:
            self._stopping = reason
        if now and self.scope is not None and self.stop_reason is None:
            self.stop_reason = reason
            self.scope.cancel()


class Leases:
    """Keep the leases of an owner's runs alive, one renewer per run or one for a batch."""

    def __init__(self, store: Store, owner: str, lease_s: float) -> None:
        self.store = store
        self.owner = owner
        self.lease_s = lease_s
        self.holders: dict[str, Holder] = {}
        #: The runs the lease clock renews, and the clock's armed timer (``None``: idle).
        self._ticked: dict[int, Holder] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None  # the loop it is armed on
        #: The renewals the clock started and that have not ended (kept from the collector).
        self._renewals: set[asyncio.Task[None]] = set()

    def keep(self, holder: Holder) -> bool:
        """Keep ``holder``'s lease alive with the lease clock until :meth:`drop`.

        Returns whether the clock keeps it: ``False`` off asyncio, where the caller starts a
        renewer of its own (:meth:`renew_one`) and need not drop it.
        """
        loop = asyncio._get_running_loop()
        if loop is None:  # another event loop (anyio on trio): no clock here
            return False
        self._ticked[id(holder)] = holder
        if self._timer is None or self._timer_loop is not loop:  # idle, or armed on a loop
            # that ran before this one (an engine used under two anyio.run calls, say)
            self._timer = loop.call_later(self.lease_s / 3, self._tick, loop)
            self._timer_loop = loop
        return True

    def drop(self, holder: Holder) -> None:
        """Stop keeping ``holder``'s lease.

        The clock is left armed: it stops at its next tick if it keeps no run then, so runs
        one after another share one timer instead of arming and cancelling one each.
        """
        self._ticked.pop(id(holder), None)

    def stop(self) -> None:
        """Disarm the clock if it keeps no run (the engine is closing; a run still in flight
        keeps its lease renewed); a run kept later arms it again."""
        if self._timer is not None and not self._ticked:
            self._timer.cancel()
            self._timer = self._timer_loop = None

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        """Renew every run the clock keeps (one task, so one group commit), then re-arm; a
        clock that keeps no run stops."""
        self._timer = None
        holders = list(self._ticked.values())
        if not holders:
            return
        task = loop.create_task(self._renew_each(holders))
        self._renewals.add(task)
        task.add_done_callback(self._renewals.discard)
        self._timer = loop.call_later(self.lease_s / 3, self._tick, loop)

    async def _renew_each(self, holders: list[Holder]) -> None:
        async def one(holder: Holder) -> None:
            try:
                kept = await self.renew(holder)
            except Exception as exc:  # the store failed: the next tick tries again
                log.warning("lease_renewal_failed", run_id=holder.run.run_id, error=str(exc))
                return
            if not kept:  # no longer this owner's: renewed no more
                self._ticked.pop(id(holder), None)

        async with anyio.create_task_group() as tg:  # concurrent: one group commit
            for holder in holders:
                tg.start_soon(one, holder)

    async def renew_one(self, holder: Holder) -> None:
        """Renew one run's lease until it is no longer this owner's (cancel to stop)."""
        while True:
            await anyio.sleep(self.lease_s / 3)
            if not await self.renew(holder):
                return

    async def renew_all(self) -> None:
        """Renew every held run's lease, every third of a lease (cancel to stop)."""
        while True:
            await anyio.sleep(self.lease_s / 3)
            async with anyio.create_task_group() as tg:  # concurrent: one group commit
                for holder in list(self.holders.values()):
                    tg.start_soon(self.renew, holder)

    async def renew(self, holder: Holder) -> bool:
        """Extend one run's lease; return False when the run is no longer this owner's."""
        # Shielded: a renewal that commits must also update the holder, or the run's final
        # compare-and-set would use a stale version.
        async with holder.lock:
            run = holder.run
            if run.owner != self.owner or run.status != "running":
                return False
            with cancel_scope(shield=True):
                renewed = await self.store.update_run(
                    run.model_copy(update={"lease_expires_at": time.time() + self.lease_s}),
                    expected_version=run.version,
                )
            if renewed is None:
                log.warning("lease_lost", run_id=run.run_id)
                return False
            holder.run = renewed
            return True


def lease_expired(run: Run, now: float | None = None) -> bool:
    """Whether the run's lease has run out (or it has none)."""
    return run.lease_expires_at is None or run.lease_expires_at < (now or time.time())


async def unfinished_runs(store: Store) -> tuple[list[Run], list[Run]]:
    """Return the store's unfinished runs: those whose lease ran out (orphans), and the rest.

    An orphan's process died (or it was queued and never claimed): a recovery takes it over.
    The rest hold a live lease; their owner may still be working.
    """
    now = time.time()
    orphans: list[Run] = []
    held: list[Run] = []
    for status in STATUSES:
        if status in UNFINISHED:
            for run in await store.list_runs(status=status):
                (orphans if lease_expired(run, now) else held).append(run)
    return orphans, held
