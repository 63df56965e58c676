"""The type aliases every floor shares: a flow, a clock and a sleep."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Clock", "Flow", "Sleep"]

#: A flow: an agentic function (or any callable) a run executes.
Flow = Callable[..., Any]
#: A monotonic clock, in seconds.
Clock = Callable[[], float]
#: A sleep, injectable so tests never really wait.
Sleep = Callable[[float], Awaitable[None]]
