"""Ticket routing: classify a support ticket, check its line items, investigate, and act.

The flow is written the way flows are meant to be written: a chain of decisions, each
handing "what happens next" to the model, with no ``if`` on what the model said.

1. :func:`classify` picks the ticket's category (value options).
2. For order tickets with line items, :func:`check_line_item` runs once per item,
   concurrently, through :func:`engine.map` (stable branch keys, so replay is exact).
3. :func:`route_ticket` offers the next step as function options: look up the order,
   refund, escalate to a human queue, ask the customer, close. Looking up the order is
   itself an agentic function whose :meth:`~engine.Runtime.exec` turn reads the order and
   the help center with tools before it picks the action.

Every action takes a hidden ``customer_id``: the model never sees or sets it; it is bound
from the decision's ``context``.

A person stays in the loop for money: a refund above :data:`REFUND_APPROVAL_LIMIT` EUR (or
``TICKET_REFUND_APPROVAL_LIMIT``, when set) is declared ``approve=``, so when the model
picks one the run waits (status ``waiting``) before the refund runs, until a person
approves it as is, edits its arguments, or rejects it (the model is then asked again, told
why). ``engine runs --status waiting`` lists those runs; ``engine show RUN_ID`` prints the
pick; ``engine answer RUN_ID --approve`` (or ``--edit '{"amount": 400, ...}'``, ``--reject
"REASON"``) answers it (docs/people.md).
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

import engine
from engine import Runtime, agentic_function, decision
from flows._backoffice import find_order, record, search_articles

__all__ = [
    "NATIVE_TOOLS",
    "REFUND_APPROVAL_LIMIT",
    "Action",
    "Category",
    "ItemCheck",
    "LineItem",
    "Outcome",
    "Ticket",
    "ask_customer",
    "check_line_item",
    "classify",
    "close",
    "escalate",
    "get_order",
    "look_up_order",
    "refund",
    "refund_approval_limit",
    "route_ticket",
    "search_help_center",
]

#: Whether the investigation turn offers its lookups as native tools (the model calls
#: them during the turn). When off, the facts are looked up first and put in the prompt,
#: for models that cannot call tools.
NATIVE_TOOLS = True
#: Refunds above this many EUR wait for a person's approval before they run; the
#: environment variable ``TICKET_REFUND_APPROVAL_LIMIT`` sets another (``inf``: never).
REFUND_APPROVAL_LIMIT = 500.0


def refund_approval_limit() -> float:
    """The EUR above which a refund waits for approval: the environment's, else the default."""
    given = os.environ.get("TICKET_REFUND_APPROVAL_LIMIT")
    return float(given) if given else REFUND_APPROVAL_LIMIT


Category = Literal["billing", "shipping", "returns", "technical", "account", "feedback"]
Verdict = Literal["ok", "damaged", "missing", "wrong_item"]
RefundReason = Literal["damaged", "not_delivered", "wrong_item", "late", "double_charge", "other"]
Queue = Literal["billing", "logistics", "tech", "trust_and_safety", "vip"]
Priority = Literal["low", "normal", "high", "urgent"]
Resolution = Literal["answered", "duplicate", "spam", "no_action_needed"]

_ORDER_CATEGORIES = frozenset({"billing", "shipping", "returns"})
_HIDDEN = {"customer_id": {"hidden": True}}


class LineItem(BaseModel):
    """One line of an order, as the customer reported it."""

    sku: str
    name: str
    quantity: int = 1
    price: float = 0.0


class Ticket(BaseModel):
    """A support ticket: the flow's input."""

    id: str
    customer_id: str
    subject: str
    body: str
    channel: Literal["email", "chat", "phone", "web"] = "email"
    order_id: str | None = None
    line_items: list[LineItem] = Field(default_factory=list)


class ItemCheck(BaseModel):
    """The verdict on one line item."""

    sku: str
    verdict: Verdict


class Action(BaseModel):
    """What was done about a ticket."""

    kind: str
    detail: dict[str, Any] = Field(default_factory=dict)


class Outcome(BaseModel):
    """The result of routing one ticket."""

    ticket_id: str
    category: Category
    items: list[ItemCheck] = Field(default_factory=list)
    action: Action


# -- the actions (function options) -----------------------------------------------------------


@agentic_function(
    input={
        **_HIDDEN,
        "order_id": {"description": "the order number, like A-10042"},
        "amount": {"description": "EUR to refund, more than 0 and at most 2000"},
    },
    approve=lambda args: args["amount"] > refund_approval_limit(),
)
async def refund(
    order_id: str,
    amount: Annotated[float, Field(gt=0, le=2000)],
    reason: RefundReason,
    customer_id: str,
) -> Action:
    """Refund part or all of an order (amount in EUR, at most 2000; above 500 a person approves)."""
    record("refund", customer_id=customer_id, order_id=order_id, amount=amount, reason=reason)
    return Action(kind="refund", detail={"order_id": order_id, "amount": amount, "reason": reason})


@agentic_function(input={**_HIDDEN, "summary": {"description": "one line a human can act on"}})
async def escalate(
    summary: str, queue: Queue, customer_id: str, priority: Priority = "normal"
) -> Action:
    """Hand the ticket to a human queue with a one-line summary of the problem."""
    record("escalation", customer_id=customer_id, queue=queue, priority=priority)
    return Action(
        kind="escalate", detail={"queue": queue, "priority": priority, "summary": summary}
    )


