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
from collections.abc import Iterator
from typing import Any, Literal

__all__ = ["Node", "NodeKind", "Trace", "summarise"]

NodeKind = Literal[
    "run", "frame", "model_call", "decision", "repick", "tool_call", "step", "retry", "branch"
]

_SUMMARY_CHARS = 200


def summarise(value: object, limit: int = _SUMMARY_CHARS) -> object:
    """Return a JSON-friendly, size-bounded summary of ``value`` for the trace."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


class Node:
    """One node of a run's trace."""

    # A plain slotted class with a hand-written __init__: nodes are made on the hot path of
    # every decision, and default factories cost a call each.
    __slots__ = (
        "_counters",
        "_t0",
        "data",
        "duration_s",
        "ended_at",
        "id",
        "key",
        "kind",
        "name",
        "parent_id",
        "started_at",
        "status",
        "trace",
        "usage",
    )

    def __init__(
        self,
        id: int,
        kind: NodeKind,
        name: str,
        key: str,
        parent_id: int | None,
        trace: Trace,
        *,
        data: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.kind = kind
        self.name = name
        self.key = key
        self.parent_id = parent_id
        self.trace = trace
        self.started_at = time.time()
        self._t0 = time.perf_counter()
        self.ended_at: float | None = None
        self.duration_s: float | None = None
        self.status = "running"
        self.data: dict[str, Any] = data if data is not None else {}
        self.usage: dict[str, int] = {}
        self._counters: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"Node({self.kind} {self.name!r} key={self.key!r} status={self.status!r})"

    def child(self, kind: NodeKind, name: str, **data: Any) -> Node:
        """Open a child node; its key is this node's key plus a per-label counter."""
        return self.trace.open(kind, name, parent=self, **data)

    def next_key(self, label: str) -> str:
        """Return the next deterministic key for a child labelled ``label``."""
        n = self._counters.get(label, 0)
        self._counters[label] = n + 1
        return f"{self.key}/{label}:{n}" if self.key else f"{label}:{n}"

    def close(self, status: str = "ok", **data: Any) -> None:
        """Close the node with a status, recording its duration and any final data."""
        self.duration_s = time.perf_counter() - self._t0
        self.ended_at = self.started_at + self.duration_s
        self.status = status
        if data:
            self.data.update(data)

    def add_usage(self, input_tokens: int, output_tokens: int) -> None:
        """Add token usage to this node."""
        self.usage["input_tokens"] = self.usage.get("input_tokens", 0) + input_tokens
        self.usage["output_tokens"] = self.usage.get("output_tokens", 0) + output_tokens

    def to_dict(self) -> dict[str, Any]:
        """Return the node as a JSON-ready dict."""
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "kind": self.kind,
            "name": self.name,
            "key": self.key,
            "status": self.status,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "duration_s": self.duration_s,
            "usage": dict(self.usage),
            "data": {k: summarise(v) if k not in _KEEP else v for k, v in self.data.items()},
        }


# Data kept whole in exports: small lists of names and kinds that aggregate into graphs, and
# the reply heads (already cut to a bounded length when recorded).
_KEEP = frozenset({"options", "failures", "pick", "attempts", "enforcement", "layer", "replies"})


class Trace:
    """The nodes of one run, in the order they were opened."""

    __slots__ = ("_ids", "nodes", "root_key")

    def __init__(self, root_key: str = "") -> None:
        self.nodes: list[Node] = []
        # next() on a count is atomic, so frames of plain-def options opened on worker
        # threads never share an id with nodes opened on the event loop.
        self._ids = itertools.count()
        self.root_key = root_key

    def open(self, kind: NodeKind, name: str, *, parent: Node | None, **data: Any) -> Node:
        """Open a node under ``parent`` (``None`` for a root)."""
        label = kind if kind in _KEYED_BY_KIND else name
        if parent is None:
            key = f"{self.root_key}/{label}" if self.root_key else label
            parent_id = None
        else:
            key = parent.next_key(label)
            parent_id = parent.id
        node = Node(next(self._ids), kind, name, key, parent_id, self, data=data)
        self.nodes.append(node)
        return node

    def roots(self) -> Iterator[Node]:
        """Yield the nodes that have no parent."""
        return (n for n in self.nodes if n.parent_id is None)

    def children(self, node: Node) -> list[Node]:
        """Return the direct children of ``node``, in opening order."""
        return [n for n in self.nodes if n.parent_id == node.id]

    def find(self, kind: NodeKind) -> list[Node]:
        """Return every node of one kind, in opening order."""
        return [n for n in self.nodes if n.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        """Return the whole trace as a JSON-ready dict."""
        return {"nodes": [n.to_dict() for n in self.nodes]}

    def to_json(self, *, indent: int | None = None) -> str:
        """Return the whole trace as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def render_tree(self) -> str:
        """Return the trace as an indented text tree, one node a line."""
        by_parent: dict[int | None, list[Node]] = {}
        for n in self.nodes:
            by_parent.setdefault(n.parent_id, []).append(n)
        lines: list[str] = []
        stack = [(n, 0) for n in reversed(by_parent.get(None, []))]
        while stack:
            node, depth = stack.pop()
            ms = f" {node.duration_s * 1000:.1f}ms" if node.duration_s is not None else ""
            lines.append(f"{'  ' * depth}{node.kind} {node.name} [{node.status}]{ms}")
            stack.extend((c, depth + 1) for c in reversed(by_parent.get(node.id, [])))
        return "\n".join(lines)


# Kinds whose keys use the kind as label (many per parent), not the node's name.
_KEYED_BY_KIND = frozenset({"run", "model_call", "decision", "repick", "retry"})
