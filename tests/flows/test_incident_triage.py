"""The incident-triage flow: severity and owner at once, a runbook step, then paging."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import flows.incident_triage as it
from engine import Engine, Runtime
from engine.models import Request, ScriptedModel
from engine.store import MemoryStore
from flows._backoffice import LEDGER


@pytest.fixture(autouse=True)
def _clean_ledger() -> Iterator[None]:
    LEDGER.clear()
    yield
    LEDGER.clear()


def pick(call: str, **args: Any) -> str:
    return json.dumps({"call": call, "args": args})


def menu_model(answers: dict[str, str]) -> ScriptedModel:
    """Answer each decision by its menu, named by its first option (a fake model)."""

    def reply(request: Request) -> str:
        assert request.choices is not None
        return answers[request.choices[0].name]

    return ScriptedModel(reply)


INCIDENT = it.Incident(
    id="INC-1",
    service="checkout-api",
    title="5xx spike after deploy",
    description="Checkout returns 502 for a third of requests since the 14:02 deploy.",
    error_rate=0.33,
    p95_latency_ms=2400,
    customers_affected=1800,
    recent_deploy=True,
    alerts=["checkout-api 5xx > 5%"],
)

OUTAGE = {
    "sev1": pick("sev1"),
    "payments": pick("checkout"),
    "roll_back": pick("roll_back", service="checkout-api", reason="deploy at 14:02"),
    "page_on_call": pick(
        "page_on_call", message="checkout 502s", urgency="high", team="payments", incident_id="X"
    ),
}


async def test_outage_rolls_back_and_pages_the_owner() -> None:
    model = menu_model(OUTAGE)
    triage = await it.triage_incident(INCIDENT, runtime=Runtime(model=model))
    assert triage == it.Triage(
        incident_id="INC-1",
        severity="sev1",
        team="checkout",
        step=it.RunbookStep(
            step="roll_back", detail={"service": "checkout-api", "reason": "deploy at 14:02"}
        ),
        notification="paged checkout on-call (high)",
    )
    # Hidden parameters come from the context: the model's team and incident id are dropped.
    assert LEDGER == [
        {"kind": "rollback", "incident_id": "INC-1", "service": "checkout-api"},
        {"kind": "page", "incident_id": "INC-1", "team": "checkout", "urgency": "high"},
    ]


async def test_severity_and_owner_are_asked_before_the_runbook() -> None:
    model = menu_model(OUTAGE)
    await it.triage_incident(INCIDENT, runtime=Runtime(model=model))
    firsts = [r.choices[0].name for r in model.requests if r.choices]
    assert sorted(firsts[:2]) == ["payments", "sev1"]
    assert firsts[2:] == ["roll_back", "page_on_call"]


async def test_minor_incident_opens_a_ticket_and_pages_nobody() -> None:
    model = menu_model(
        {
            "sev1": pick("sev4"),
            "payments": pick("data"),
            "roll_back": pick("investigate", hypothesis="late upstream export"),
            "page_on_call": pick("open_ticket", summary="nightly report 20 min late"),
        }
    )
    triage = await it.triage_incident(INCIDENT, runtime=Runtime(model=model))
    assert triage.severity == "sev4"
    assert triage.notification == "ticket for data"
    assert [e["kind"] for e in LEDGER] == ["ticket"]


async def test_scale_out_replicas_are_bounded() -> None:
    answers = {**OUTAGE, "roll_back": pick("scale_out", service="checkout-api", replicas=500)}
    eng = Engine(model=menu_model(answers), store=MemoryStore())
    run = await eng.run(it.triage_incident, INCIDENT, run_id="inc")
    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.options == ["roll_back", "restart", "scale_out", "investigate"]
    resumed = await eng.resume(
        "inc", pick={"call": "scale_out", "args": {"service": "checkout-api", "replicas": 8}}
    )
    assert resumed.status == "completed"
    assert resumed.result["step"] == {
        "step": "scale_out",
        "detail": {"service": "checkout-api", "replicas": 8},
    }
