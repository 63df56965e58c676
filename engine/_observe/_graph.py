"""The routing graph: the decisions of many runs of one flow, aggregated and drawn as Mermaid.

A *decision point* is one decision of the flow's code, named by its trace key with the run
root dropped and branch indices folded (``route_ticket:0/gather:0/*/check_line_item:0/
decision:0 [bad, ok]``), so the same decision in every run and every branch of an
``engine.map`` is one point. A folded key ends with the options the decision offered: the
branches of an ``engine.gather`` may each run other code, and two decisions there share a
point only when they offer the same options. For each point the graph counts visits, the
options offered and picked, the attempts each pick took, and the decisions that failed
(``DecisionError``) with their failure kinds. An outcome leads to the next decision the run
took after it, or to the run's final status: :attr:`DecisionPoint.next` after a pick,
:attr:`DecisionPoint.next_failed` after a failure (kept apart, as an option may be named
like a failure).

A decision that failed and was later resumed past counts as a visit that ended in
``DecisionError`` and led to ``resumed``. Its failure is read from the run's journal (every
``decision_failed`` record, from every execution, even one that died before it stored its
trace); the final trace shows only the last failure of a decision that still ends in one.
Each journaled failure is placed at its decision in the final trace, or else in the latest
earlier execution (``trace["earlier"]``) that reached it.

Built from stored traces (:meth:`Engine.trace`, walked by :mod:`._stored`) and, for resumed
runs, their journals; what each point counts is :mod:`._points`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine._base import StoredNode
from engine._observe._mermaid import render
from engine._observe._points import (
    DECISION_ERROR,
    END,
    RESUMED,
    DecisionPoint,
    EarlierFailure,
    point_dict,
)
from engine._observe._stored import Execution, data_of, executions
from engine.store import Store

__all__ = ["RoutingGraph"]

_GENERATION = re.compile(r"@\d+$")


@dataclass(slots=True)
class _Visit:
    """One decision node of one trace, with what the graph needs from it.

    ``branches`` lists the concurrent branches the decision ran in, outermost first, each as
    ``(group node id, branch node id)``. ``outcome`` is the picked option, or how the visit
    failed when ``failed``.
    """

    id: int
    point: str
    outcome: str
    failed: bool
    branches: tuple[tuple[int, int], ...]

    def new_branches(self, other: _Visit) -> list[tuple[int, int]]:
        """The branches of this visit that ``other`` did not run in, outermost first."""
        mine = {b for _, b in other.branches}
        return [(g, b) for g, b in self.branches if b not in mine]


class RoutingGraph:
    """Decision points and the routes between them, aggregated over many runs.

    Build one with :meth:`add` (a stored trace and its run's status) or
    :meth:`from_store`, then read :attr:`points`, :meth:`to_dict` or :meth:`to_mermaid`.
    """

    def __init__(self, flow: str | None = None) -> None:
        self.flow = flow
        self.runs = 0
        self.statuses: Counter[str] = Counter()
        self.points: dict[str, DecisionPoint] = {}
        self.starts: Counter[str] = Counter()

    @classmethod
    async def from_store(
        cls, store: Store, flow: str | None = None, *, limit: int | None = None
    ) -> RoutingGraph:
        """Aggregate the stored traces of every run of ``flow`` (of every flow when ``None``)."""
        graph = cls(flow)
        for run in await store.list_runs(flow=flow, limit=limit):
            trace = await store.load_trace(run.run_id)
            if trace is None:
                continue
            # Only a resumed run can have failures its final trace no longer shows.
            resumed = run.resumes or trace.get("earlier")
            earlier = await _earlier_failures(store, run.run_id) if resumed else []
            graph.add(trace, run.status, earlier=earlier)
        return graph

    def add(
        self,
        trace: Mapping[str, Any],
        status: str,
        *,
        earlier: Sequence[EarlierFailure] = (),
    ) -> None:
        """Add one run's stored trace (``Trace.to_dict()``) that ended in ``status``.

        Args:
            trace: The run's stored trace.
            status: The run's status.
            earlier: The run's journaled decision failures, oldest first (a resumed run's
                failures are in its journal, not all in its final trace).
        """
        execution = Execution(trace)
        self.runs += 1
        self.statuses[status] += 1
        shown = _shown_failures(earlier, execution)
        journaled = {key: earlier[i] for key, i in shown.items()}
        visits = [
            self._visit(n, execution, journaled.get(str(n.get("key"))))
            for n in execution.find("decision")
        ]
        visits.sort(key=lambda v: v.id)
        reached: set[int] = set()
        for i, visit in enumerate(visits):
            after = _successors(visit, visits[i + 1 :])
            reached.update(v.id for v in after)
            point = self.points[visit.point]
            routes = point.next_failed if visit.failed else point.next
            for target in [v.point for v in after] or [f"{END}{status}"]:
                routes[(visit.outcome, target)] += 1
        for visit in visits:
            if visit.id not in reached:
                self.starts[visit.point] += 1
        if not visits:
            self.starts[f"{END}{status}"] += 1
        replaced = [f for i, f in enumerate(earlier) if shown.get(f.key) != i]
        if replaced:
            self._add_earlier(replaced, executions(trace)[::-1])

    def _add_earlier(
        self, failures: Sequence[EarlierFailure], latest_first: Sequence[Execution]
    ) -> None:
        """Count failures a resume replaced, each at its decision in the latest execution."""
        for failure in failures:
            found = _locate(failure.key, latest_first)
            if found is None:
                continue  # no stored execution reached this decision
            node, execution = found
            point = self._point(node, execution.ancestors(node), execution)
            point.visits += 1
            for name in failure.options or data_of(node).get("options", []):
                point.option(str(name)).offered += 1
            point.errors += 1
            point.error_kinds[failure.kind] += 1
            point.error_attempts.append(failure.attempts)
            point.next_failed[(DECISION_ERROR, RESUMED)] += 1

    def _visit(
        self, node: StoredNode, execution: Execution, journaled: EarlierFailure | None
    ) -> _Visit:
        chain = execution.ancestors(node)
        point = self._point(node, chain, execution)
        failed, outcome = _record(point, node, journaled)
        branches = tuple(
            (group["id"], a["id"])
            for a in reversed(chain)
            if (group := _fan_out(a, execution)) is not None
        )
        return _Visit(node["id"], point.key, outcome, failed, branches)

    def _point(
        self, node: StoredNode, chain: Sequence[StoredNode], execution: Execution
    ) -> DecisionPoint:
        """Return the point of a decision node (``chain``: its ancestors), made on first sight."""
        key = _point_key(node, chain, execution)
        point = self.points.get(key)
        if point is None:
            frame = next((a["name"] for a in chain if a.get("kind") == "frame"), "flow")
            index = int(_segment(node).rpartition(":")[2] or 0)
            named = str(node.get("name") or "")
            point = self.points[key] = DecisionPoint(
                key=key, frame=frame, index=index, name="" if named == "decision" else named
            )
        return point

    # -- reading -------------------------------------------------------------------------------

    def labels(self) -> dict[str, str]:
        """Return a short, unique, readable label per decision point.

        A named decision (``decision.make(..., name="classify")``) is ``frame/name``
        (``moderate/classify``), whatever else the graph holds, so its label stays the same
        from graph to graph. An unnamed one is its frame, with the decision's index when the
        frame holds several (``moderate #1``); a name given at several places of one frame
        adds the index too. Points that still share a label (decisions of concurrent
        branches) add their first options.
        """
        per_frame = Counter(p.frame for p in self.points.values() if not p.name)
        # A name given to decisions at other places of one frame: their indices tell them
        # apart (concurrent branches have one index, and their options do).
        indices: dict[tuple[str, str], set[int]] = {}
        for p in self.points.values():
            if p.name:
                indices.setdefault((p.frame, p.name), set()).add(p.index)
        bases = {key: _base_label(p, per_frame, indices) for key, p in self.points.items()}
        twins = Counter(bases.values())
        labels: dict[str, str] = {}
        for key, point in self.points.items():
            label = bases[key]
            if twins[label] > 1 and point.options:
                names = list(point.options)
                label += f" [{', '.join(names[:3])}{', …' if len(names) > 3 else ''}]"
            while label in labels.values():
                label += "'"
            labels[key] = label
        return labels

    def to_dict(self) -> dict[str, Any]:
        """Return the graph as JSON-ready data."""
        labels = self.labels()
        return {
            "flow": self.flow,
            "runs": self.runs,
            "statuses": dict(self.statuses),
            "starts": dict(self.starts),
            "points": [point_dict(p, labels[k]) for k, p in self.points.items()],
        }

    def to_mermaid(self, *, direction: str = "TD") -> str:
        """Return the graph as a Mermaid flowchart."""
        return render(self, direction=direction)


def _base_label(
    point: DecisionPoint, per_frame: Counter[str], indices: Mapping[tuple[str, str], set[int]]
) -> str:
    if point.name:
        label = f"{point.frame}/{point.name}"
        return label if len(indices[(point.frame, point.name)]) == 1 else f"{label} #{point.index}"
    return point.frame if per_frame[point.frame] == 1 else f"{point.frame} #{point.index}"


async def _earlier_failures(store: Store, run_id: str) -> list[EarlierFailure]:
    records = await store.load_journal(run_id)
    return [
        EarlierFailure(
            r.key,
            str(r.data.get("kind", "unknown")),
            int(r.data.get("attempts", 1)),
            tuple(str(o) for o in r.data.get("options") or ()),
        )
        for r in records
        if r.kind == "decision_failed" and isinstance(r.data, dict)
    ]


def _shown_failures(failures: Sequence[EarlierFailure], execution: Execution) -> dict[str, int]:
    """Return, per decision key, the index of the journaled failure the final trace shows.

    A decision that ends in a ``DecisionError`` in the final trace (failed live, or a
    caught failure replayed) shows its last journaled failure; the ones before it were
    replaced by resumes.
    """
    failed = {
        str(n.get("key"))
        for n in execution.find("decision")
        if data_of(n).get("error") == DECISION_ERROR
    }
    last = {f.key: i for i, f in enumerate(failures)}
    return {key: i for key, i in last.items() if key in failed}


def _locate(key: str, latest_first: Sequence[Execution]) -> tuple[StoredNode, Execution] | None:
    """Find the decision node ``key`` in the latest execution that reached it."""
    for execution in latest_first:
        for node in execution.find("decision"):
            if node.get("key") == key:
                return node, execution
    return None


def _segment(node: StoredNode) -> str:
    return _GENERATION.sub("", str(node.get("key", "")).rpartition("/")[2])


def _fan_out(node: StoredNode, execution: Execution) -> StoredNode | None:
    """Return the group of concurrent branches ``node`` is one branch of, if it is one."""
    parent = execution.parent(node)
    if node.get("kind") == "branch" and parent is not None and parent.get("kind") == "branch":
        return parent
    return None


def _point_key(node: StoredNode, chain: Sequence[StoredNode], execution: Execution) -> str:
    # The run root is dropped (it names the run, not the code); branch indices fold into *.
    segments = [
        "*" if _fan_out(a, execution) is not None else _segment(a)
        for a in reversed(chain)
        if a.get("parent_id") is not None
    ]
    key = "/".join([*segments, _segment(node)])
    if "*" not in segments:
        return key
    # The branches of a map run one function, those of a gather may each run other code:
    # folded branches share a point only when their decisions offer the same options.
    options = sorted(str(o) for o in data_of(node).get("options", []))
    return f"{key} [{', '.join(options)}]"


def _record(
    point: DecisionPoint, node: StoredNode, journaled: EarlierFailure | None
) -> tuple[bool, str]:
    """Count one visit on its point; return whether it failed and its outcome.

    The outcome is the picked option, or how the visit failed. ``journaled`` is the
    journaled failure the node shows, which fills in what a replayed failure lacks.
    """
    data = data_of(node)
    point.visits += 1
    for name in data.get("options", []):
        point.option(str(name)).offered += 1
    pick = data.get("pick")
    if node.get("status") == "ok" and isinstance(pick, str):
        attempts = int(data.get("attempts", 1))
        stats = point.option(pick)
        stats.picked += 1
        stats.attempts.append(attempts)
        stats.actors.append(str(data.get("actor") or _actor(attempts)))
        return False, pick
    error = str(data.get("error", node.get("status", "unfinished")))
    if error != DECISION_ERROR:
        point.other[error] += 1
        return True, error
    if journaled is None:
        journaled = EarlierFailure(str(node.get("key")), "unknown")
    failures = data.get("failures") or []
    point.errors += 1
    point.error_attempts.append(int(data.get("attempts", journaled.attempts)))
    point.error_kinds[str(failures[-1]) if failures else journaled.kind] += 1
    return True, DECISION_ERROR


def _actor(attempts: int) -> str:
    """Who made a pick, for traces written before picks recorded it."""
    return "human" if attempts == 0 else "model" if attempts == 1 else "repick"


def _follows(later: _Visit, earlier: _Visit) -> bool:
    """Whether ``later`` can be the decision a run took after ``earlier``.

    Not when ``later`` sits in a concurrent branch that was already open when ``earlier``
    ran (a sibling branch): every branch of ``later`` that ``earlier`` is not in must have
    been opened after it (under it, or by a later fan-out).
    """
    return all(b > earlier.id for _, b in later.new_branches(earlier))


def _successors(visit: _Visit, later: Sequence[_Visit]) -> list[_Visit]:
    """Return the decisions a run took right after ``visit``: one, or one per fanned-out branch."""
    candidates = [v for v in later if _follows(v, visit)]
    if not candidates:
        return []
    fanned = candidates[0].new_branches(visit)
    if not fanned:
        return candidates[:1]
    group = fanned[0][0]
    firsts: dict[int, _Visit] = {}
    for v in candidates:
        new = v.new_branches(visit)
        if new and new[0][0] == group:
            firsts.setdefault(new[0][1], v)
    return list(firsts.values())
