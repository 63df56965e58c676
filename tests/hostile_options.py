"""The options the hostile-value tests offer: plain steps, one result and one error that hold
a lone surrogate, and the replies they share."""

from __future__ import annotations

#: A string UTF-8, and so JSON, has no form for.
SURROGATE = "\ud800"
#: A pick every test model may give: it completes.
GOOD = '{"call": "refund", "args": {"reason": "late"}}'


async def refund(reason: str) -> str:
    """Refund the ticket."""
    return f"refunded {reason}"


async def pay(amount: float) -> str:
    """Pay an amount."""
    return f"paid {amount}"


async def lookup(order: str) -> str:
    """A step whose result holds a lone surrogate."""
    return f"order {order}{SURROGATE}"


async def explode(order: str) -> str:
    """A tool that raises with a lone surrogate in its message."""
    raise RuntimeError(f"no order {order}{SURROGATE}")


#: The menu of every hostile-value flow.
OPTIONS = {"refund": refund, "pay": pay, "lookup": lookup, "explode": explode}
