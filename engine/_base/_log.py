"""The engine's logger: structlog events, quiet unless the ``engine`` logger is enabled.

A library must not print by default. Each event first asks the standard ``logging`` logger
named ``engine`` whether its level is enabled (a cached, cheap check), and only then goes
to structlog, which formats it as the application configured (the CLI configures console
or JSON output). So ``logging.getLogger("engine").setLevel(logging.INFO)`` turns events on.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

__all__ = ["log"]


class _EngineLog:
    """``debug``/``info``/``warning`` that cost one level check when disabled."""

    __slots__ = ("_gate",)

    def __init__(self) -> None:
        self._gate = logging.getLogger("engine")

    def _emit(self, level: int, event: str, data: dict[str, Any]) -> None:
        if self._gate.isEnabledFor(level):
            structlog.get_logger("engine").log(level, event, **data)

    def debug(self, event: str, **data: Any) -> None:
        """Log a debug event."""
        self._emit(logging.DEBUG, event, data)

    def info(self, event: str, **data: Any) -> None:
        """Log an info event."""
        self._emit(logging.INFO, event, data)

    def warning(self, event: str, **data: Any) -> None:
        """Log a warning event."""
        self._emit(logging.WARNING, event, data)


log = _EngineLog()
