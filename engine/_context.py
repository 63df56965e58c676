"""Ambient, per-task state: the runtime an agentic function runs with, and the current trace node.

Both live in ContextVars, so concurrent runs on one event loop never see each other's
values. Everything that sets one does so with a token and resets it in ``finally``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine._trace import Node

__all__ = ["RUNTIME_PARAMS", "ambient_runtime", "current_node", "current_runtime", "using_node"]

#: Parameter names that receive the runtime instead of a value from the model.
RUNTIME_PARAMS: frozenset[str] = frozenset({"runtime", "exec_runtime", "review_runtime"})

current_runtime: ContextVar[object | None] = ContextVar("engine_runtime", default=None)
current_node: ContextVar[Node | None] = ContextVar("engine_node", default=None)


@contextmanager
def ambient_runtime(runtime: object | None) -> Iterator[None]:
    """Make ``runtime`` the ambient runtime for the block (``None`` leaves it unchanged)."""
    if runtime is None:
        yield
        return
    token = current_runtime.set(runtime)
    try:
        yield
    finally:
        current_runtime.reset(token)


@contextmanager
def using_node(node: Node) -> Iterator[Node]:
    """Make ``node`` the parent of every trace node opened in the block."""
    token = current_node.set(node)
    try:
        yield node
    finally:
        current_node.reset(token)
