"""Resume a run that stopped on a DecisionError: by hand, or on another model.

A model that never gives a valid pick does not lose the run: the run is *suspended* with
the failing decision, the options it offered and every raw reply stored. Here a fresh
Engine on the same SQLite file (as a new process would) resumes it twice over: once with a
person's pick, once with a better model. Decisions already answered are replayed from the
journal, so the model is not asked again for them.

Run it with ``python examples/resume_after_decision_error.py`` (offline, no API key).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio

from engine import Engine
from engine.models import Request, ScriptedModel, SimulatedModel
from engine.store import SQLiteStore
from flows.ticket_routing import Ticket, route_ticket

TICKET = Ticket(
    id="T-1",
    customer_id="C-42",
    subject="Angry about a refund",
    body="Third time I write: where is the refund for order A-10042?",
    order_id="A-10042",
)


def confused(request: Request) -> str:
    """Classify the ticket well, then never manage to pick the next step."""
    names = [c.name for c in request.choices or []]
    if "billing" in names:
        return json.dumps({"call": "billing"})
    return "Hmm, several of these could apply; a colleague should decide."


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.db"
        async with SQLiteStore(path) as store:
            run = await Engine(model=ScriptedModel(confused), store=store).run(
                route_ticket, TICKET, run_id="by-hand"
            )
            await Engine(model=ScriptedModel(confused), store=store).run(
                route_ticket, TICKET.model_copy(update={"id": "T-2"}), run_id="other-model"
            )
        assert run.error is not None
        print(f"run {run.run_id}: {run.status} ({run.error.kind}) at {run.error.where}")
        print(f"  offered: {', '.join(run.error.options or [])}")
        print(f"  replies: {run.error.replies}")

        # Later, in another process: a fresh Engine on the same file.
        async with SQLiteStore(path) as store:
            idle = ScriptedModel([])  # would raise if anything asked it
            engine = Engine(model=idle, store=store)
            pick = {
                "call": "escalate",
                "args": {"summary": "third contact about a refund", "queue": "billing"},
            }
            done = await engine.resume("by-hand", pick=pick)
            print(f"\nresumed by hand: {done.status} -> {done.result['action']}")
            print(f"  model calls during the resume: {idle.calls}")

            better = SimulatedModel(seed=3)
            done = await engine.resume("other-model", model=better)
            print(f"resumed on {better.name}: {done.status} -> {done.result['action']['kind']}")
            print(f"  model calls during the resume: {better.calls} (classify was replayed)")


if __name__ == "__main__":
    anyio.run(main)
