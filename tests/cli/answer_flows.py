"""Flows of the ``engine answer`` tests, importable by name (``answer_flows:triage``)."""

from __future__ import annotations

from typing import Literal

from engine import agentic_function, decision, gather


@agentic_function
async def escalate(queue: Literal["vip", "standard"], note: str = "") -> str:
    """Hand the ticket to a queue of people."""
    return f"escalated to {queue}" + (f" ({note})" if note else "")


@agentic_function
async def close_ticket() -> str:
    """Close the ticket."""
    return "closed"


@agentic_function(approve=lambda args: args["amount"] > 500)
async def refund(amount: int, reason: str = "") -> str:
    """Refund the customer (over 500 needs a person's approval)."""
    return f"refunded {amount}"


@agentic_function
async def apologise() -> str:
    """Say sorry, and nothing more."""
    return "apologised"


async def triage(ticket: str) -> str:
    """A person decides what happens to the ticket."""
    return await decision.make(
        f"Ticket {ticket!r}: escalate or close?",
        [escalate, close_ticket],
        by="human",
        name="triage",
    )


async def two_people(ticket: str) -> list[str]:
    """Two branches, each waiting for a person of its own."""

    async def ask(who: str) -> str:
        return await decision.make(
            f"{who}: what now for {ticket}?", [escalate, close_ticket], by="human", name=who
        )

    return await gather(lambda: ask("legal"), lambda: ask("billing"))


async def settle(ticket: str) -> str:
    """The model picks; a refund over 500 waits for approval; a rejection apologises."""
    return await decision.make(
        f"Settle {ticket}.", [refund, apologise], name="settle", on_reject="apologise"
    )


async def timed(ticket: str) -> str:
    """A person has an hour; then the ticket is closed."""
    return await decision.make(
        f"Escalate {ticket}?",
        [escalate, close_ticket],
        by="human",
        deadline_s=3600,
        on_deadline="close_ticket",
    )


async def settle_or_ask_again(ticket: str) -> str:
    """The model picks; a rejected refund is asked of the model again, with the reason."""
    return await decision.make(f"Settle {ticket}.", [refund, apologise], name="settle")
