"""The live progress bar of a batch and its closing summary table."""

from __future__ import annotations

from types import TracebackType
from typing import Any

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
from engine.cli._batch import Tally
from engine.cli._common import err

__all__ = ["BatchProgress", "summary"]

_STATUS_STYLE = {
    "completed": "green",
    "suspended": "yellow",
    "failed": "red",
    "cancelled": "magenta",
}


class BatchProgress:
    """A live progress bar on stderr (only on a terminal): done, in flight, outcomes, rate."""

    def __init__(self, tally: Tally, description: str, *, live: bool | None = None) -> None:
        self.tally = tally
        self.live = err.is_terminal if live is None else live
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self.description = description

    def __enter__(self) -> BatchProgress:
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
        style = _STATUS_STYLE[status]
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
