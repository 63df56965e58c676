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
    from engine._base._trace import Node

__all__ = [
    "RUNTIME_PARAMS",
    "ambient_runtime",
    "current_node",
    "current_run_id",
    "current_runtime",
    "idempotency_key",
    "using_node",
]

#: Parameter names that receive the runtime instead of a value from the model.
RUNTIME_PARAMS: frozenset[str] = frozenset({"runtime", "exec_runtime", "review_runtime"})

current_runtime: ContextVar[object | None] = ContextVar("engine_runtime", default=None)
current_node: ContextVar[Node | None] = ContextVar("engine_node", default=None)
current_run_id: ContextVar[str | None] = ContextVar("engine_run_id", default=None)


def idempotency_key() -> str:
    """Return a key that names the current step of the current run, stable across replays.

    A step may run again when its process died after the step's side effect but before its
    result was journaled, or when its step policy tries it again. Key the side effect by
    this value (a unique column, an idempotency header) and the second attempt lands
    nowhere: it is the same on every attempt (the retry nodes of the trace are left out).

    Raises:
        RuntimeError: Called outside a durable run.
    """
    run_id = current_run_id.get()
    node = current_node.get()
    if run_id is None or node is None:
        raise RuntimeError("idempotency_key() is only available inside a run of Engine")
    path = "/".join(part for part in node.key.split("/") if not part.startswith("retry:"))
    return f"{run_id}:{path}"


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
