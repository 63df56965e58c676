"""One retry at some layer, as the retry layers report it to ``on_retry`` callbacks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["OnRetry", "RetryEvent", "RetryLayer"]

RetryLayer = Literal["transport", "parse", "decision", "step", "run"]


@dataclass(frozen=True, slots=True)
class RetryEvent:
    """One retry at some layer, as passed to ``on_retry`` callbacks."""

    layer: RetryLayer
    attempt: int
    kind: str
    message: str
    key: str


#: A callback told of every retry (its return value is ignored).
OnRetry = Callable[[RetryEvent], object]
