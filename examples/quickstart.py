"""Route a few support tickets through decisions, offline.

Each ticket goes through one agentic function: the model picks what happens next from a
menu of functions and values, and the pick *is* the branch. The model here is a scripted
stand-in that reads the ticket, so this runs with no API key.

Run it with ``make quickstart`` or ``python examples/quickstart.py``.
"""

from __future__ import annotations

import json

import anyio

from engine import Runtime, agentic_function, decision
from engine.models import Request, ScriptedModel

TICKETS = [
    "My order #1042 arrived broken, I want my money back.",
    "How do I change the email on my account?",
    "This is the third time I write. Nobody answers. I am going to my lawyer.",
    "Thanks, all sorted now!",
]


async def refund(order_id: str, amount: float, reason: str) -> str:
    """Refund an order."""
    return f"refunded {amount:.2f} on order {order_id} ({reason})"


async def escalate(summary: str, priority: str = "normal") -> str:
    """Hand the ticket to a human, with a one-line summary."""
    return f"escalated ({priority}): {summary}"


async def answer(text: str) -> str:
    """Answer the customer directly."""
    return f"answered: {text}"


@agentic_function
async def handle_ticket(ticket: str, runtime: Runtime | None = None) -> object:
    """Pick the next step for one ticket; the decision is the branch."""
    return await decision.make(
        f"Support ticket:\n{ticket}\n\nPick the next step.",
        {
            "refund": refund,
            "escalate": (escalate, "Hand over to a human when the customer is upset."),
            "answer": answer,
            "close": "CLOSED",
        },
    )


def scripted_pick(request: Request) -> str:
    """Stand in for a model: read the ticket and answer with a JSON pick."""
    text = request.messages[-1].text.lower()
    if "money back" in text:
        pick = {"call": "refund", "args": {"order_id": "1042", "amount": 59.9, "reason": "broken"}}
    elif "lawyer" in text:
        pick = {"call": "escalate", "args": {"summary": "angry repeat contact", "priority": "high"}}
    elif "how do i" in text:
        pick = {"call": "answer", "args": {"text": "Settings > Account > Email."}}
    else:
        pick = {"call": "close"}
    return f"Reading the ticket... done.\n```json\n{json.dumps(pick)}\n```"


async def main() -> None:
    runtime = Runtime(model=ScriptedModel(scripted_pick))
    results: dict[int, object] = {}

    async def one(i: int, ticket: str) -> None:
        results[i] = await handle_ticket(ticket, runtime=runtime)

    async with anyio.create_task_group() as tg:
        for i, ticket in enumerate(TICKETS):
            tg.start_soon(one, i, ticket)
    for i, ticket in enumerate(TICKETS):
        print(f"{ticket[:50]:<52} -> {results[i]}")
    decisions = runtime.trace.find("decision")
    print(f"\n{len(decisions)} decisions, picks: {[d.data['pick'] for d in decisions]}")


if __name__ == "__main__":
    anyio.run(main)
