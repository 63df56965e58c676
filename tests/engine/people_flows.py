"""Flows with people in the loop, shared by the tests (importable, so runs resume anywhere)."""

from __future__ import annotations

from typing import Literal

from engine import Runtime, agentic_function, decision, gather

#: What the steps did, in order (a step that runs twice shows twice).
DONE: list[str] = []


@agentic_function
async def escalate(queue: Literal["vip", "standard"], note: str = "") -> str:
    """Hand the ticket to a queue of people."""
    DONE.append(f"escalate:{queue}")
    return f"escalated to {queue}" + (f" ({note})" if note else "")


@agentic_function
async def close_ticket() -> str:
    """Close the ticket."""
    DONE.append("close")
    return "closed"


@agentic_function(approve=lambda args: args["amount"] > 500)
async def refund(amount: int, reason: str = "") -> str:
    """Refund the customer (over 500 needs a person's approval)."""
    DONE.append(f"refund:{amount}")
    return f"refunded {amount}"


@agentic_function
async def apologise() -> str:
    """Say sorry, and nothing more."""
    DONE.append("apologise")
    return "apologised"


@agentic_function
async def triage(ticket: str, runtime: Runtime | None = None) -> str:
    """The model classifies; then a person decides what happens."""
    kind = await decision.make(f"Classify this ticket: {ticket}", ["billing", "tech"])
    return await decision.make(
        f"Ticket {ticket!r} ({kind}): escalate or close?",
        [escalate, close_ticket],
        by="human",
        name="triage",
    )


@agentic_function
async def two_people(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Two branches, each waiting for a person of its own."""

    async def ask(who: str) -> str:
        return await decision.make(
            f"{who}: what now for {ticket}?", [escalate, close_ticket], by="human", name=who
        )

    return await gather(lambda: ask("legal"), lambda: ask("billing"))


@agentic_function
async def pay_back(ticket: str, runtime: Runtime | None = None) -> str:
    """The model picks; a refund over 500 waits for a person's approval."""
    return await decision.make(f"Settle {ticket}.", [refund, apologise], name="settle")


@agentic_function
async def pay_back_or_apologise(ticket: str, runtime: Runtime | None = None) -> str:
    """As pay_back, but a rejected refund becomes an apology."""
    return await decision.make(
        f"Settle {ticket}.", [refund, apologise], name="settle", on_reject="apologise"
    )


@agentic_function
async def timed(ticket: str, runtime: Runtime | None = None) -> str:
    """A person has an hour; then the ticket is closed."""
    return await decision.make(
        f"Escalate {ticket}?",
        [escalate, close_ticket],
        by="human",
        deadline_s=3600,
        on_deadline="close_ticket",
    )


@agentic_function
async def timed_to_model(ticket: str, runtime: Runtime | None = None) -> str:
    """A person has a minute; then the model picks."""
    return await decision.make(
        f"Escalate {ticket}?",
        [escalate, close_ticket],
        by="human",
        deadline_s=60,
        on_deadline=decision.MODEL,
    )
