"""What the routing graph counts: per decision point, its visits, options, failures and routes.

The aggregated model only: :mod:`._graph` fills it from stored traces and journals,
:mod:`._mermaid` draws it. A route's target is another point's key, ``end:<status>`` (the
run ended there) or ``resumed`` (a failure a resume moved past).
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DECISION_ERROR",
    "END",
    "RESUMED",
    "DecisionPoint",
    "EarlierFailure",
    "OptionStats",
    "point_dict",
]

#: The outcome of a visit that failed with a ``DecisionError``.
DECISION_ERROR = "DecisionError"
#: The prefix of a route's target that is the run's final status.
END = "end:"
#: The target of a route after a failure a resume moved past.
RESUMED = "resumed"


@dataclass(slots=True)
class OptionStats:
    """How one option of a decision point fared: offered, picked, attempts per pick."""

    name: str
    offered: int = 0
    picked: int = 0
    attempts: list[int] = field(default_factory=list)
    #: Who made each pick, in the order of :attr:`attempts`: ``model``, ``repick``, ``retry``
    #: or ``human``.
    actors: list[str] = field(default_factory=list)

    @property
    def median_attempts(self) -> float | None:
        """The median number of attempts the picks of this option took (``None`` if unpicked)."""
        return statistics.median(self.attempts) if self.attempts else None

    @property
    def repicked(self) -> int:
        """How many picks of this option needed a re-pick (more than one attempt)."""
        return sum(1 for a in self.attempts if a > 1)

    @property
    def by_human(self) -> int:
        """How many picks of this option were a person's (``resume(pick=...)``)."""
        return self.actors.count("human")


@dataclass(slots=True)
class DecisionPoint:
    """One decision of the flow's code, aggregated over every visit of every run."""

    key: str
    frame: str
    index: int
    label: str = ""
    #: The decision's ``name=``; empty when it has none (its trace node is "decision").
    name: str = ""
    visits: int = 0
    options: dict[str, OptionStats] = field(default_factory=dict)
    errors: int = 0
    error_kinds: Counter[str] = field(default_factory=Counter)
    error_attempts: list[int] = field(default_factory=list)
    other: Counter[str] = field(default_factory=Counter)
    #: (picked option, next decision point key or ``end:<status>``) -> count.
    next: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: (how a visit failed: ``DecisionError`` or another outcome, next decision point key,
    #: ``end:<status>`` or ``resumed``) -> count.
    next_failed: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def error_rate(self) -> float:
        """The share of visits that ended in a ``DecisionError``."""
        return self.errors / self.visits if self.visits else 0.0

    def option(self, name: str) -> OptionStats:
        """Return the stats of one option, creating them on first sight."""
        stats = self.options.get(name)
        if stats is None:
            stats = self.options[name] = OptionStats(name)
        return stats


@dataclass(frozen=True, slots=True)
class EarlierFailure:
    """A journaled ``DecisionError``: the decision's key, kind, attempts and options."""

    key: str
    kind: str
    attempts: int = 1
    options: tuple[str, ...] = ()


def point_dict(point: DecisionPoint, label: str) -> dict[str, Any]:
    """Return one decision point as JSON-ready data, under its ``label``."""
    return {
        "key": point.key,
        "label": label,
        "name": point.name or None,
        "visits": point.visits,
        "decision_errors": point.errors,
        "error_rate": point.error_rate,
        "error_kinds": dict(point.error_kinds),
        "other_outcomes": dict(point.other),
        "options": [
            {
                "name": o.name,
                "offered": o.offered,
                "picked": o.picked,
                "median_attempts": o.median_attempts,
                "repicked": o.repicked,
                "by_human": o.by_human,
            }
            for o in point.options.values()
        ],
        "next": [
            {"outcome": outcome, "failed": failed, "to": to, "count": n}
            for failed, routes in ((False, point.next), (True, point.next_failed))
            for (outcome, to), n in routes.items()
        ],
    }
