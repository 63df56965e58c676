"""What a batch command shows: the tally of its runs, the live progress bar, the summary.

``engine run`` and ``engine resume --all-…`` drive an :class:`~engine.Engine` batch like any
program does; a :class:`BatchView` reads the batch's runs as they finish (and its progress and
not-started callbacks) into a :class:`Tally`, shows it on stderr while it runs, and
:func:`summary` prints what it came to.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import structlog
from rich.console import Group, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from engine._base import mask_secrets
from engine._run import Batch, BatchProgress
from engine.cli._common import STATUS_STYLE, err
from engine.cli._inputs import BadLine
from engine.store import Run

__all__ = ["BatchView", "Tally", "summary"]

log = structlog.get_logger("engine.cli")


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
    #: Whether a signal shut the batch down.
    interrupted: bool = False
    stopped: dict[str, list[str]] = field(default_factory=dict)
    #: Why runs failed: ``kind: message`` (its first line, cut short), with how many.
    failures: Counter[str] = field(default_factory=Counter)

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
        error = run.error
        if error is None:
            return
        if error.kind == "timeout" and (run.finished_at or 0.0) >= self.started_at:
            self.timed_out += 1  # timed out now, not in an earlier command
            log.warning("run_timed_out", run_id=run.run_id, message=error.message)
        if run.status == "failed":
            first = error.message.splitlines()[0] if error.message else ""
            reason = f"{error.kind}: {first}"
            self.failures[reason if len(reason) <= 160 else reason[:160] + "…"] += 1


class BatchView:
    """Follow a batch into a :class:`Tally`, with a live progress bar on stderr (a terminal's).

    Pass :meth:`progress` and :meth:`not_started` to the batch as its ``progress`` and
    ``on_error``, hand skipped input lines to :meth:`skip`, and read the batch with
    :meth:`follow`.
    """

    def __init__(self, tally: Tally, description: str, *, live: bool | None = None) -> None:
        self.tally = tally
        self.live = err.is_terminal if live is None else live
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self.description = description

    def __enter__(self) -> BatchView:
        if self.live:
            # Counts first and a bar that takes what width is left, so a narrow terminal
            # loses bar, not numbers.
            self._progress = Progress(
                SpinnerColumn(),
                MofNCompleteColumn(),
                TextColumn("[cyan]{task.fields[in_flight]}[/] in flight"),
                TextColumn("[yellow]{task.fields[suspended]}[/] suspended"),
                TextColumn("[red]{task.fields[failed]}[/] failed"),
                TextColumn("{task.fields[tokens]} tokens"),
                TextColumn("{task.fields[rate]}/s"),
                BarColumn(bar_width=None),
                TimeElapsedColumn(),
                console=err,
                redirect_stderr=True,
                expand=True,
            )
            err.print(Text(self.description, style="bold"))
            self._progress.__enter__()
            self._task = self._progress.add_task(
                self.description, total=self.tally.total, **self._fields()
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self.refresh()
            self._progress.__exit__(exc_type, exc, tb)

    async def follow(self, batch: Batch) -> None:
        """Run ``batch`` to its end, counting each run as it finishes."""
        async with batch as runs:
            async for run in runs:
                self.tally.finish(run)
                self.refresh()

    def progress(self, progress: BatchProgress) -> None:
        """Show the runs in flight (the batch's ``progress`` callback)."""
        self.tally.in_flight = progress.in_flight
        self.refresh()

    def not_started(self, item: Any, run_id: str | None, exc: Exception) -> None:
        """Count a run that could not start (the batch's ``on_error``); the others go on."""
        self.tally.not_started.append((run_id if run_id is not None else "?", str(exc)))
        log.warning("run_not_started", run_id=run_id, error=type(exc).__name__, message=str(exc))
        self.refresh()

    def skip(self, bad: BadLine) -> None:
        """Count an input line that was skipped."""
        self.tally.skipped.append(bad)
        log.warning("input_line_skipped", line=bad.line, reason=bad.reason)
        self.refresh()

    def refresh(self) -> None:
        """Show the tally's current counts."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self.tally.done, **self._fields())

    def _fields(self) -> dict[str, Any]:
        t = self.tally
        return {
            "in_flight": str(t.in_flight),
            "suspended": str(t.statuses["suspended"]),
            "failed": str(t.statuses["failed"] + len(t.not_started) + len(t.skipped)),
            "tokens": _compact(t.tokens),
            "rate": f"{t.rate:.1f}",
        }


def summary(tally: Tally, title: str) -> RenderableType:
    """Return the closing summary: runs per outcome, tokens, time, skipped lines."""
    table = Table(show_edge=True)
    table.add_column("outcome")
    table.add_column("runs", justify="right")
    for status in ("completed", "suspended", "failed", "cancelled"):
        style = STATUS_STYLE[status]
        table.add_row(Text(status, style=style), str(tally.statuses[status]))
    if tally.existing:
        table.add_row("already in the store", str(tally.existing))
    if tally.timed_out:
        table.add_row("timed out (cancelled)", str(tally.timed_out))
    if tally.not_started:
        table.add_row(Text("could not start", style="red"), str(len(tally.not_started)))
    if tally.skipped:
        table.add_row(Text("input lines skipped", style="red"), str(len(tally.skipped)))
    stats = Text(
        f"{tally.model_calls:,} model calls · {tally.tokens:,} tokens · "
        f"{tally.elapsed:.1f} s · {tally.rate:.1f} runs/s",
        style="dim",
    )
    parts: list[RenderableType] = [
        Text(title, style="bold", no_wrap=True, overflow="ignore"),
        table,
        stats,
    ]
    parts.extend(Text(f"line {b.line}: {b.reason}", style="red") for b in tally.skipped[:20])
    if len(tally.skipped) > 20:
        parts.append(Text(f"... and {len(tally.skipped) - 20} more skipped lines", style="red"))
    parts.extend(Text(f"run {i}: {m}", style="red") for i, m in tally.not_started[:10])
    parts.extend(
        Text(f"failed {n}x: {mask_secrets(reason)}", style="red")
        for reason, n in tally.failures.most_common(3)
    )
    return Group(*parts)


def _compact(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1_000:.1f}k"
    return str(n)
