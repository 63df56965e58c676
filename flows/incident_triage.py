"""Incident triage: rate an alert's severity, find its owner, pick a runbook step, page or not.

A different shape from ticket routing: the severity and the owning team are decided
concurrently (:func:`engine.gather`), then the runbook step and the paging decision are
function options whose hidden ``incident_id`` and ``team`` come from the decision's
``context``, never from the model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

import engine
from engine import Runtime, agentic_function, decision
from flows._backoffice import record

__all__ = [
    "Incident",
    "RunbookStep",
    "Severity",
    "Team",
    "Triage",
    "assess_severity",
    "choose_owner",
    "triage_incident",
]

Severity = Literal["sev1", "sev2", "sev3", "sev4"]
Team = Literal["payments", "checkout", "search", "platform", "data", "mobile"]
Urgency = Literal["high", "low"]


class Incident(BaseModel):
    """An alert that needs triage: the flow's input."""

    id: str
    service: str
    title: str
    description: str
    error_rate: float = 0.0
    p95_latency_ms: int = 0
    customers_affected: int = 0
    recent_deploy: bool = False
    alerts: list[str] = Field(default_factory=list)


class RunbookStep(BaseModel):
    """The first runbook step taken."""

    step: str
    detail: dict[str, object] = Field(default_factory=dict)


class Triage(BaseModel):
    """The result of triaging one incident."""

    incident_id: str
    severity: Severity
    team: Team
    step: RunbookStep
    notification: str


_SEVERITIES = [
    ("sev1", "Outage or data loss for many customers; all hands now."),
    ("sev2", "A major feature is broken or badly degraded for many customers."),
    ("sev3", "Degraded for some customers, or a workaround exists."),
    ("sev4", "Cosmetic, internal only, or no customer impact."),
]

_TEAMS: dict[str, object] = {
    "payments": ("payments", "Payment providers, refunds, invoices."),
    "checkout": ("checkout", "Cart, checkout pages, order creation."),
    "search": ("search", "Search, recommendations, catalogue indexing."),
    "platform": ("platform", "Kubernetes, networking, databases, queues."),
    "data": ("data", "Pipelines, warehouse, reporting."),
    "mobile": ("mobile", "The iOS and Android apps and their API gateway."),
}

_INCIDENT = {"incident_id": {"hidden": True}}
_TEAM = {"team": {"hidden": True}}


# -- runbook steps (function options) ---------------------------------------------------------


@agentic_function(input=_INCIDENT)
async def roll_back(service: str, reason: str, incident_id: str) -> RunbookStep:
    """Roll the service back to its previous release (a deploy went out recently)."""
    record("rollback", incident_id=incident_id, service=service)
    return RunbookStep(step="roll_back", detail={"service": service, "reason": reason})


@agentic_function(input=_INCIDENT)
async def restart(service: str, incident_id: str) -> RunbookStep:
    """Restart the service's pods (stuck workers, leaked memory)."""
    record("restart", incident_id=incident_id, service=service)
    return RunbookStep(step="restart", detail={"service": service})


@agentic_function(input=_INCIDENT)
async def scale_out(
    service: str, replicas: Annotated[int, Field(ge=2, le=50)], incident_id: str
) -> RunbookStep:
    """Add replicas to the service (saturation: latency up, errors from timeouts)."""
    record("scale_out", incident_id=incident_id, service=service, replicas=replicas)
    return RunbookStep(step="scale_out", detail={"service": service, "replicas": replicas})


@agentic_function(input=_INCIDENT)
async def investigate(hypothesis: str, incident_id: str) -> RunbookStep:
    """No safe automatic step: write down the first hypothesis to check."""
    return RunbookStep(step="investigate", detail={"hypothesis": hypothesis})


# -- notifications (function options) ---------------------------------------------------------


@agentic_function(input={**_INCIDENT, **_TEAM})
async def page_on_call(message: str, urgency: Urgency, incident_id: str, team: str) -> str:
    """Page the owning team's on-call engineer now."""
    record("page", incident_id=incident_id, team=team, urgency=urgency)
    return f"paged {team} on-call ({urgency})"


@agentic_function(input={**_INCIDENT, **_TEAM})
async def open_ticket(summary: str, incident_id: str, team: str) -> str:
    """Open a ticket in the owning team's queue for working hours; page nobody."""
    record("ticket", incident_id=incident_id, team=team)
    return f"ticket for {team}"


# -- the flow ---------------------------------------------------------------------------------


def _describe(incident: Incident) -> str:
    alerts = "; ".join(incident.alerts) or "none"
    return (
        f"Incident {incident.id} on {incident.service}: {incident.title}\n"
        f"{incident.description}\n"
        f"Error rate {incident.error_rate:.1%}, p95 latency {incident.p95_latency_ms} ms, "
        f"{incident.customers_affected} customers affected, recent deploy: "
        f"{'yes' if incident.recent_deploy else 'no'}.\nAlerts: {alerts}"
    )


@agentic_function
async def assess_severity(incident: Incident, runtime: Runtime | None = None) -> Severity:
    """Pick the incident's severity."""
    severity: Severity = await decision.make(
        f"{_describe(incident)}\n\nPick the severity of this incident.", _SEVERITIES
    )
    return severity


@agentic_function
async def choose_owner(incident: Incident, runtime: Runtime | None = None) -> Team:
    """Pick the team that owns the failing service."""
    team: Team = await decision.make(
        f"{_describe(incident)}\n\nPick the team that owns this incident.", _TEAMS
    )
    return team


@agentic_function
async def triage_incident(incident: Incident, runtime: Runtime | None = None) -> Triage:
    """Triage one incident: severity and owner at once, then a runbook step, then paging."""
    severity, team = await engine.gather(assess_severity(incident), choose_owner(incident))
    facts = f"{_describe(incident)}\nSeverity: {severity}. Owner: {team}."
    step: RunbookStep = await decision.make(
        f"{facts}\n\nPick the first runbook step.",
        [roll_back, restart, scale_out, investigate],
        context={"incident_id": incident.id},
    )
    notification: str = await decision.make(
        f"{facts}\nFirst step: {step.step}.\n\nPick how to tell the owning team.",
        [page_on_call, open_ticket],
        context={"incident_id": incident.id, "team": team},
    )
    return Triage(
        incident_id=incident.id, severity=severity, team=team, step=step, notification=notification
    )
