"""Flows the engine tests run; module-level so a new engine (or process) can import them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

import engine
from engine import Runtime, agentic_function, decision

if TYPE_CHECKING:
    from decimal import Context as Depot

#: Side effects of steps, by name: a test reads these to prove a step ran once.
EFFECTS: list[str] = []
#: Set to make ``fragile_step`` fail (a bug a later "fix" removes).
BROKEN = {"value": False}


async def ship(item: str) -> str:
    """Ship an item (a side effect)."""
    EFFECTS.append(f"ship:{item}")
    return f"shipped {item}"


async def fragile_step(item: str) -> str:
    """A step with a bug that a later fix removes."""
    if BROKEN["value"]:
        raise RuntimeError("bug in fragile_step")
    EFFECTS.append(f"fragile:{item}")
    return f"ok {item}"


@agentic_function
async def three_decisions(ticket: str, runtime: Runtime | None = None) -> dict[str, Any]:
    """Classify, act (a side-effecting step), then close."""
    kind = await decision.make(f"Classify: {ticket}", ["billing", "tech"])
    action = await decision.make("Act.", {"ship": ship, "hold": "HOLD"})
    close = await decision.make("Close?", ["close", "reopen"])
    return {"kind": kind, "action": action, "close": close}


@agentic_function
async def fragile_flow(ticket: str, runtime: Runtime | None = None) -> str:
    """A decision whose picked step may raise."""
    result: str = await decision.make("Go?", {"go": fragile_step})
    return result


MENU = {"value": ["a", "b"]}


@agentic_function
async def menu_flow(ticket: str, runtime: Runtime | None = None) -> list[Any]:
    """Two decisions; the first one's menu comes from MENU, so a test can change it."""
    first = await decision.make("First?", list(MENU["value"]))
    second = await decision.make("Second?", ["close", "reopen"])
    return [first, second]


async def check_item(item: str) -> str:
    """Pick a verdict for one line item."""
    verdict: str = await decision.make(f"Check {item}.", ["ok", "bad"])
    return f"{item}:{verdict}"


@agentic_function
async def fan_out(items: list[str], runtime: Runtime | None = None) -> list[str]:
    """Check several line items concurrently, then close."""
    results = await engine.map(check_item, items)
    await decision.make("Close?", ["close"])
    return results


class Shipment(BaseModel):
    """What shipping a parcel returns (a model, under a postponed annotation)."""

    item: str
    carrier: str = "post"


@agentic_function(input={"depot": {"hidden": True}})
async def ship_parcel(item: str, depot: Depot | None = None) -> Shipment:
    """Ship a parcel (a side effect) and return the shipment.

    ``Depot`` is imported for type checkers only: its annotation cannot be resolved at run
    time, which must not keep the return type from being resolved.
    """
    EFFECTS.append(f"parcel:{item}")
    return Shipment(item=item)


@agentic_function
async def parcel_then_close(ticket: str, runtime: Runtime | None = None) -> dict[str, Any]:
    """A step that returns a model, then a decision: a resume replays the step's model."""
    shipment = await decision.make(f"Ship for {ticket}.", [ship_parcel])
    close = await decision.make("Close?", ["close", "keep"])
    return {"carrier": shipment.carrier, "item": shipment.item, "close": close}


@agentic_function
async def handle_refund(order: str, runtime: Runtime | None = None) -> str:
    """Refund an order: record it, then pick how to tell the customer."""
    EFFECTS.append(f"refund:{order}")
    how: str = await decision.make("Tell the customer how?", ["email", "call"])
    return f"refunded {order} by {how}"


@agentic_function
async def refund_flow(ticket: str, runtime: Runtime | None = None) -> str:
    """A decision whose picked step makes a decision of its own (the one that may fail)."""
    result: str = await decision.make(f"Handle {ticket}.", {"refund": handle_refund, "drop": "-"})
    return result


@agentic_function
async def two_checks(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Two line items checked in gathered branches."""
    return await engine.gather(check_item("slow"), check_item("fast"))


class Item(BaseModel):
    """A line item, passed to a flow as a model."""

    sku: str


class Note(BaseModel):
    """A note, passed to a flow by keyword."""

    text: str


@agentic_function
async def many_items(
    first: Item, *rest: Item, runtime: Runtime | None = None, **notes: Note
) -> str:
    """A flow of variable arguments: each must come back as the model it was."""
    close: str = await decision.make("Close?", ["close", "keep"])
    skus = [first.sku, *(item.sku for item in rest)]
    texts = [f"{k}={n.text}" for k, n in sorted(notes.items())]
    return f"{','.join(skus)}|{','.join(texts)}|{close}"
