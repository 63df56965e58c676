"""Where a batch stands: the counts a batch reports to its ``progress`` callback."""

from __future__ import annotations

from dataclasses import dataclass

from engine.models import add_cost
from engine.store import FINISHED, Run

__all__ = ["BatchProgress"]


@dataclass(slots=True)
class BatchProgress:
    """Where a batch stands: what started, what is in flight, how runs ended, what they cost.

    Attributes:
        started: Runs started (or found stored already, for an existing ``run_id``).
        in_flight: Runs started and not finished.
        completed: Runs that completed.
        waiting: Runs that wait for a person's answer (``engine answer``), not a failure.
        suspended: Runs suspended (a decision, a budget, an unavailable provider).
        failed: Runs that failed.
        cancelled: Runs cancelled (a timeout, a cancel, a shutdown).
        not_started: Inputs whose run could not start, handed to the batch's ``on_error``.
        tokens: Tokens spent by the finished runs.
        cost_usd: US dollars spent by the finished runs whose cost is known (``None``: none).
        model_calls: Model calls made by the finished runs.
        elapsed_s: Seconds since the batch started.
    """

    started: int = 0
    in_flight: int = 0
    completed: int = 0
    waiting: int = 0
    suspended: int = 0
    failed: int = 0
    cancelled: int = 0
    not_started: int = 0
    tokens: int = 0
    cost_usd: float | None = None
    model_calls: int = 0
    elapsed_s: float = 0.0

    @property
    def done(self) -> int:
        """Runs finished, whatever their status."""
        return self.completed + self.waiting + self.suspended + self.failed + self.cancelled

    def count(self, run: Run) -> None:
        """Count one finished run."""
        if run.status in FINISHED:
            setattr(self, run.status, getattr(self, run.status) + 1)
        self.tokens += run.usage.total_tokens
        self.cost_usd = add_cost(self.cost_usd, run.cost_usd)
        self.model_calls += run.model_calls
