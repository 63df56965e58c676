"""One ``timeout_s`` budget over a block of model calls: checked, and turned into an error."""

from __future__ import annotations

import asyncio
from typing import Literal

import anyio

from engine._base import DeadlineExceeded, cancel_scope

__all__ = ["check_timeout", "deadline"]


def check_timeout(timeout_s: float) -> None:
    """Refuse a ``timeout_s`` that is not a number of seconds > 0 (``None`` is no deadline)."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise ValueError(
            f"timeout_s must be a number of seconds > 0, or None for no deadline, got {timeout_s!r}"
        )


class deadline:
    """One ``timeout_s`` budget over a block; the expiry becomes :class:`DeadlineExceeded`."""

    __slots__ = ("_scope", "timeout_s", "where")

    def __init__(self, timeout_s: float | None, where: str) -> None:
        self.timeout_s = timeout_s
        self.where = where
        self._scope: anyio.CancelScope | None = None

    def __enter__(self) -> None:
        if self.timeout_s is not None:
            # anyio.move_on_after(timeout_s), made without its two backend lookups: on
            # asyncio the clock is the loop's (anyio's asyncio backend reads it so).
            loop = asyncio._get_running_loop()
            now = loop.time() if loop is not None else anyio.current_time()
            self._scope = cancel_scope(deadline=now + self.timeout_s)
            self._scope.__enter__()

    def __exit__(self, *exc: object) -> Literal[False]:
        if self._scope is None:
            return False
        # The scope swallows only the cancellation it caught itself, which becomes ours.
        self._scope.__exit__(*exc)  # type: ignore[arg-type]
        if self._scope.cancelled_caught:
            assert self.timeout_s is not None
            raise DeadlineExceeded(self.timeout_s, where=self.where) from None
        return False
