"""Cancel scopes and locks for the per-transition path: anyio's own, without a backend lookup.

``anyio.CancelScope(...)`` finds the running backend on every call, which costs about as much
as the scope itself. On asyncio the class it makes is found once and made directly: the same
scope, the same semantics. On any other event loop it is anyio's call as usual.
"""

from __future__ import annotations

import asyncio
import math

import anyio

__all__ = ["cancel_scope", "fast_lock", "nothing_else_ready"]

_ASYNCIO_SCOPE: type[anyio.CancelScope] | None = None
_ASYNCIO_LOCK: type[anyio.Lock] | None = None


def cancel_scope(*, deadline: float = math.inf, shield: bool = False) -> anyio.CancelScope:
    """Return ``anyio.CancelScope(deadline=deadline, shield=shield)`` for the running loop."""
    global _ASYNCIO_SCOPE
    if asyncio._get_running_loop() is not None:
        if _ASYNCIO_SCOPE is None:
            _ASYNCIO_SCOPE = type(anyio.CancelScope())
        return _ASYNCIO_SCOPE(deadline=deadline, shield=shield)
    return anyio.CancelScope(deadline=deadline, shield=shield)


def fast_lock() -> anyio.Lock:
    """Return ``anyio.Lock(fast_acquire=True)`` for the running loop, as :func:`cancel_scope`."""
    global _ASYNCIO_LOCK
    if asyncio._get_running_loop() is not None:
        if _ASYNCIO_LOCK is None:
            _ASYNCIO_LOCK = type(anyio.Lock(fast_acquire=True))
        return _ASYNCIO_LOCK(fast_acquire=True)
    return anyio.Lock(fast_acquire=True)


def nothing_else_ready() -> bool:
    """Whether nothing else on the running asyncio loop is ready to run or due now, so that
    yielding to it would only come straight back (``False`` wherever that cannot be told:
    another event loop, or an asyncio loop that keeps its queues otherwise)."""
    loop = asyncio._get_running_loop()
    if loop is None:
        return False
    ready = getattr(loop, "_ready", None)
    scheduled = getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None or ready:
        return False
    return not scheduled or bool(scheduled[0].when() > loop.time())
