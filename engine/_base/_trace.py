"""The in-memory trace: a DAG of nodes with parent links, timings, inputs, outputs and usage.

A :class:`Trace` belongs to one run (or to one runtime outside any run). Every node has a
deterministic ``key``: its parent's key, a slash, its own label and a per-parent counter
(``route/decision:0/model:1``). Replay finds journal records by that key, so the key never
depends on wall-clock time or scheduling order inside one parent.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict, cast

from engine._base._errors import WaitingForAnswer
from engine._base._summary import export_node, export_nodes

__all__ = [
    "ExportedTrace",
    "Node",
    "NodeKind",
    "StoredExecution",
    "StoredNode",
    "StoredTrace",
    "Trace",
    "failed_at",
]

NodeKind = Literal[
    "run", "frame", "model_call", "decision", "repick", "tool_call", "step", "retry", "branch"
]

_perf_counter = time.perf_counter


class StoredNode(TypedDict):
    """One node of a stored trace, as :meth:`Node.to_dict` writes it.

    ``started_at`` and ``ended_at`` are seconds since the epoch (``ended_at`` and
    ``duration_s`` are ``None`` for a node still open when the trace was stored); ``usage``
    holds ``input_tokens`` and ``output_tokens`` when the node spent any; ``data`` holds
    the node's inputs and outputs, summarised. A trace read back from a store may be older
    or hand-made, so its readers take every key as possibly missing.
    """

    id: int
    parent_id: int | None
    kind: NodeKind
    name: str
    key: str
    status: str
    started_at: float
    ended_at: float | None
    duration_s: float | None
    usage: dict[str, int]
    data: dict[str, Any]


class StoredExecution(TypedDict):
    """The nodes of one execution of a run, in the order they were opened."""

    nodes: list[StoredNode]


class StoredTrace(StoredExecution):
    """A run's stored trace, as :meth:`Trace.to_dict` writes it.

    ``nodes`` are the last execution's; ``earlier``, only in the trace of a resumed run,
    holds the executions before it, oldest first.
    """

    earlier: NotRequired[list[StoredExecution]]


class ExportedTrace(dict[str, Any]):
    """A trace exactly as :meth:`Trace.export` made it, for a store to encode.

    It holds only what the export writes: node fields of numbers, text and ``None``, and
    data made JSON-safe on the way out (:func:`~engine._base._json.json_safe` writes a float
    that is not finite as its ``repr``), so no float in it is ``NaN`` or an infinity. A
    store may therefore encode it with an encoder that does not refuse those itself (see
    :func:`engine.store._checks.trace_json`); any other dict is checked the long way. (An
    enum member, which ``json_safe`` leaves alone, is written by its value: one whose value
    is such a float would be written ``null``.)
    """

    __slots__ = ()


class Node:
    """One node of a run's trace."""

    # A plain slotted class with a hand-written __init__: nodes are made on the hot path of
    # every decision. Wall-clock times derive from the trace's anchor and one perf_counter
    # reading; the usage and the key counters are made on first use.
    __slots__ = (
        "_counters",
        "_t0",
        "_usage",
        "data",
        "duration_s",
        "id",
        "key",
        "kind",
        "name",
        "parent_id",
        "status",
        "trace",
    )

    def __init__(
        self,
        id: int,
        kind: NodeKind,
        name: str,
        key: str,
        parent_id: int | None,
        trace: Trace,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.kind = kind
        self.name = name
        self.key = key
        self.parent_id = parent_id
        self.trace = trace
        self._t0 = _perf_counter()
        self.duration_s: float | None = None
        self.status = "running"
        self.data: dict[str, Any] = data if data is not None else {}
        self._usage: dict[str, int] | None = None
        self._counters: dict[str, int] | None = None

    def __repr__(self) -> str:
        return f"Node({self.kind} {self.name!r} key={self.key!r} status={self.status!r})"

    @property
    def started_at(self) -> float:
        """When the node opened (seconds since the epoch)."""
        return self.trace.wall_at(self._t0)

    @property
    def ended_at(self) -> float | None:
        """When the node closed, or ``None`` while it runs."""
        if self.duration_s is None:
            return None
        return self.started_at + self.duration_s

    @property
    def usage(self) -> dict[str, int]:
        """Token usage recorded on this node (``input_tokens``, ``output_tokens``)."""
        if self._usage is None:
            self._usage = {}
        return self._usage

    def child(self, kind: NodeKind, name: str, **data: Any) -> Node:
        """Open a child node; its key is this node's key plus a per-label counter."""
        return self.open_child(kind, name, data)

    def open_child(self, kind: NodeKind, name: str, data: dict[str, Any]) -> Node:
        """Open a child node holding ``data`` (the dict itself, not a copy)."""
        label = kind if kind in _KEYED_BY_KIND else name
        counters = self._counters
        if counters is None:
            n = 0
            self._counters = {label: 1}
        else:
            n = counters.get(label, 0)
            counters[label] = n + 1
        key = f"{self.key}/{label}:{n}" if self.key else f"{label}:{n}"
        return _open(self.trace, kind, name, key, self.id, data)

    def close(self, status: str = "ok", **data: Any) -> None:
        """Close the node with a status, recording its duration and any final data."""
        self.duration_s = _perf_counter() - self._t0
        self.status = status
        if data:
            self.data.update(data)

    def fail(self, exc: BaseException) -> None:
        """Close the node as failed by ``exc``; the innermost node ``exc`` leaves marks it.

        The mark (see :func:`failed_at`) is how a run that fails knows the node it failed at.
        """
        waits = isinstance(exc, WaitingForAnswer)  # not a failure: it parks the run
        self.close("waiting" if waits else "error", error=type(exc).__name__)
        if isinstance(exc, Exception):
            exc.__dict__.setdefault(_FAILED_AT, self.key)

    def add_usage(self, input_tokens: int, output_tokens: int) -> None:
        """Add token usage to this node."""
        usage = self._usage
        if usage is None:  # the usual case: one call's usage on its own node
            self._usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
            return
        usage["input_tokens"] = usage.get("input_tokens", 0) + input_tokens
        usage["output_tokens"] = usage.get("output_tokens", 0) + output_tokens

    def to_dict(self) -> StoredNode:
        """Return the node as a JSON-ready dict.

        Its data is made JSON-safe (:func:`~engine._base._json.json_safe`): a reply head or an
        output holding a lone surrogate, say, is exported escaped, so the trace of a run is
        stored whatever its values held.
        """
        trace = self.trace
        return cast(StoredNode, export_node(self, trace._wall0, trace._t0))


_new = object.__new__


def _open(
    trace: Trace, kind: NodeKind, name: str, key: str, parent_id: int | None, data: dict[str, Any]
) -> Node:
    """Open a node of ``trace``: what ``Node(...)`` makes, without the class call."""
    node: Node = _new(Node)
    node.id = next(trace._ids)
    node.kind = kind
    node.name = name
    node.key = key
    node.parent_id = parent_id
    node.trace = trace
    node._t0 = _perf_counter()
    node.duration_s = None
    node.status = "running"
    node.data = data
    node._usage = None
    node._counters = None
    trace.nodes.append(node)
    return node


# The attribute under which an exception remembers the innermost node it failed.
_FAILED_AT = "__engine_failed_at__"


def failed_at(exc: BaseException) -> str | None:
    """Return (and forget) the key of the innermost node ``exc`` failed, if it left one.

    Forgetting it lets an exception object raised again elsewhere be marked afresh.
    """
    key = exc.__dict__.pop(_FAILED_AT, None)
    return key if isinstance(key, str) else None


class Trace:
    """The nodes of one run, in the order they were opened."""

    __slots__ = ("_ids", "_t0", "_wall0", "earlier", "nodes")

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        #: The exported traces of a run's earlier executions (before its resumes), oldest
        #: first: kept whole beside this one's nodes, so no attempt is lost to a resume.
        self.earlier: list[StoredExecution] = []
        # One wall-clock reading anchors every node's perf_counter reading.
        self._wall0 = time.time()
        self._t0 = _perf_counter()
        # next() on a count is atomic, so frames of plain-def options opened on worker
        # threads never share an id with nodes opened on the event loop.
        self._ids = itertools.count()

    def open(self, kind: NodeKind, name: str, *, parent: Node | None, **data: Any) -> Node:
        """Open a node under ``parent`` (``None`` for a root)."""
        if parent is not None:
            return parent.open_child(kind, name, data)
        return self.open_root(kind, name, data)

    def open_root(self, kind: NodeKind, name: str, data: dict[str, Any]) -> Node:
        """Open a root node holding ``data`` (the dict itself, not a copy)."""
        return _open(self, kind, name, kind if kind in _KEYED_BY_KIND else name, None, data)

    def wall_at(self, t: float) -> float:
        """Return the wall-clock time of a ``time.perf_counter()`` reading ``t``."""
        return self._wall0 + (t - self._t0)

    def children(self, node: Node) -> list[Node]:
        """Return the direct children of ``node``, in opening order."""
        return [n for n in self.nodes if n.parent_id == node.id]

    def find(self, kind: NodeKind) -> list[Node]:
        """Return every node of one kind, in opening order."""
        return [n for n in self.nodes if n.kind == kind]

    def to_dict(self) -> StoredTrace:
        """Return the whole trace as a JSON-ready dict.

        ``nodes`` are this execution's; ``earlier``, when the run was resumed, holds the
        traces of the executions before it (``{"nodes": [...]}`` each, oldest first).
        """
        wall0, t0 = self._wall0, self._t0
        nodes = cast(list[StoredNode], export_nodes(self.nodes, wall0, t0))
        exported: StoredTrace = {"nodes": nodes}
        if self.earlier:
            exported["earlier"] = self.earlier
        return exported

    def export(self) -> dict[str, Any]:
        """Return :meth:`to_dict` for a store to keep.

        A trace of one execution comes as an :class:`ExportedTrace`, which a store encodes
        on its fast path. With earlier executions (read back from a store, so not made
        here) it is a plain dict, checked in full.
        """
        exported = self.to_dict()
        if self.earlier:
            return dict(exported)
        return ExportedTrace(exported)

    def follow(self, stored: Mapping[str, Any] | None) -> None:
        """Keep ``stored``, the exported trace of the run so far, as earlier executions.

        It is read back from a store, so it is taken as it is (an older trace may lack keys).
        """
        if stored:
            self.earlier = [*stored.get("earlier", ()), {"nodes": stored.get("nodes", [])}]

    def to_json(self, *, indent: int | None = None) -> str:
        """Return the whole trace as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, default=str)


# Kinds whose keys use the kind as label (many per parent), not the node's name.
_KEYED_BY_KIND = frozenset({"run", "model_call", "decision", "repick", "retry"})
