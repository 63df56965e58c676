"""Many runs at once, handed back as they finish, with flat memory.

A :class:`Batch` pulls its inputs one at a time (see :mod:`._batch_inputs`), keeps at most
``concurrency`` runs in flight, and passes each finished run through a bounded stream, so a
slow reader holds back the runs, which hold back the inputs. :meth:`Batch.cancel` stops the
batch and cancels the runs in flight, each recorded ``cancelled`` with its journal intact, so
that a resume continues it. With ``handle_signals``, SIGINT or SIGTERM shuts the engine down
gracefully (see :meth:`Engine.shutdown <engine.Engine.shutdown>`).

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
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from engine._base import cancel_scope, log
from engine._run._batch_inputs import Feed, Inputs
from engine._run._batch_progress import BatchProgress
from engine._run._leases import BATCH_RENEWED, Leases
from engine._run._pacing import PACING, RUN_IDS, check_run_id
from engine._run._stopping import Stops
from engine.store import Run, Store

__all__ = ["DEFAULT_CONCURRENCY", "Batch", "BatchProgress", "OnError", "OnProgress", "StartRun"]

#: Runs of a batch in flight at once when neither the batch nor the engine says.
DEFAULT_CONCURRENCY = 100

#: Starts (or resumes) the run of one input under the run id given; returns it as it ended.
StartRun = Callable[[Any, str], Awaitable[Run]]
OnProgress = Callable[[BatchProgress], object]
#: Called with an input, its run id as given (``None``: the run id function raised, or gave
#: no string) and the error.
OnError = Callable[[Any, str | None, Exception], object]


class Batch:
    """Runs over ``inputs``, handed back as they finish.

    Use it as ``async with engine.as_completed(flow, inputs) as runs: async for run in runs``
    (or :meth:`Engine.resume_as_completed <engine.Engine.resume_as_completed>`). Leaving the
    block before the last run cancels the runs still in flight (each is recorded
    ``cancelled`` and resumes) and starts no more.

    The engine builds its batches; the constructor takes what a batch needs of it.

    Args:
        inputs: Any iterable or async iterable, read one item at a time as slots free up.
        start: Starts (or resumes) the run of one input under the run id given, and returns
            it as stored when it ended (an existing run id: as found).
        store: Where the runs live: a run cut before it was under way is read back from it.
        leases: The runs in flight here (a cut stops them through it) and their leases,
            which the batch renews together while it runs.
        stops: The engine's stopping: a shutdown stops the batch, and a signal (with
            ``handle_signals``) starts one.
        concurrency: Runs of this batch in flight at most.
        run_id: A function of the input giving its run id; random ids otherwise.
        progress: Called with a copy of the :class:`BatchProgress` at each start and end.
        on_error: Called with ``(input, run_id, error)`` when an input's run cannot start
            (its run id is not a non-empty string, it is not JSON, its resume is refused);
            the batch goes on without it. ``run_id`` is the id as given, or ``None`` when
            the ``run_id`` function raised or gave no string. Without ``on_error``, that
            error stops the batch and is raised as it is. An error of the inputs themselves
            always stops it.
        handle_signals: On SIGINT or SIGTERM, shut the engine down gracefully (a second
            signal cuts the grace period short).
        grace_s: The grace period of a shutdown that a signal starts.
    """

    def __init__(
        self,
        inputs: Inputs,
        start: StartRun,
        *,
        store: Store,
        leases: Leases,
        stops: Stops,
        concurrency: int = DEFAULT_CONCURRENCY,
        run_id: Callable[[Any], str] | None = None,
        progress: OnProgress | None = None,
        on_error: OnError | None = None,
        handle_signals: bool = False,
        grace_s: float = 10.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        self.concurrency = concurrency
        self.run_id = run_id
        self.handle_signals = handle_signals
        self.grace_s = grace_s
        self.progress = BatchProgress()
        #: Whether the batch was cancelled or shut down before it started every input.
        self.interrupted = False
        self._start = start
        self._store = store
        self._leases = leases
        self._stops = stops
        self._on_progress = progress
        self._on_error = on_error
        self._inputs = Feed(inputs)
        self._t0 = time.monotonic()
        self._scopes: dict[int, tuple[str, anyio.CancelScope]] = {}
        self._background_scope = anyio.CancelScope()
        # The workers: how many there are and how many run, and why they stopped.
        self._pool: TaskGroup
        self._workers = 0
        self._busy = 0
        self._failed: Exception | None = None
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
        self._stops.open(self)
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
            self._stops.close(self)

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

    async def collect(self) -> list[Run]:
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
        self._inputs.stop()

    def cut(self, reason: str) -> None:
        """Stop every run of the batch still in flight now, recording ``reason``."""
        holders = self._leases.holders
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
        # Their runs start no lease renewer of their own: the batch's one renewer keeps them.
        BATCH_RENEWED.set(True)  # this task's own context, copied by the workers it starts
        async with self._send, self._inputs:
            async with anyio.create_task_group() as pool:
                self._pool = pool
                self._workers = 1
                pool.start_soon(self._work)
            if self._failed is not None:  # the inputs raised: as it is, not in a group
                raise self._failed
            self.interrupted = self._inputs.left()
        self._finished = True

    async def _work(self) -> None:
        """Take inputs and run them one after another until none is left or feeding stops."""
        while True:
            try:
                taken = await self._take()
            except Exception as exc:
                # Stop everything, as if the inputs had raised in the task that reads them.
                self._fail(exc)
                return
            if taken is None:
                return
            if self._busy == self._workers - 1 and self._workers < self.concurrency:
                self._workers += 1  # every other worker is busy: one more takes the next
                self._pool.start_soon(self._work)
            index, item, run_id = taken
            if run_id is None:
                continue  # no valid run id: handed to on_error, nothing to run
            self._busy += 1
            try:
                await self._one(index, item, run_id)
            except Exception as exc:
                # An input the run cannot start with (not JSON, say), with no on_error: stop
                # the batch and raise it as it is, like an error of the inputs themselves.
                self._fail(exc)
                return
            finally:
                self._busy -= 1
            if self._sink is None:
                # Let the reader act on the run just handed over (it may stop the batch)
                # before this worker starts another.
                await anyio.lowlevel.checkpoint()

    def _fail(self, exc: Exception) -> None:
        if self._failed is None:
            self._failed = exc
        self._pool.cancel_scope.cancel()

    async def _take(self) -> tuple[int, Any, str | None] | None:
        """Read the next input and register its run; ``None`` when there is none to start."""
        taken = await self._inputs.next()
        if taken is None:
            return None
        index, item = taken
        run_id: str | None = None
        try:
            run_id = RUN_IDS.new() if self.run_id is None else self.run_id(item)
            check_run_id(run_id)  # raised as is, by the batch, before anything is stored
        except Exception as exc:
            if self._on_error is None:
                raise
            # The id as given when it is a string (an empty one, say), for the report.
            self._not_started(item, run_id if isinstance(run_id, str) else None, exc)
            return index, item, None
        # Registered before the run starts, so a cancel from now on reaches it. By input, not
        # by id: two inputs may name one run (the second finds it stored).
        self._scopes[index] = (run_id, cancel_scope())
        return index, item, run_id

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
        error: Exception | None = None
        try:
            with self._scopes[index][1] as scope:
                try:
                    run = await self._start(item, run_id)
                finally:
                    del self._scopes[index]
            if scope.cancelled_caught:  # cut before it was under way: read where it stands
                run = await self._store.get_run(run_id)
        except Exception as exc:
            if self._on_error is None:
                raise
            error = exc
        finally:
            self.progress.in_flight -= 1
        if error is not None:
            self._not_started(item, run_id, error, started=-1)
            return None
        if run is not None:
            self.progress.count(run)
        self._changed()
        return run

    def _not_started(
        self, item: Any, run_id: str | None, exc: Exception, *, started: int = 0
    ) -> None:
        """Hand an input whose run cannot start to ``on_error``, and count it."""
        assert self._on_error is not None
        self.progress.not_started += 1
        self._changed(started=started)
        self._on_error(item, run_id, exc)

    def _changed(self, *, started: int = 0, in_flight: int = 0) -> None:
        progress = self.progress
        progress.started += started
        progress.in_flight += in_flight
        progress.elapsed_s = time.monotonic() - self._t0
        if self._on_progress is not None:
            self._on_progress(dataclasses.replace(progress))

    async def _background(self) -> None:
        with self._background_scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._leases.renew_all)
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
                grace = 0.0 if self._stops.stopping else self.grace_s
                self._tg.start_soon(self._stops.shutdown, grace)
