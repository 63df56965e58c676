"""Draw a routing graph (:class:`~engine._observe._graph.RoutingGraph`) as a Mermaid flowchart.

Decision points are hexagons, options rounded boxes, final run statuses stadiums. An edge
from a decision to an option reads ``picks · share of visits · median attempts``; a
dotted edge leads to the options offered but never picked and to the decision's
``DecisionError`` node, whose label gives the failure kinds.

Every text from the store (flow, frame and option names, failure kinds) is escaped with
Mermaid's entity codes (``#35;`` for ``#``, ``#60;`` for ``<``, ...), so a label shows it
as written and none can break the chart or add HTML.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from engine._observe._points import DECISION_ERROR, END, RESUMED

if TYPE_CHECKING:
    from engine._observe._points import DecisionPoint, OptionStats


class Drawable(Protocol):
    """What a drawing reads of a routing graph (:class:`~engine._observe._graph.RoutingGraph`)."""

    flow: str | None
    runs: int

    @property
    def statuses(self) -> Mapping[str, int]: ...
    @property
    def points(self) -> Mapping[str, DecisionPoint]: ...
    @property
    def starts(self) -> Mapping[str, int]: ...
    def labels(self) -> Mapping[str, str]: ...


__all__ = ["render"]

_BREAK = "<br/>"
#: Mermaid entity codes; ``#`` first, as every code starts with it.
_ENTITIES = (
    ("#", "#35;"),
    ('"', "#quot;"),
    ("<", "#60;"),
    (">", "#62;"),
    ("&", "#38;"),
    ("`", "#96;"),
)
_STYLES = (
    "    classDef decision fill:#eef4ff,stroke:#3867d6",
    "    classDef unpicked fill:#f6f6f6,stroke:#aaa,color:#888,stroke-dasharray:4 3",
    "    classDef failure fill:#fdecea,stroke:#c0392b,color:#c0392b",
    "    classDef done fill:#eafaf1,stroke:#27ae60",
    "    classDef stopped fill:#fef5e7,stroke:#e67e22",
)


def render(graph: Drawable, *, direction: str = "TD") -> str:
    """Return the Mermaid flowchart of ``graph`` (one text block ending with a newline)."""
    ids = {key: f"p{i}" for i, key in enumerate(graph.points)}
    labels = graph.labels()
    ends = sorted(graph.statuses)
    flow = " ".join((graph.flow or "every flow").split())  # a comment is one line
    lines = [
        f"%% routing graph of {flow} over {graph.runs} run(s)",
        f"flowchart {direction}",
        f'    start(["{_text(f"start · {graph.runs} runs")}"])',
    ]
    for key, point in graph.points.items():
        lines.extend(_point(point, ids[key], labels[key], ids))
    for target, count in graph.starts.items():
        lines.append(f"    start -->|{count}| {_target(target, ids)}")
    for status in ends:
        shape = f'(["{_text(status)} · {graph.statuses[status]}"])'
        css = "done" if status == "completed" else "stopped"
        lines.append(f"    end_{status}{shape}:::{css}")
    resumed = sum(
        n for p in graph.points.values() for (_, to), n in p.next_failed.items() if to == RESUMED
    )
    if resumed:
        lines.append(f'    {RESUMED}(["{RESUMED} · {resumed}"]):::stopped')
    lines.extend(_STYLES)
    return "\n".join(lines) + "\n"


def _point(point: DecisionPoint, pid: str, label: str, ids: dict[str, str]) -> list[str]:
    head = f"{_text(label)}{_BREAK}{point.visits} visit(s)"
    lines = [f'    {pid}{{{{"{head}"}}}}:::decision']
    # Picks and failures apart: an option may be named like a failure (even DecisionError).
    picks: dict[str, str] = {}
    failures: dict[str, str] = {}
    for i, stats in enumerate(point.options.values()):
        oid = f"{pid}_o{i}"
        picks[stats.name] = oid
        if stats.picked:
            lines.append(f'    {oid}("{_text(stats.name)}")')
            lines.append(f'    {pid} -->|"{_text(_pick_label(stats, point.visits))}"| {oid}')
        else:
            lines.append(f'    {oid}("{_text(stats.name)}"):::unpicked')
            lines.append(f'    {pid} -.->|"0 of {stats.offered}"| {oid}')
    if point.errors:
        eid = failures[DECISION_ERROR] = f"{pid}_err"
        kinds = ", ".join(f"{k} {n}" for k, n in point.error_kinds.most_common())
        lines.append(f'    {eid}[["{DECISION_ERROR}{_BREAK}{_text(kinds)}"]]:::failure')
        share = f"{point.errors} · {point.error_rate:.1%}"
        lines.append(f'    {pid} -.->|"{_text(share)}"| {eid}')
    for i, (name, count) in enumerate(point.other.most_common()):
        xid = failures[name] = f"{pid}_x{i}"
        lines.append(f'    {xid}["{_text(name)}"]:::failure')
        lines.append(f"    {pid} -.->|{count}| {xid}")
    for routes, sources, arrow in (
        (point.next, picks, "-->"),
        (point.next_failed, failures, "-.->"),
    ):
        for (outcome, target), count in routes.items():
            source = sources.get(outcome)
            if source is not None:
                lines.append(f"    {source} {arrow}|{count}| {_target(target, ids)}")
    return lines


def _pick_label(stats: OptionStats, visits: int) -> str:
    parts = [f"{stats.picked} · {stats.picked / visits:.0%}" if visits else str(stats.picked)]
    median = stats.median_attempts
    if median is not None:
        parts.append(f"{median:g} att")
    if stats.repicked:
        parts.append(f"{stats.repicked} re-picked")
    if stats.by_human:
        parts.append(f"{stats.by_human} by hand")
    return " · ".join(parts)


def _target(target: str, ids: dict[str, str]) -> str:
    if target == RESUMED:
        return RESUMED
    if target.startswith(END):
        return f"end_{target[len(END) :]}"
    return ids[target]


def _text(text: str) -> str:
    """Escape text for a quoted Mermaid label: it shows as written, line breaks as breaks."""
    for char, code in _ENTITIES:
        text = text.replace(char, code)
    return text.replace("\r\n", _BREAK).replace("\n", _BREAK)
