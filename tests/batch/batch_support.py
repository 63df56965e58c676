"""Flows and a model the batch tests share: tickets whose calls take virtual time."""

from __future__ import annotations

import re

from virtual_clock import VirtualClock

from engine import Engine, Runtime, agentic_function, decision
from engine.models import Request, Response, SimulatedModel
from engine.store import MemoryStore


class Slow(SimulatedModel):
    """A simulated model whose call for ticket ``tN`` takes ``latency(N)`` virtual seconds."""

    def __init__(self, clock: VirtualClock, latency: float = 1.0, *, by_ticket: bool = False):
        super().__init__(seed=11, name="slow")
        self.clock = clock
        self.base = latency
        self.by_ticket = by_ticket

    async def complete(self, request: Request) -> Response:
        delay = self.base
        if self.by_ticket:
            found = re.search(r"ticket t(\d+)", request.messages[0].text)
            delay = 10.0 - int(found.group(1)) if found else self.base
        await self.clock.sleep(delay)
        return await super().complete(request)


@agentic_function
async def one_step(ticket: str, runtime: Runtime | None = None) -> str:
    """One decision."""
    picked: str = await decision.make(f"Route ticket {ticket}.", ["billing", "shipping"])
    return picked


@agentic_function
async def three_steps(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Three decisions in a row."""
    return [
        await decision.make(f"Step {n} of ticket {ticket}.", ["left", "right"]) for n in range(3)
    ]


def engine(model: SimulatedModel, store: MemoryStore | None = None, **options: object) -> Engine:
    return Engine(model=model, store=store or MemoryStore(), **options)  # type: ignore[arg-type]
