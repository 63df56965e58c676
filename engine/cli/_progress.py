"""What a batch command shows: the tally of its runs, the live progress bar, the summary.

``engine run`` and ``engine resume --all-…`` drive an :class:`~engine.Engine` batch like any
program does; a :class:`BatchView` reads the batch's runs as they finish (and its progress and
not-started callbacks) into a :class:`Tally`, shows it on stderr while it runs, and
:func:`summary` prints what it came to: one row per outcome, the rows adding up to the
file's lines, and :func:`exit_status` the command's exit status.
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
from engine._observe import usd
from engine._run import Batch, BatchProgress, lease_expired
from engine.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_NOTHING_STARTED,
    EXIT_OK,
    EXIT_STOPPED,
    STATUS_STYLE,
    err,
)
from engine.cli._inputs import BadLine
from engine.models import add_cost
from engine.store import Run

__all__ = ["BatchView", "Tally", "exit_status", "summary"]

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
    #: The runs that ran in this command, by how they ended.
    statuses: Counter[str] = field(default_factory=Counter)
    #: Runs found already stored and finished (a rerun of a file), by status.
    stored: Counter[str] = field(default_factory=Counter)
    timed_out: int = 0
    #: Runs another live process holds (``running`` with a live lease, or ``queued``).
    held: list[str] = field(default_factory=list)
    #: Runs whose process died (``running``, lease run out): ``engine recover`` takes them.
    orphaned: list[str] = field(default_factory=list)
    skipped: list[BadLine] = field(default_factory=list)
    #: Line numbers whose run id an earlier line of the file already gave.
    duplicates: list[int] = field(default_factory=list)
    not_started: list[tuple[str, str]] = field(default_factory=list)
    tokens: int = 0
    #: US dollars of the runs whose cost is known (``None``: no run's cost is known).
    cost_usd: float | None = None
    model_calls: int = 0
    #: Whether a signal shut the batch down.
    interrupted: bool = False
    stopped: dict[str, list[str]] = field(default_factory=dict)
    #: Why runs failed: ``kind: message`` (its first line, cut short), with how many.
    failures: Counter[str] = field(default_factory=Counter)

    @property
    def existing(self) -> int:
        """Runs that were already stored, finished, before this command."""
        return sum(self.stored.values())

    @property
    def done(self) -> int:
        """Lines (or runs) accounted for: every row of the summary but the total."""
        return (
            sum(self.statuses.values())
            + self.existing
            + len(self.held)
            + len(self.orphaned)
            + len(self.skipped)
            + len(self.duplicates)
            + len(self.not_started)
        )

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
        """Count one run the batch handed back: finished, stored before, or held elsewhere."""
        if run.status in ("running", "queued"):  # stored before, and not ours: left alone
            dead = run.status == "running" and lease_expired(run)
            (self.orphaned if dead else self.held).append(run.run_id)
            return
        if self.track_existing and run.created_at < self.started_at:
            self.stored[run.status] += 1  # spent in an earlier command, not counted here
        else:
            self.statuses[run.status] += 1
            self.tokens += run.usage.total_tokens
            self.cost_usd = add_cost(self.cost_usd, run.cost_usd)
            self.model_calls += run.model_calls
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
        self._reasons: set[str] = set()

    def __enter__(self) -> BatchView:
        if self.live:
            # Counts first and a bar that takes what width is left, so a narrow terminal
            # loses bar, not numbers.
            self._progress = Progress(
                SpinnerColumn(),
                MofNCompleteColumn(),
                TextColumn("[cyan]{task.fields[in_flight]}[/] in flight"),
                TextColumn("[yellow]{task.fields[suspended]}[/] suspended"),
                TextColumn("[blue]{task.fields[waiting]}[/] waiting"),
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
        message = str(exc)
        self.tally.not_started.append((run_id if run_id is not None else "?", message))
        if message not in self._reasons:  # each reason once; the summary counts its runs
            self._reasons.add(message)
            log.warning("run_not_started", run_id=run_id, error=type(exc).__name__, message=message)
        self.refresh()

    def duplicate(self, line: int) -> None:
        """Count an input line whose run id an earlier line already gave."""
        self.tally.duplicates.append(line)
        log.warning("input_line_duplicate", line=line)
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
            "waiting": str(t.statuses["waiting"]),
            "failed": str(
                t.statuses["failed"] + len(t.not_started) + len(t.skipped) + len(t.duplicates)
            ),
            "tokens": _compact(t.tokens),
            "rate": f"{t.rate:.1f}",
        }


def summary(tally: Tally, title: str) -> RenderableType:
    """Return the closing summary: runs per outcome, tokens, cost, time, skipped lines."""
    table = Table(show_edge=True)
    table.add_column("outcome")
    table.add_column("runs", justify="right")
    for status in ("completed", "suspended", "failed", "cancelled"):
        style = STATUS_STYLE[status]
        table.add_row(Text(status, style=style), str(tally.statuses[status]))
    if tally.statuses["waiting"]:  # not a failure: a person answers them
        table.add_row(
            Text("waiting", style=STATUS_STYLE["waiting"]), str(tally.statuses["waiting"])
        )
    if tally.timed_out:  # a part of the cancelled row, not a row of its own
        table.add_row(
            Text("  of them timed out (cancelled)", style="dim"), Text(str(tally.timed_out))
        )
    rows = (
        ("already in the store", tally.existing, ""),
        ("held by another process: left alone", len(tally.held), "cyan"),
        ("its process died: `engine recover`", len(tally.orphaned), "yellow"),
        ("could not start", len(tally.not_started), "red"),
        ("input lines skipped", len(tally.skipped), "red"),
        ("duplicate id in the file", len(tally.duplicates), "red"),
        ("never started (interrupted)", tally.total - tally.done, "magenta"),
    )
    for label, count, style in rows:
        if count > 0:
            table.add_row(Text(label, style=style), str(count))
    table.add_section()
    table.add_row(Text("total", style="bold"), str(max(tally.total, tally.done)))
    stats = Text(
        f"{tally.model_calls:,} model calls · {tally.tokens:,} tokens · {_cost(tally)} · "
        f"{tally.elapsed:.1f} s · {tally.rate:.1f} runs/s",
        style="dim",
    )
    parts: list[RenderableType] = [
        Text(title, style="bold", no_wrap=True, overflow="ignore"),
        table,
        stats,
    ]
    if tally.stored.keys() - {"completed"}:
        counts = ", ".join(f"{n} {s}" for s, n in tally.stored.most_common())
        parts.append(Text(f"already in the store: {counts}", style="dim"))
    waiting = tally.stopped.get("waiting", [])
    if waiting:
        parts.append(
            Text(
                f"{len(waiting)} waiting for a person (engine answer RUN_ID --pick/--approve/"
                f"--edit/--reject; engine show {waiting[0]} prints the question)",
                style=STATUS_STYLE["waiting"],
            )
        )
    parts.extend(Text(f"line {b.line}: {b.reason}", style="red") for b in tally.skipped[:20])
    if tally.duplicates:
        lines = ", ".join(map(str, tally.duplicates[:10]))
        more = "…" if len(tally.duplicates) > 10 else ""
        parts.append(Text(f"lines {lines}{more}: a run id an earlier line gave", style="red"))
    if len(tally.skipped) > 20:
        parts.append(Text(f"... and {len(tally.skipped) - 20} more skipped lines", style="red"))
    parts.extend(Text(line, style="red") for line in _not_started_lines(tally.not_started)[:10])
    parts.extend(
        Text(f"failed {n}x: {mask_secrets(reason)}", style="red")
        for reason, n in tally.failures.most_common(3)
    )
    return Group(*parts)


def exit_status(tally: Tally) -> int:
    """Return the command's exit status for what the batch came to (the README's table)."""
    if tally.interrupted:
        return EXIT_INTERRUPTED
    everything = tally.statuses + tally.stored
    if everything["completed"] == max(tally.total, tally.done):
        return EXIT_OK  # every line's run completed (an empty file: nothing to do)
    if not everything:
        return EXIT_NOTHING_STARTED  # no line ran, nor was found stored
    return EXIT_STOPPED


def _cost(tally: Tally) -> str:
    if tally.cost_usd is None:
        return "cost unknown" if tally.model_calls else "cost $0.00"
    return f"cost {usd(tally.cost_usd)}"


def _not_started_lines(not_started: list[tuple[str, str]]) -> list[str]:
    """Return each reason a run could not start once, with the runs it stopped."""
    runs: dict[str, list[str]] = {}
    for run_id, message in not_started:
        runs.setdefault(message, []).append(run_id)
    lines = []
    for message, ids in runs.items():
        if len(ids) == 1:
            lines.append(f"run {ids[0]}: {message}")
            continue
        more = ", …" if len(ids) > 3 else ""
        lines.append(f"{len(ids)} runs ({', '.join(ids[:3])}{more}): {message}")
    return lines


def _compact(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1_000:.1f}k"
    return str(n)
