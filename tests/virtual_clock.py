"""Virtual time for tests: sleeps end in order, and the clock jumps instead of waiting.

``async with virtual_time() as clock:`` starts an advancer task. ``clock()`` reads the
virtual time and ``await clock.sleep(s)`` sleeps ``s`` virtual seconds. Whenever every other
task is idle (the event loop has nothing ready to run), the advancer moves the clock to the
earliest sleeper's wake-up time and wakes it. So a test of a minute of rate limiting runs
in milliseconds, and sleeps wake in the order their ends come, as they would in real time.

Only for code that waits on the injected sleep and on in-memory events (MemoryStore, fake
models): work on threads or sockets would not hold the clock back.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

__all__ = ["VirtualClock", "virtual_time"]

_SETTLE_ROUNDS = 10_000


class VirtualClock:
    """A clock and a sleep on virtual seconds (see the module docstring)."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._heap: list[tuple[float, int, anyio.Event]] = []
        self._gone: set[int] = set()
        self._seq = itertools.count()
        self._new = anyio.Event()
        #: Every sleep asked for, in seconds, in order.
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of virtual time (cancellable)."""
        self.sleeps.append(seconds)
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        seq = next(self._seq)
        event = anyio.Event()
        heapq.heappush(self._heap, (self.now + seconds, seq, event))
        self._new.set()
        try:
            await event.wait()
        finally:
            if not event.is_set():
                self._gone.add(seq)

    async def advance(self) -> None:
        """Move the clock to each sleeper's end in turn, whenever all else is idle."""
        while True:
            await _settle()
            while self._heap and self._heap[0][1] in self._gone:
                self._gone.discard(heapq.heappop(self._heap)[1])
            if not self._heap:
                self._new = anyio.Event()
                await self._new.wait()
                continue
            at, _, event = heapq.heappop(self._heap)
            self.now = max(self.now, at)
            event.set()


async def _settle() -> None:
    """Return once no other task is ready to run."""
    loop = asyncio.get_running_loop()
    for _ in range(_SETTLE_ROUNDS):
        await anyio.lowlevel.checkpoint()
        if not loop._ready:  # type: ignore[attr-defined]
            return


@asynccontextmanager
async def virtual_time(start: float = 0.0) -> AsyncIterator[VirtualClock]:
    """Run the block on a :class:`VirtualClock`."""
    clock = VirtualClock(start)
    async with anyio.create_task_group() as tg:
        tg.start_soon(clock.advance)
        try:
            yield clock
        finally:
            tg.cancel_scope.cancel()
