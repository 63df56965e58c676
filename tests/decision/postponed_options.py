from __future__ import annotations

# Option functions defined under postponed annotations: every annotation is a string that
# the engine must resolve against this module.
import dataclasses
from typing import TYPE_CHECKING, Literal, Optional

from pydantic import BaseModel

from engine import agentic_function

if TYPE_CHECKING:
    # Only for the type checker: the runtime parameter's annotation never resolves at run time.
    from engine import Runtime


def ship(
    order: Order,
    speed: Literal["slow", "fast"] = "slow",
    count: Optional[int] = None,  # noqa: UP045 - the typing form is what is under test
    tags: list[str] | None = None,
    runtime: Runtime | None = None,
) -> str:
    """Ship an order.

    The order model is defined below this function, so resolving it needs the module.
    """
    return f"{order.sku} x{order.qty} {speed} {count} {tags}"


class Order(BaseModel):
    sku: str
    qty: int = 1


@agentic_function(input={"note": {"description": "a note for the log"}, "user": {"hidden": True}})
async def annotate(note: str, weight: float, user: str = "anonymous") -> str:
    """Annotate a ticket."""
    return f"{user}: {note} ({weight})"


@dataclasses.dataclass
class Point:
    """A point on the plane."""

    x: int
    y: float = 0.0


def refers_to_missing(x: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
    """Its annotation names a type that does not exist."""
