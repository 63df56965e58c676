"""A flow of the cost tests of the command line: two decisions a ticket, nothing else."""

from __future__ import annotations

from typing import Any

from engine import Runtime, agentic_function, decision


@agentic_function
async def route(ticket: dict[str, Any], runtime: Runtime | None = None) -> list[str]:
    """Route a ticket in two decisions."""
    menu = ["billing", "shipping"]
    return [await decision.make(f"Route {ticket['id']}, step {n}.", menu) for n in (1, 2)]
