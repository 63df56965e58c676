"""Many runs of one flow at once, handed back as they finish, with flat memory.

A :class:`Batch` pulls its inputs one at a time (a list, a generator, a file's lines, an
async iterator: never all of them at once), keeps at most ``concurrency`` runs in flight,
and passes each finished run through a bounded stream, so a slow reader holds back the
runs, which hold back the inputs. Each run has an optional timeout; :meth:`Batch.cancel`
stops the batch and cancels the runs in flight, each recorded ``cancelled`` with its
journal intact, so that a resume continues it. With ``handle_signals``, SIGINT or SIGTERM
shuts the engine down gracefully (see :meth:`Engine.shutdown <engine.Engine.shutdown>`).

The batch's tasks live in a task group the batch enters and leaves with ``async with``, so
leaving the block early (``break``, an exception) stops the batch in the task that started
it, never in a garbage collector's.

While any batch runs, the garbage collector's youngest generation waits for
:data:`~engine._run._pacing.GC_YOUNG_THRESHOLD` allocations instead of CPython's default 700
(see :class:`~engine._run._pacing.CollectorPacing`): hundreds of runs in flight hold many young
objects, and the default has the collector scan and promote them over and over. The setting
goes back as it was when the last batch ends, unless something else changed it meanwhile.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
)
from contextlib import aclosing
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from engine._base import Flow, log
from engine._run._pacing import PACING, RUN_IDS, check_run_id
from engine.store import Run

if TYPE_CHECKING:
    from engine._run._engine import Engine

__all__ = ["DEFAULT_CONCURRENCY", "Batch", "BatchProgress"]

#: Runs of a batch in flight at once when neither the batch nor the engine says.
DEFAULT_CONCURRENCY = 100

Inputs = Iterable[Any] | AsyncIterable[Any]
OnProgress = Callable[["BatchProgress"], object]


@dataclass(slots=True)
class BatchProgress:
    """Where a batch stands: what started, what is in flight, how runs ended, what they cost.

    Attributes:
        started: Runs started (or found stored already, for an existing ``run_id``).
        in_flight: Runs started and not finished.
        completed: Runs that completed.
        suspended: Runs suspended (a decision, a budget, an unavailable provider).
        failed: Runs that failed.
        cancelled: Runs cancelled (a timeout, a cancel, a shutdown).
        tokens: Tokens spent by the finished runs.
        model_calls: Model calls made by the finished runs.
        elapsed_s: Seconds since the batch started.
    """

    started: int = 0
    in_flight: int = 0
    completed: int = 0
    suspended: int = 0
    failed: int = 0
    cancelled: int = 0
    tokens: int = 0
    model_calls: int = 0
    elapsed_s: float = 0.0

    @property
    def done(self) -> int:
        """Runs finished, whatever their status."""
        return self.completed + self.suspended + self.failed + self.cancelled

    def count(self, run: Run) -> None:
        """Count one finished run."""
        if run.status in ("completed", "suspended", "failed", "cancelled"):
            setattr(self, run.status, getattr(self, run.status) + 1)
        self.tokens += run.usage.total_tokens
        self.model_calls += run.model_calls


class Batch:
    """Runs of ``flow`` over ``inputs``, handed back as they finish.

    Use it as ``async with engine.as_completed(flow, inputs) as runs: async for run in runs``.
    Leaving the block before the last run cancels the runs still in flight (each is
    recorded ``cancelled`` and resumes) and starts no more.
    """

    def __init__(
        self,
        engine: Engine,
        flow: Flow,
        inputs: Inputs,
        *,
        concurrency: int,
        run_id: Callable[[Any], str] | None = None,
        timeout_s: float | None = None,
        progress: OnProgress | None = None,
        handle_signals: bool = False,
        grace_s: float | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        self.engine = engine
        self.flow = flow
        self.inputs = inputs
        self.concurrency = concurrency
        self.run_id = run_id
        self.timeout_s = timeout_s
        self.on_progress = progress
        self.handle_signals = handle_signals
        self.grace_s = grace_s
        self.progress = BatchProgress()
        #: Whether the batch was cancelled or shut down before it started every input.
        self.interrupted = False
        self._t0 = time.monotonic()
        self._scopes: dict[int, tuple[str, anyio.CancelScope]] = {}
        self._background_scope = anyio.CancelScope()
        # The feed: its workers, how many there are and run, the inputs read so far, and why
        # it stopped taking inputs.
        self._pool: TaskGroup
        self._workers = 0
        self._busy = 0
        self._index = 0
        self._stopped = False
        self._exhausted = False
        self._failed: Exception | None = None
        self._reading = anyio.Lock()
        self._fetch: anyio.CancelScope | None = None
        self._finished = False
        self._tg: TaskGroup | None = None
        #: Where runs go instead of the stream when the whole batch is collected at once.
        self._sink: dict[int, Run] | None = None
        self._send: MemoryObjectSendStream[tuple[int, Run]]
        self._receive: MemoryObjectReceiveStream[tuple[int, Run]]

    # -- the context -------------------------------------------------------------------------

    async def __aenter__(self) -> Batch:
        # Bounded: runs that finished wait (holding their slots) until the reader takes them.
        self._send, self._receive = anyio.create_memory_object_stream[tuple[int, Run]](
            self.concurrency
        )
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        PACING.enter()
        self.engine._executor.leases.shared += 1  # one renewer keeps the batch's leases alive
        self.engine._batches.add(self)
        self._tg.start_soon(self._background)
        self._tg.start_soon(self._feed)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        try:
            if not self._finished:
                self.cancel()  # left early: nothing more starts, what runs is cancelled
            self._receive.close()  # runs blocked on handing over a result give up
            self._background_scope.cancel()
            if isinstance(exc, Exception):
                # The reader's own error: wait for the runs to be recorded, then let it
                # propagate as it is, not wrapped in an exception group.
                await self._tg.__aexit__(None, None, None)
                return False
            try:
                return await self._tg.__aexit__(exc_type, exc, tb)
            except BaseExceptionGroup as group:
                # The inputs raised (or gave a bad run id): as it is, not in a group.
                if self._failed is not None and list(group.exceptions) == [self._failed]:
                    raise self._failed from None
                raise
        finally:
            PACING.exit()
            self.engine._executor.leases.shared -= 1
            self.engine._batches.discard(self)

    def __aiter__(self) -> AsyncIterator[Run]:
        return self._runs()

    async def _runs(self) -> AsyncIterator[Run]:
        async for _, run in self.indexed():
            yield run

    async def indexed(self) -> AsyncIterator[tuple[int, Run]]:
        """Yield ``(input index, run)`` as runs finish.

        Without ``async with``, the batch opens and closes itself around the iteration: fine
        for a loop that reads every run; a loop that may stop early should use ``async with``
        so that the runs still in flight are cancelled right there.
        """
        if self._tg is None:
            async with self:
                async for pair in self._receive:
                    yield pair
            return
        async for pair in self._receive:
            yield pair

    async def _collect(self) -> list[Run]:
        """Run the whole batch and return its runs in input order (``run_many``).

        The runs are kept as they finish instead of passing one by one through the stream.
        """
        sink: dict[int, Run] = {}
        self._sink = sink
        async with self:
            async for _ in self._receive:  # ends when the last run has been kept
                pass
        return [sink[i] for i in sorted(sink)]

    # -- stopping ----------------------------------------------------------------------------

    def cancel(self) -> None:
        """Start no more runs and cancel those in flight (recorded ``cancelled``, resumable)."""
        self.stop_feeding()
        self.cut("cancelled")

    def stop_feeding(self) -> None:
        """Start no more runs; those in flight go on."""
        if self._stopped:
            return
        self._stopped = True
        if self._fetch is not None:
            self._fetch.cancel()  # a read of the inputs under way

    def cut(self, reason: str) -> None:
        """Stop every run of the batch still in flight now, recording ``reason``."""
        holders = self.engine._executor.holders
        for run_id, scope in list(self._scopes.values()):
            holder = holders.get(run_id)
            if holder is not None:
                holder.stop(reason, now=True)
            else:  # not under way yet: its start is cancelled, and it is read back as it is
                scope.cancel()

    # -- the tasks ---------------------------------------------------------------------------

    async def _feed(self) -> None:
        # A pool of workers, each running one run at a time and reading the next input when it
        # is free: at most ``concurrency`` runs in flight, with a task per slot, not per run.
        inputs = self.inputs
        items = aiter(inputs) if isinstance(inputs, AsyncIterable) else iter(inputs)
        async with self._send, aclosing(_items(items)) as reader:
            async with anyio.create_task_group() as pool:
                self._pool = pool
                self._workers = 1
                pool.start_soon(self._work, items, reader)
            if self._failed is not None:  # the inputs raised: as it is, not in a group
                raise self._failed
            self.interrupted = self._stopped and not self._exhausted and _more(items)
        self._finished = True

    async def _work(self, items: Iterator[Any] | AsyncIterator[Any], reader: Reader) -> None:
        """Take inputs and run them one after another until none is left or feeding stops."""
        while True:
            try:
                taken = await self._take(items, reader)
            except Exception as exc:
                # Stop everything, as if the inputs had raised in the task that reads them.
                self._failed = exc
                self._pool.cancel_scope.cancel()
                return
            if taken is None:
                return
            if self._busy == self._workers - 1 and self._workers < self.concurrency:
                self._workers += 1  # every other worker is busy: one more takes the next
                self._pool.start_soon(self._work, items, reader)
            self._busy += 1
            try:
                await self._one(*taken)
            except Exception as exc:
                # An input the run cannot start with (not JSON, say): stop the batch and
                # raise it as it is, like an error of the inputs themselves.
                if self._failed is None:
                    self._failed = exc
                self._pool.cancel_scope.cancel()
                return
            finally:
                self._busy -= 1
            if self._sink is None:
                # Let the reader act on the run just handed over (it may stop the batch)
                # before this worker starts another.
                await anyio.lowlevel.checkpoint()

    async def _take(
        self, items: Iterator[Any] | AsyncIterator[Any], reader: Reader
    ) -> tuple[int, Any, str] | None:
        """Read the next input and register its run; ``None`` when there is none to start."""
        if self._stopped or self._exhausted:
            return None
        if isinstance(items, Iterator):
            try:
                item = next(items)
            except StopIteration:
                self._exhausted = True
                return None
        else:
            item = await self._read(reader)
            if item is _NOTHING:
                return None
        index = self._index
        self._index += 1
        if self.run_id is None:
            run_id = RUN_IDS.new()
        else:
            run_id = self.run_id(item)
            check_run_id(run_id)  # raised as is, by the batch, before anything is stored
        # Registered before the run starts, so a cancel from now on reaches it. By input, not
        # by id: two inputs may name one run (the second finds it stored).
        self._scopes[index] = (run_id, anyio.CancelScope())
        return index, item, run_id

    async def _read(self, reader: Reader) -> Any:
        """Read an async input, one worker at a time; :data:`_NOTHING` when none is left."""
        async with self._reading:
            if self._stopped or self._exhausted:
                return _NOTHING
            try:
                with anyio.CancelScope() as self._fetch:  # stop_feeding cancels it
                    try:
                        return await anext(reader)
                    except StopAsyncIteration:
                        self._exhausted = True
            finally:
                self._fetch = None
            return _NOTHING

    async def _one(self, index: int, item: Any, run_id: str) -> None:
        try:
            run = await self._run_one(index, item, run_id)
            if run is not None:
                if self._sink is not None:
                    self._sink[index] = run
                else:
                    # Holding the slot while the reader is slow: back-pressure to the inputs.
                    await self._send.send((index, run))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the reader left; the run is stored whatever happened to it

    async def _run_one(self, index: int, item: Any, run_id: str) -> Run | None:
        self._changed(started=1, in_flight=1)
        run: Run | None = None
        try:
            with self._scopes[index][1] as scope:
                try:
                    run = await self.engine._start(self.flow, (item,), {}, run_id, self.timeout_s)
                finally:
                    del self._scopes[index]
            if scope.cancelled_caught:  # cut before it was under way: read where it stands
                run = await self.engine.store.get_run(run_id)
        finally:
            self.progress.in_flight -= 1
        if run is not None:
            self.progress.count(run)
        self._changed()
        return run

    def _changed(self, *, started: int = 0, in_flight: int = 0) -> None:
        progress = self.progress
        progress.started += started
        progress.in_flight += in_flight
        progress.elapsed_s = time.monotonic() - self._t0
        if self.on_progress is not None:
            self.on_progress(dataclasses.replace(progress))

    async def _background(self) -> None:
        with self._background_scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.engine._executor.leases.renew_all)
                if self.handle_signals:
                    tg.start_soon(self._watch_signals)

    async def _watch_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be installed on the main thread
        assert self._tg is not None
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                log.warning("batch_interrupted", signal=signal.Signals(signum).name)
                # A second signal cuts the grace period short.
                grace = 0.0 if self.engine.stopping else self.grace_s
                self._tg.start_soon(self.engine.shutdown, grace)


_NOTHING = object()
Reader = AsyncGenerator[Any, None]


def _more(items: Iterator[Any] | AsyncIterator[Any]) -> bool:
    """Whether inputs were left unstarted (an async source, whose read was cut, is assumed to)."""
    if not isinstance(items, Iterator):
        return True
    try:
        return next(items, _NOTHING) is not _NOTHING
    except Exception:  # a source that fails now had inputs left as far as anyone knows
        return True


async def _items(items: Iterator[Any] | AsyncIterator[Any]) -> Reader:
    """Yield async inputs one at a time (closed with the batch); sync ones are read directly."""
    if isinstance(items, AsyncIterator):
        async for item in items:
            yield item
