"""What a person is asked, and what they answer: the data of people in the loop.

A :class:`HumanAsk` says how a human decision is asked, a :data:`Question` is what is stored
with a waiting run, and an :class:`Approval` is a person's answer to the approval of a pick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["MODEL", "Approval", "ApprovalRule", "HumanAsk", "Question"]

#: ``on_deadline=MODEL``: once a human decision's deadline passed, the model picks.
MODEL: Final = "<model>"

Question = dict[str, Any]
#: ``approve=``: always (``True``), or when a predicate on the pick's arguments says so.
ApprovalRule = bool | Callable[[dict[str, Any]], object] | None


@dataclass(frozen=True, slots=True)
class HumanAsk:
    """How a human decision is asked: its prompt, and what its deadline does."""

    prompt: str
    deadline_s: float | None = None
    #: An option name, a pick ``{"call": ..., "args": {...}}``, or :data:`MODEL`.
    on_deadline: str | Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Approval:
    """A person's answer to an approval: ``approve`` (with ``args`` when edited) or ``reject``."""

    verdict: Literal["approve", "edit", "reject"]
    args: Mapping[str, Any] | None = None
    reason: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Approval:
        """Read an approval journaled as ``{"verdict": ..., "args": ..., "reason": ...}``."""
        return cls(data["verdict"], data.get("args"), str(data.get("reason") or ""))

    def to_dict(self) -> dict[str, Any]:
        """The approval as journaled."""
        data: dict[str, Any] = {"verdict": self.verdict}
        if self.args is not None:
            data["args"] = dict(self.args)
        if self.reason:
            data["reason"] = self.reason
        return data
