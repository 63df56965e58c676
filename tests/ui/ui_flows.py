"""Flows the inspector's tests run: importable, so a run resumes from any engine."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from engine import Runtime, agentic_function, decision


class Address(BaseModel):
    """Where a parcel goes."""

    city: str
    floor: int = Field(default=0, ge=0, le=80)


async def ship(
    priority: Literal["low", "high"],
    weight: Annotated[int, Field(ge=1, le=30)] = 1,
    to: Address | None = None,
    note: str = "",
) -> str:
    """Ship the order."""
    where = f" to {to.city} floor {to.floor}" if to is not None else ""
    return f"shipped {priority} {weight}kg{where}"


async def hold(reason: str) -> str:
    """Hold the order."""
    return f"held: {reason}"


@agentic_function
async def dispatch(order: str, runtime: Runtime | None = None) -> str:
    """The model picks how an order goes (a bad reply suspends the run)."""
    picked: str = await decision.make(
        f"Order: {order}\nShip it or hold it?", {"ship": ship, "hold": hold}, name="dispatch"
    )
    return picked


@agentic_function
async def ask_person(order: str, runtime: Runtime | None = None) -> str:
    """A person picks how an order goes: the run waits for them."""
    picked: str = await decision.make(
        f"Order {order}: ship or hold?", {"ship": ship, "hold": hold}, by="human", name="person"
    )
    return picked


@agentic_function
async def quick(order: str, runtime: Runtime | None = None) -> str:
    """One decision between two values: a batch of these finishes fast."""
    picked: str = await decision.make(f"Order {order}: fast or slow?", ["fast", "slow"])
    return picked


@agentic_function(approve=lambda args: args["weight"] > 10)
async def ship_heavy(priority: Literal["low", "high"], weight: int) -> str:
    """Ship the order (over 10 kg needs a person's approval)."""
    return f"shipped {priority} {weight}kg"


@agentic_function
async def heavy(order: str, runtime: Runtime | None = None) -> str:
    """The model picks; a heavy parcel waits for a person's approval."""
    picked: str = await decision.make(f"Order {order}.", [ship_heavy, hold], name="heavy")
    return picked
