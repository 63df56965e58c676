"""Drive many runs at once with a concurrency cap, per-run timeouts and a clean Ctrl-C.

A batch is a stream of jobs (start or resume one run) and skipped input lines. At most
``concurrency`` runs are in flight. A run past ``timeout_s`` is cancelled. On SIGINT or
SIGTERM no new run starts and the runs in flight are cancelled: the engine records each as
``cancelled`` with its journal intact, so ``engine resume`` continues it later.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import anyio
import structlog

from engine.cli._inputs import BadLine
from engine.store import Run, Store

__all__ = ["Job", "Tally", "drive"]

log = structlog.get_logger("engine.cli")


@dataclass(frozen=True, slots=True)
class Job:
    """One run to start or resume: its id, its input line (if any) and how to start it."""

    run_id: str
    start: Callable[[], Awaitable[Run]]
    line: int | None = None


@dataclass(slots=True)
class Tally:
    """What a batch has done so far; the progress display and the summary read it."""

    total: int
    #: Whether to count runs that were already stored (a rerun of a file) separately.
    track_existing: bool = True
    started_at: float = field(default_factory=time.time)
    clock: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    existing: int = 0
    timed_out: int = 0
    skipped: list[BadLine] = field(default_factory=list)
    not_started: list[tuple[str, str]] = field(default_factory=list)
    tokens: int = 0
    model_calls: int = 0
    interrupted: bool = False
    stopped: dict[str, list[str]] = field(default_factory=dict)
    #: Why runs failed: ``kind: message`` (its first line, cut short), with how many.
    failures: Counter[str] = field(default_factory=Counter)
    #: Runs that were in flight when the batch was interrupted.
    cut_short: list[str] = field(default_factory=list)

    @property
    def done(self) -> int:
        """Runs finished (in any status), lines skipped and runs that could not start."""
        return sum(self.statuses.values()) + len(self.skipped) + len(self.not_started)

    @property
    def elapsed(self) -> float:
        """Seconds since the batch started."""
        return time.monotonic() - self.clock

    @property
    def rate(self) -> float:
        """Runs finished per second."""
        elapsed = self.elapsed
        return sum(self.statuses.values()) / elapsed if elapsed > 0 else 0.0

    def finish(self, run: Run) -> None:
        """Count one finished run."""
        self.statuses[run.status] += 1
        self.tokens += run.usage.total_tokens
        self.model_calls += run.model_calls
        if self.track_existing and run.created_at < self.started_at:
            self.existing += 1
        if run.status != "completed":
            self.stopped.setdefault(run.status, []).append(run.run_id)
        if run.status == "failed" and run.error is not None:
            first = run.error.message.splitlines()[0] if run.error.message else ""
            reason = f"{run.error.kind}: {first}"
            self.failures[reason if len(reason) <= 160 else reason[:160] + "…"] += 1


async def drive(
    items: Iterable[Job | BadLine],
    *,
    store: Store,
    tally: Tally,
    concurrency: int,
    timeout_s: float | None = None,
    refresh: Callable[[], None] = lambda: None,
) -> None:
    """Run every job, at most ``concurrency`` at a time, counting into ``tally``."""
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    async with anyio.create_task_group() as outer:
        outer.start_soon(_watch_signals, outer.cancel_scope, tally)

        async def one(job: Job, token: object) -> None:
            try:
                await _one(job, store, tally, timeout_s)
            except anyio.get_cancelled_exc_class():
                tally.cut_short.append(job.run_id)
                raise
            finally:
                tally.in_flight -= 1
                limiter.release_on_behalf_of(token)
                refresh()

        async with anyio.create_task_group() as work:
            for item in items:
                if isinstance(item, BadLine):
                    tally.skipped.append(item)
                    log.warning("input_line_skipped", line=item.line, reason=item.reason)
                    refresh()
                    continue
                token = object()
                await limiter.acquire_on_behalf_of(token)
                tally.in_flight += 1
                refresh()
                work.start_soon(one, item, token)
        outer.cancel_scope.cancel()  # everything ran: stop watching for signals
    # Runs cut short by a signal were recorded by the engine as they stopped; count them.
    for run_id in tally.cut_short:
        stored = await store.get_run(run_id)
        if stored is not None:
            tally.finish(stored)


async def _one(job: Job, store: Store, tally: Tally, timeout_s: float | None) -> None:
    with structlog.contextvars.bound_contextvars(input_line=job.line, run_id=job.run_id):
        run: Run | None = None
        try:
            with anyio.move_on_after(timeout_s) as scope:
                run = await job.start()
        except Exception as exc:  # one run that cannot start must not stop the batch
            tally.not_started.append((job.run_id, str(exc)))
            log.warning("run_not_started", error=type(exc).__name__, message=str(exc))
            return
        if scope.cancelled_caught:
            tally.timed_out += 1
            log.warning("run_timed_out", timeout_s=timeout_s)
            run = await store.get_run(job.run_id)
        if run is not None:
            tally.finish(run)


async def _watch_signals(scope: anyio.CancelScope, tally: Tally) -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be installed on the main thread
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            tally.interrupted = True
            log.warning("batch_interrupted", signal=signal.Signals(signum).name)
            scope.cancel()
            return
