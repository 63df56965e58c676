"""Ready-made flows built on the engine.

Each flow is an agentic function taking one record (a pydantic model) and returning one
result. :data:`FLOWS` gives the command line its short names, so ``engine run
ticket_routing --input tickets.jsonl`` is the same as ``engine run
flows.ticket_routing:route_ticket --input tickets.jsonl``.
"""

__all__ = ["FLOWS"]

#: Short names of the ready-made flows, each mapped to its ``module:function``.
FLOWS: dict[str, str] = {
    "ticket_routing": "flows.ticket_routing:route_ticket",
    "incident_triage": "flows.incident_triage:triage_incident",
}
