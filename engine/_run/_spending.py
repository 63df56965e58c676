"""What one execution of a run spends, and whether it may go on: counts, budget, retries.

A :class:`Spending` counts the execution's model calls, transitions, tokens and their cost
in dollars (:func:`~engine.models.call_cost`), keeps the
run's retry ledger (seeded with what earlier executions spent, as stored or as journaled),
and before each piece of live work says whether the run may go on: not when it is being
stopped, nor past its budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from engine._base import RunStopped
from engine._retries import OnRetry, RetryLedger, RunBudget
from engine.models import Model, Price, Response, add_cost, call_cost
from engine.store import JournalRecord

__all__ = ["Control", "Counts", "Spending"]

# The layers whose attempts replay from journaled replies (re-picks and decision retries).
_REPLAYED_LAYERS = frozenset({"parse", "decision"})


class Control(Protocol):
    """What the executor tells a running run: why to stop at its next transition, if at all."""

    @property
    def stopping(self) -> str | None: ...


@dataclass(slots=True)
class Counts:
    """What one execution did: model calls, transitions, tokens, dollars (``None``: unknown)."""

    model_calls: int = 0
    transitions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Spending:
    """Count one execution's work and check, before live work, that the run may go on.

    Args:
        journal: The run's journal as loaded (its retry records seed the ledger).
        budget: The run's budget, if it has one.
        tokens_before: The tokens earlier executions spent.
        cost_before: The dollars earlier executions spent (``None``: unknown).
        prices: Prices by model name, for models that carry none of their own.
        retries_before: The retry attempts, by layer, earlier executions stored.
        control: Says why the run must stop, when it must.
        on_retry: Told of every retry the ledger notes.
    """

    __slots__ = ("budget", "control", "cost_before", "counts", "ledger", "prices", "tokens_before")

    def __init__(
        self,
        journal: list[JournalRecord],
        *,
        budget: RunBudget | None = None,
        tokens_before: int = 0,
        cost_before: float | None = None,
        prices: Mapping[str, Price] | None = None,
        retries_before: Mapping[str, int] | None = None,
        control: Control | None = None,
        on_retry: OnRetry | None = None,
    ) -> None:
        self.budget = budget
        self.tokens_before = tokens_before
        self.cost_before = cost_before
        self.prices = prices
        self.control = control
        self.counts = Counts()
        # Re-picks and decision retries replay from journaled replies, and meet their attempts
        # again; other layers' attempts are live whenever they happen, so each one counts.
        seen = [
            (r.data["layer"], r.key, r.data["attempt"])
            for r in journal
            if r.kind == "retry" and isinstance(r.data, dict) and r.actor in _REPLAYED_LAYERS
        ]
        # What earlier executions spent: the stored counts, or the journal's where it holds
        # more (an execution that died never stored its counts, but journaled its attempts).
        before = dict(retries_before or {})
        journaled: dict[str, int] = {}
        for record in journal:
            if record.kind == "retry" and record.actor is not None:
                journaled[record.actor] = journaled.get(record.actor, 0) + 1
        for layer, count in journaled.items():
            before[layer] = max(before.get(layer, 0), count)
        # The ledger holds nothing of the hooks: no reference cycle keeps a run's journal
        # alive after the run (the garbage collector would have to find it).
        self.ledger = RetryLedger(budget, before, seen, on_retry)

    def check_live(self, key: str) -> None:
        """Check, before live work at ``key``, that the run may go on."""
        if self.control is not None and self.control.stopping is not None:
            raise RunStopped(self.control.stopping, where=key)
        if self.budget is not None:
            self.budget.check_tokens(self.tokens_before + self.counts.tokens)
            self.budget.check_cost(self.cost)

    @property
    def cost(self) -> float | None:
        """Dollars the run has spent, earlier executions included (``None``: unknown)."""
        return add_cost(self.cost_before, self.counts.cost_usd)

    def price(self, model: Model, response: Response) -> float | None:
        """Return what one live call of ``model`` cost, or ``None`` when its price is unknown."""
        return call_cost(model, response, self.prices)

    def add_call(self, input_tokens: int, output_tokens: int, cost: float | None = None) -> None:
        """Count one live model call, its tokens and its cost; raise past the budget."""
        counts = self.counts
        counts.model_calls += 1
        counts.input_tokens += input_tokens
        counts.output_tokens += output_tokens
        if cost is not None:
            counts.cost_usd = add_cost(counts.cost_usd, cost)
        if self.budget is not None:
            self.budget.check_tokens(self.tokens_before + counts.tokens)
            self.budget.check_cost(self.cost)
