"""Walking a stored trace: its executions, oldest first, and each one's nodes as a tree.

A stored trace is what :meth:`Trace.to_dict` writes and a store keeps
(:class:`~engine._base.StoredTrace`): the last execution's ``nodes`` and, for a resumed
run, the executions before it under ``earlier``. The routing graph, the trace tree (and
``engine show``, which draws it) and the OpenTelemetry export all walk it here.

Read back from a store, a trace may be older or hand-made, so any key may be missing: the
walker reads each with a default (no ``nodes``: none; no ``parent_id``: a root; no ``id``:
no children) and stops at a loop of parent links instead of following it for ever. The
readers read a node's own keys with ``.get`` for the same reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from engine._base import StoredNode

__all__ = ["Execution", "data_of", "executions"]


def executions(trace: Mapping[str, Any]) -> list[Execution]:
    """Return the executions of a stored trace, oldest first: the run's last one is last."""
    return [Execution(stored) for stored in [*(trace.get("earlier") or ()), trace]]


def data_of(node: StoredNode) -> Mapping[str, Any]:
    """Return a node's ``data``: empty when it has none (or something that is not a dict)."""
    data = node.get("data")
    return data if isinstance(data, Mapping) else {}


class Execution:
    """The nodes of one execution of a run, with their parent and child links.

    Attributes:
        nodes: The nodes in the order they were opened (the order they are stored in).
    """

    __slots__ = ("_by_id", "_children", "nodes")

    def __init__(self, stored: Mapping[str, Any]) -> None:
        self.nodes: Sequence[StoredNode] = stored.get("nodes") or []
        # Both indexes are built on first use: each reader needs one of them.
        self._by_id: dict[Any, StoredNode] | None = None
        self._children: dict[Any, list[StoredNode]] | None = None

    def find(self, kind: str) -> list[StoredNode]:
        """Return the nodes of one kind, in opening order."""
        return [n for n in self.nodes if n.get("kind") == kind]

    def in_start_order(self) -> list[StoredNode]:
        """Return the nodes in the order they started; ties in the order of their ids."""
        return sorted(self.nodes, key=lambda n: (n.get("started_at") or 0.0, n.get("id", 0)))

    def parent(self, node: StoredNode) -> StoredNode | None:
        """Return the parent of ``node``; ``None`` for a root, or a parent this execution lacks."""
        by_id = self._by_id
        if by_id is None:
            # A later node with the same id wins, as in a dict built from the list.
            by_id = self._by_id = {n["id"]: n for n in self.nodes if n.get("id") is not None}
        return by_id.get(node.get("parent_id"))

    def ancestors(self, node: StoredNode) -> list[StoredNode]:
        """Return the ancestors of ``node``, its parent first, up to the root this execution has."""
        chain: list[StoredNode] = []
        seen = {id(node)}
        parent = self.parent(node)
        while parent is not None and id(parent) not in seen:
            seen.add(id(parent))
            chain.append(parent)
            parent = self.parent(parent)
        return chain

    def children(self, node: StoredNode | None) -> list[StoredNode]:
        """Return the children of ``node`` (of ``None``: the roots), in opening order."""
        children = self._children
        if children is None:
            children = self._children = {}
            for n in self.nodes:
                children.setdefault(n.get("parent_id"), []).append(n)
        if node is None:
            return children.get(None, [])
        node_id = node.get("id")
        return [] if node_id is None else children.get(node_id, [])

    def walk(self) -> Iterator[tuple[StoredNode, int]]:
        """Yield each node under a root with its depth (0 for a root), depth first, in order.

        Siblings come in the order they were opened. A node whose parent this execution lacks
        is under no root, so it is not yielded.
        """
        path: list[Any] = []  # the ids of the next node's ancestors, outermost first
        stack = [(root, 0) for root in reversed(self.children(None))]
        while stack:
            node, depth = stack.pop()
            del path[depth:]
            yield node, depth
            node_id = node.get("id")
            if node_id is None or node_id in path:
                continue  # no children to look up, or a loop of parent links
            path.append(node_id)
            stack.extend((child, depth + 1) for child in reversed(self.children(node)))
