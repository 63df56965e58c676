"""The live view of a run whose trace is not stored yet: its journal, as written so far.

A run's trace is stored when an execution ends, but its journal is written as the run goes:
each model call's reply, each pick, each finished step, each failed decision and retry. So
``engine show`` of a running run lists those records, in the order the run wrote them (its
keys' order), each with its key, kind, actor and a one-line summary, labelled as a partial
view: a model's pick is journaled with the write after it, so the newest pick may not be on
disk yet. Everything read from the store is plain text, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine._observe import journal_summary
from engine.store import JournalRecord, Run

__all__ = ["live_view"]


def live_view(run: Run, records: Sequence[JournalRecord]) -> RenderableType:
    """Return what ``engine show`` prints of a run with no stored trace: its journal so far."""
    if not records:
        return Text(
            f"no trace stored for this run yet, and no journal record: run {run.run_id} is "
            f"{run.status} and has finished no node so far",
            style="dim",
        )
    if run.status == "running":
        head = (
            f"live view (partial): run {run.run_id} is running; its trace is stored when this "
            f"execution ends. The {len(records)} journal record(s) written so far:"
        )
    else:
        head = (
            f"no trace stored for this run; its journal holds {len(records)} record(s) "
            "(a partial view):"
        )
    table = Table(show_edge=False, pad_edge=False)
    for column in ("#", "key", "kind", "actor", "summary"):
        table.add_column(column, justify="right" if column == "#" else "left")
    for n, record in enumerate(records, 1):
        table.add_row(
            str(n),
            Text(record.key),
            Text(record.kind),
            Text(record.actor or ""),
            Text(journal_summary(record)),
        )
    return Group(Text(head, style="bold"), table)
