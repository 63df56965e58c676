"""People in the loop: a person decides one step, and approves a big refund before it runs.

``support`` lets the model classify a ticket, then asks a *person* where it goes
(``decision.make(..., by="human")``). ``settle`` lets the model pick a refund, but a refund
above 500 EUR is declared ``approve=``: the run waits before the refund runs. Each run is
stored ``waiting`` with its question; this process could end here. A second Engine on the
same SQLite file (as another process, or another machine on PostgreSQL, would) answers:
the pick is validated against the same menu, strictly, and the run goes on where it stood;
the model is not asked again for the steps before it.

Run it with ``python examples/people_in_the_loop.py`` (offline, no API key).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Literal

import anyio

from engine import DecisionError, Engine, agentic_function, decision
from engine.models import ScriptedModel
from engine.store import Run, SQLiteStore


@agentic_function
async def escalate(queue: Literal["vip", "standard"], note: str = "") -> str:
    """Hand the ticket to a queue of people."""
    return f"escalated to {queue}" + (f" ({note})" if note else "")


@agentic_function
async def close_ticket() -> str:
    """Close the ticket."""
    return "closed"


@agentic_function(approve=lambda args: args["amount"] > 500)
async def refund(amount: float) -> str:
    """Refund the customer, in EUR (above 500 a person approves first)."""
    return f"refunded {amount:.2f} EUR"


async def support(ticket: str) -> str:
    """The model classifies the ticket; a person decides what happens to it."""
    kind = await decision.make(f"Classify this ticket: {ticket}", ["billing", "tech"])
    return await decision.make(
        f"Ticket {ticket!r} ({kind}): escalate or close?",
        [escalate, close_ticket],
        by="human",
        name="route",
    )


async def settle(ticket: str) -> str:
    """The model settles the ticket; a refund above 500 waits for a person's approval."""
    return await decision.make(f"Settle {ticket!r}.", [refund, close_ticket], name="settle")


def told(run: Run) -> None:
    """What an application would post to a chat or a queue: the question, and where."""
    for question in run.error.questions or [] if run.error else []:
        print(f"  on_waiting: run {run.run_id} asks {question['kind']} {question['name']!r}")


async def main() -> None:
    path = Path(tempfile.mkdtemp()) / "runs.db"
    model = ScriptedModel(['{"call": "billing"}', '{"call": "refund", "args": {"amount": 900}}'])
    async with SQLiteStore(path) as store:
        first = Engine(model, store=store, on_waiting=told)
        asked = await first.run(support, "Charged twice for order A-7", run_id="t-1")
        held = await first.run(settle, "Parcel lost, order A-8", run_id="t-2")
    for run in (asked, held):
        assert run.error is not None
        assert run.error.questions
        question = run.error.questions[0]
        print(f"{run.run_id}: {run.status} at {question['name']!r}: {question['prompt']}")
        if question["kind"] == "approval":
            print(f"  the model picked {json.dumps(question['pick'])}")

    # Later, elsewhere: a second Engine on the same file; its model is never called.
    later = ScriptedModel([])
    async with SQLiteStore(path) as store:
        second = Engine(later, store=store)
        try:
            await second.answer("t-1", {"call": "escalate", "args": {"queue": "gold"}})
        except DecisionError as exc:
            print(f"t-1: refused ({exc.kind}: {exc.detail}); the run still waits")
        done = await second.answer(
            "t-1", {"call": "escalate", "args": {"queue": "vip", "note": "charged twice"}}
        )
        print(f"t-1: {done.status}: {done.result}")
        edited = await second.answer("t-2", edit={"amount": 450})
        print(f"t-2: {edited.status}: {edited.result}")
    print(f"model calls after the answers: {later.calls}")


if __name__ == "__main__":
    anyio.run(main)
