"""A batch counts the runs that wait for a person as waiting: neither done wrong nor failed."""

from __future__ import annotations

from engine import BatchProgress, Engine, decision
from engine.models import ScriptedModel
from engine.store import MemoryStore


async def ask(ticket: str) -> str:
    """A person picks; ``auto`` tickets are picked by the model instead."""
    if ticket.startswith("auto"):
        return await decision.make(f"Queue for {ticket}?", ["billing", "tech"])
    return await decision.make(f"Queue for {ticket}?", ["billing", "tech"], by="human")


async def test_progress_counts_waiting_runs_on_their_own() -> None:
    seen: list[BatchProgress] = []
    engine = Engine(ScriptedModel(['{"call": "billing"}']), store=MemoryStore())

    runs = await engine.run_many(ask, ["auto-1", "p1", "p2"], progress=seen.append)

    assert sorted(r.status for r in runs) == ["completed", "waiting", "waiting"]
    last = seen[-1]
    assert (last.done, last.completed, last.waiting) == (3, 1, 2)
    assert (last.suspended, last.failed, last.cancelled) == (0, 0, 0)
