"""What the pages show, read from the store: pages of runs, one run, a flow's graph, the inbox."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine._base import FINISHED, RunStatus
from engine._observe import RoutingGraph, TraceLine, trace_lines
from engine.store import Run, Store

__all__ = [
    "PAGE",
    "STATUSES",
    "Execution",
    "RunsPage",
    "at",
    "executions_of",
    "finished",
    "flows_seen",
    "parse_after",
    "read_page",
    "routing_of",
    "seconds",
]

#: Runs on one page of the runs table.
PAGE = 50

#: Every status, in the order the counts are shown.
STATUSES: tuple[RunStatus, ...] = (
    "queued",
    "running",
    "waiting",
    "suspended",
    "completed",
    "failed",
    "cancelled",
)


@dataclass(slots=True)
class RunsPage:
    """One page of the runs table, with what it was filtered by and the key of the next."""

    runs: list[Run]
    counts: dict[str, int]
    status: str
    flow: str
    search: str
    after: str
    next_after: str | None
    live: bool

    @property
    def total(self) -> int:
        """Every run of the store."""
        return sum(self.counts.values())


def parse_after(text: str) -> tuple[float, str] | None:
    """Read a page key written ``created_at~run_id``; ``None`` for none or one unreadable."""
    at_text, sep, run_id = text.partition("~")
    if not sep:
        return None
    try:
        at_value = float(at_text)
    except ValueError:
        return None
    return (at_value, run_id) if math.isfinite(at_value) else None


def _key(run: Run) -> str:
    return f"{run.created_at!r}~{run.run_id}"


async def read_page(store: Store, query: Mapping[str, str]) -> RunsPage:
    """Read the page of runs the query asks for (``status``, ``flow``, ``q``, ``after``)."""
    status = query.get("status", "")
    flow = query.get("flow", "").strip()
    search = query.get("q", "").strip()
    after_text = query.get("after", "")
    chosen: Any = status if status in STATUSES else None
    runs = await store.page_runs(
        status=chosen,
        flow=flow or None,
        search=search or None,
        after=parse_after(after_text),
        limit=PAGE + 1,
    )
    counts = await store.count_runs_by_status()
    more = len(runs) > PAGE
    runs = runs[:PAGE]
    return RunsPage(
        runs=runs,
        counts=counts,
        status=status if chosen else "",
        flow=flow,
        search=search,
        after=after_text,
        next_after=_key(runs[-1]) if more else None,
        live=any(counts.get(s, 0) for s in ("queued", "running")),
    )


def at(stamp: float | None) -> str:
    """A time of day as the pages write it (UTC)."""
    if stamp is None:
        return ""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


def seconds(value: float | None) -> str:
    """A duration as the pages write it."""
    if value is None:
        return ""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


@dataclass(frozen=True, slots=True)
class Execution:
    """One execution of a run (the first, or a resume) as the lines of its tree."""

    number: int
    lines: list[TraceLine]


def executions_of(trace: Mapping[str, Any] | None) -> list[Execution]:
    """Split a stored trace's lines into its executions, oldest first."""
    if not trace:
        return []
    found: list[Execution] = []
    for line in trace_lines(trace):
        if line.depth == 0 or not found:
            found.append(Execution(len(found) + 1, []))
        found[-1].lines.append(line)
    return found


def finished(run: Run) -> bool:
    """Whether the run will not change unless someone resumes it."""
    return run.status in FINISHED or run.status in ("suspended", "waiting")


async def flows_seen(store: Store) -> list[str]:
    """The flows of the newest 1000 runs, for the graph page's list."""
    return sorted({r.flow for r in await store.page_runs(limit=1000)})


async def routing_of(store: Store, flow: str) -> RoutingGraph:
    """The routing graph of a flow's stored runs."""
    return await RoutingGraph.from_store(store, flow)
