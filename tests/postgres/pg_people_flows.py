"""Flows with a person in the loop, for the queued-answer tests (importable by workers)."""

from __future__ import annotations

from typing import Literal

from engine import agentic_function, decision


@agentic_function
async def escalate(queue: Literal["vip", "standard"]) -> str:
    """Hand the ticket to a queue of people."""
    return f"escalated to {queue}"


@agentic_function
async def close_ticket() -> str:
    """Close the ticket."""
    return "closed"


@agentic_function(approve=lambda args: args["amount"] > 500)
async def refund(amount: int) -> str:
    """Refund the customer (over 500 needs a person's approval)."""
    return f"refunded {amount}"


async def ask_a_person(ticket: str) -> str:
    """A person decides what happens to the ticket."""
    return await decision.make(
        f"Ticket {ticket}: escalate or close?", [escalate, close_ticket], by="human"
    )


async def settle(ticket: str) -> str:
    """The model picks a refund; one over 500 waits for approval."""
    return await decision.make(f"Settle {ticket}.", [refund, close_ticket])