@agentic_function(input=_HIDDEN)
async def ask_customer(question: str, customer_id: str) -> Action:
    """Ask the customer one clarifying question when the ticket lacks what is needed."""
    record("question", customer_id=customer_id)
    return Action(kind="ask_customer", detail={"question": question})


@agentic_function(input=_HIDDEN)
async def close(resolution: Resolution, customer_id: str, note: str = "") -> Action:
    """Close the ticket: answered from the help center, a duplicate, spam, or nothing to do."""
    return Action(kind="close", detail={"resolution": resolution, "note": note})


_ACTIONS = [refund, escalate, ask_customer, close]


# -- tools of the investigation turn ----------------------------------------------------------


def get_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its number (A- followed by digits): state, total, carrier."""
    order = find_order(order_id)
    if order is None:
        return {"error": f"no order {order_id!r}; order numbers look like A-10042"}
    return order.model_dump()


def search_help_center(query: str) -> list[dict[str, str]]:
    """Search the help center; return the best matching articles' titles and summaries."""
    return [{"title": a.title, "summary": a.summary} for a in search_articles(query)]


@agentic_function(
    input={
        **_HIDDEN,
        "order_id": {"description": "the order number, like A-10042"},
        "topic": {"description": "what the customer asks about, in a few words"},
    }
)
async def look_up_order(
    order_id: str, topic: str, customer_id: str, runtime: Runtime | None = None
) -> Action:
    """Look up the order and the help center first, then pick the action."""
    assert runtime is not None  # filled from the ambient runtime
    task = (
        f"Investigate order {order_id} ({topic}). Check the order's state and total and "
        "what the help center says about it, then pick the action."
    )
    tools: list[object] | None = [get_order, search_help_center]
    content = task
    if not NATIVE_TOOLS:
        # Without native tools the same facts are read up front; lookups are deterministic,
        # so a replay builds the same prompt.
        tools = None
        order, articles = get_order(order_id), search_help_center(topic)
        content = f"{task}\n\nOrder: {order}\nHelp center: {articles}"
    action: Action = await runtime.exec(
        content, tools=tools, choices=_ACTIONS, context={"customer_id": customer_id}
    )
    return action


# -- the flow ---------------------------------------------------------------------------------

_CATEGORIES: dict[str, object] = {
    "billing": ("billing", "Charges, invoices, refunds of payments, payment methods."),
    "shipping": ("shipping", "Delivery, tracking, late, lost or damaged parcels."),
    "returns": ("returns", "Returning items, wrong or broken items, exchanges."),
    "technical": ("technical", "The app or website misbehaves."),
    "account": ("account", "Login, email, password, personal data."),
    "feedback": ("feedback", "Praise, complaints or suggestions with nothing to fix."),
}

_VERDICTS: dict[str, object] = {
    "ok": ("ok", "The item arrived as ordered."),
    "damaged": ("damaged", "The item arrived broken or damaged."),
    "missing": ("missing", "The item never arrived."),
    "wrong_item": ("wrong_item", "A different item arrived."),
}


def _describe(ticket: Ticket) -> str:
    order = f"Order: {ticket.order_id}\n" if ticket.order_id else ""
    return (
        f"Ticket {ticket.id} via {ticket.channel}\n{order}Subject: {ticket.subject}\n\n"
        f"{ticket.body}"
    )


@agentic_function
async def classify(ticket: Ticket, runtime: Runtime | None = None) -> Category:
    """Pick the ticket's category."""
    category: Category = await decision.make(
        f"{_describe(ticket)}\n\nPick the category of this support ticket.", _CATEGORIES
    )
    return category


@agentic_function
async def check_line_item(
    item: LineItem, ticket: Ticket, runtime: Runtime | None = None
) -> ItemCheck:
    """Pick a verdict for one line item of the ticket's order."""
    verdict: Verdict = await decision.make(
        f"{_describe(ticket)}\n\nLine item {item.sku}: {item.quantity} x {item.name}. "
        "Pick what the customer reports about this item.",
        _VERDICTS,
    )
    return ItemCheck(sku=item.sku, verdict=verdict)


@agentic_function
async def route_ticket(ticket: Ticket, runtime: Runtime | None = None) -> Outcome:
    """Route one support ticket: classify it, check its items, then act on it."""
    category = await classify(ticket)
    items: list[ItemCheck] = []
    if category in _ORDER_CATEGORIES and ticket.line_items:

        async def check(item: LineItem) -> ItemCheck:
            return await check_line_item(item, ticket)

        items = await engine.map(check, ticket.line_items)
    verdicts = ", ".join(f"{c.sku}: {c.verdict}" for c in items) or "none checked"
    action: Action = await decision.make(
        f"{_describe(ticket)}\n\nCategory: {category}. Line items: {verdicts}.\n"
        "Pick the next step for this ticket.",
        [look_up_order, *_ACTIONS],
        context={"customer_id": ticket.customer_id},
    )
    return Outcome(ticket_id=ticket.id, category=category, items=items, action=action)
