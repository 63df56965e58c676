"""Flows of the operator tests, importable by name (``operator_flows:shaky``) in-process.

``shaky`` fails while ``BROKEN`` says so, ``pick_one`` asks one decision of values,
``pick_twice`` two, and ``blocking`` finishes a step then blocks in the next one until the
test sets ``GATE["open"]`` (it sets ``GATE["blocked"]`` once it waits).
"""

from __future__ import annotations

from typing import Any

import anyio

from engine import decision

#: While ``on``, ``shaky`` raises: its runs fail, and a resume completes them once it is off.
BROKEN = {"on": True}
#: ``blocked`` is set once ``blocking`` waits in its step; it goes on once ``open`` is set.
GATE: dict[str, anyio.Event] = {}


async def shaky(ticket: dict[str, Any]) -> str:
    """Fail while the backoffice is down, else finish."""
    if BROKEN["on"]:
        raise RuntimeError("the backoffice is down")
    return f"done {ticket['id']}"


async def pick_one(ticket: dict[str, Any]) -> object:
    """Ask one decision of values."""
    return await decision.make(f"Queue for {ticket['id']}?", ["billing", "shipping"])


async def pick_twice(ticket: dict[str, Any]) -> object:
    """Ask two decisions of values, one after the other."""
    first = await decision.make(f"Queue for {ticket['id']}?", ["billing", "shipping"])
    second = await decision.make("Priority?", ["low", "high"])
    return [first, second]


async def note(text: str) -> str:
    """Note something down."""
    return f"noted {text}"


async def wait_for_gate() -> str:
    """Wait until the test opens the gate."""
    GATE["blocked"].set()
    await GATE["open"].wait()
    return "opened"


async def blocking(ticket: dict[str, Any]) -> object:
    """Note something (a finished step), then block in the next step."""
    noted = await decision.make("First?", {"note": note})
    opened = await decision.make("Then?", {"wait": wait_for_gate})
    return [noted, opened]
