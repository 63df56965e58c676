"""The retry ledger of a run: every attempt at every layer, with its cause, and the run's budget.

Each retry layer reports an attempt through :func:`note_retry` just before it makes it.
Inside a durable run, the run's :class:`RetryLedger` counts the attempt against the run's
:class:`RunBudget` (with the attempts of earlier executions, so a budget survives resumes),
hands it to the journal as one ``retry`` record, and then the caller's ``on_retry`` fires.
Outside a run only ``on_retry`` fires.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from engine._base import BudgetExceededError, mask_secrets
from engine._retries._events import OnRetry, RetryEvent

__all__ = ["OnRetry", "RetryLedger", "RunBudget", "current_ledger", "note_retry"]


@dataclass(frozen=True, slots=True)
class RunBudget:
    """What one run may spend, all its executions (resumes included) together.

    A run that reaches a limit stops and is suspended with the reason ``budget_exceeded``;
    raise the budget on the engine and resume it.

    Attributes:
        attempts: Retry attempts at every layer together (the first try of anything is free).
        tokens: Input and output tokens of every model call.
        wall_s: Seconds spent running (time spent suspended does not count).
        cost_usd: US dollars of every model call whose price is known (see
            :class:`~engine.Price`; a call of unknown price counts nothing).
    """

    attempts: int | None = None
    tokens: int | None = None
    wall_s: float | None = None
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("attempts", "tokens", "wall_s", "cost_usd"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"RunBudget({name}={value!r}) must be >= 0 or None")

    def check_tokens(self, spent: int) -> None:
        """Raise :class:`BudgetExceededError` when ``spent`` tokens are over the budget."""
        if self.tokens is not None and spent > self.tokens:
            raise BudgetExceededError("tokens", limit=self.tokens, spent=spent)

    def check_cost(self, spent: float | None) -> None:
        """Raise :class:`BudgetExceededError` when ``spent`` dollars are over the budget."""
        if self.cost_usd is not None and spent is not None and spent > self.cost_usd:
            raise BudgetExceededError("cost_usd", limit=self.cost_usd, spent=spent)


class RetryLedger:
    """The retry attempts of one run: counted by layer, checked, and handed to the journal.

    Args:
        budget: The run's budget, or ``None``.
        counts: Attempts by layer from earlier executions (the stored run's ``retries``).
        seen: Attempts already in the journal, as ``(layer, key, attempt)``: a replay that
            meets them again neither counts nor journals them twice.
        listener: Called with each new attempt (the engine's ``on_retry``).

    Attributes:
        fresh: New attempts the journal has not taken yet (see :meth:`take`).
    """

    __slots__ = ("_seen", "budget", "counts", "fresh", "listener")

    def __init__(
        self,
        budget: RunBudget | None = None,
        counts: Mapping[str, int] | None = None,
        seen: Iterable[tuple[str, str, int]] = (),
        listener: OnRetry | None = None,
    ) -> None:
        self.budget = budget
        self.counts: dict[str, int] = dict(counts or {})
        self._seen = set(seen)
        self.listener = listener
        self.fresh: list[RetryEvent] = []

    @property
    def total(self) -> int:
        """Attempts at every layer together."""
        return sum(self.counts.values())

    async def note(self, event: RetryEvent) -> None:
        """Count one attempt about to be made, journal it and tell the listener.

        An attempt the journal holds already (a replay meets it again) is neither counted
        nor told twice.

        Raises:
            BudgetExceededError: The attempt would go past the budget's ``attempts``; it is
                not made, and not recorded.
        """
        ident = (event.layer, event.key, event.attempt)
        if ident in self._seen:
            return
        limit = self.budget.attempts if self.budget is not None else None
        if limit is not None and self.total + 1 > limit:
            raise BudgetExceededError("attempts", limit=limit, spent=self.total)
        self._seen.add(ident)
        self.counts[event.layer] = self.counts.get(event.layer, 0) + 1
        self.fresh.append(event)
        await _tell(self.listener, event)

    def take(self) -> list[RetryEvent]:
        """Hand over the attempts not yet journaled (the journal calls it at each write)."""
        fresh, self.fresh = self.fresh, []
        return fresh


current_ledger: ContextVar[RetryLedger | None] = ContextVar("engine_ledger", default=None)


async def note_retry(event: RetryEvent, on_retry: OnRetry | None = None) -> None:
    """Report one retry attempt: to the current run's ledger, then to ``on_retry``.

    Raises:
        BudgetExceededError: The run's budget allows no more attempts.
    """
    if event.message:  # it is journaled and handed on: it may quote what a provider sent
        event = dataclasses.replace(event, message=mask_secrets(event.message))
    ledger = current_ledger.get()
    if ledger is not None:
        await ledger.note(event)
    await _tell(on_retry, event)


async def _tell(on_retry: OnRetry | None, event: RetryEvent) -> None:
    if on_retry is not None:
        result = on_retry(event)
        if inspect.isawaitable(result):
            await result
