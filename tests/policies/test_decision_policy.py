"""Layer 2: a failed decision asked again from scratch, down a chain of fallback models."""

from __future__ import annotations

import json

import pytest

from engine import (
    DecisionError,
    Engine,
    RetryEvent,
    Runtime,
    agentic_function,
    decision,
    decision_policy,
)
from engine.models import ScriptedModel, SimulatedModel
from engine.store import MemoryStore

ROUTES = ["billing", "shipping", "returns"]


@agentic_function
async def route(ticket: str, runtime: Runtime | None = None) -> str:
    """One decision."""
    picked: str = await decision.make(f"Route {ticket}.", ROUTES)
    return picked


@agentic_function
async def route_then_close(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Two decisions."""
    first: str = await decision.make(f"Route {ticket}.", ROUTES)
    second: str = await decision.make(f"Close {ticket}?", ["close", "reopen"])
    return [first, second]


def cheap() -> SimulatedModel:
    """A model whose every reply holds no pick."""
    return SimulatedModel(seed=1, faults={"no_json": 1.0}, name="cheap")


def test_decision_policy_default_attempts_follow_the_chain() -> None:
    strong = SimulatedModel(name="strong")

    assert decision_policy().retrying.stop.max_attempt_number == 2  # type: ignore[attr-defined]
    chain = decision_policy(fallback=[strong, SimulatedModel(name="best")])
    assert chain.retrying.stop.max_attempt_number == 3  # type: ignore[attr-defined]
    assert chain.model_for(1, strong) is strong
    assert chain.model_for(9, strong).name == "best"


def test_decision_policy_rejects_no_attempts() -> None:
    with pytest.raises(ValueError, match="attempts"):
        decision_policy(0)


async def test_fallback_chain_moves_to_the_second_model_after_a_decision_error() -> None:
    first, strong = cheap(), SimulatedModel(seed=2, name="strong")
    runtime = Runtime(model=first, decision=decision_policy(fallback=[strong]))
    events: list[RetryEvent] = []

    picked = await runtime.exec("Route the ticket.", choices=ROUTES, on_retry=events.append)

    assert picked in ROUTES
    assert (first.calls, strong.calls) == (2, 1)  # a pick and a re-pick, then the fallback
    assert [(e.layer, e.attempt) for e in events] == [("parse", 1), ("decision", 2)]
    retry = runtime.trace.find("retry")
    assert [(n.data["layer"], n.data["model"], n.status) for n in retry] == [
        ("decision", "strong", "ok")
    ]


async def test_fallback_asks_the_original_request_not_the_failed_conversation() -> None:
    first = ScriptedModel(["no idea", "still none"])
    strong = ScriptedModel([json.dumps({"call": "returns"})])
    runtime = Runtime(model=first, decision=decision_policy(fallback=[strong]))

    assert await runtime.exec("Route the ticket.", choices=ROUTES) == "returns"

    asked = strong.requests[0]
    assert [m.role for m in asked.messages] == ["user"]
    assert asked.messages[0].text.startswith("Route the ticket.")


async def test_decision_policy_that_runs_out_raises_the_last_decision_error() -> None:
    runtime = Runtime(model=cheap(), decision=decision_policy(fallback=[cheap()]))

    with pytest.raises(DecisionError, match="no_action"):
        await runtime.exec("Route the ticket.", choices=ROUTES)


async def test_without_a_decision_policy_a_failed_decision_raises_at_once() -> None:
    model = cheap()

    with pytest.raises(DecisionError):
        await Runtime(model=model).exec("Route the ticket.", choices=ROUTES)

    assert model.calls == 2


async def test_engine_journals_the_fallback_pick_and_the_ledger_holds_both_layers() -> None:
    store = MemoryStore()
    strong = SimulatedModel(seed=2, name="strong")
    eng = Engine(model=cheap(), store=store, decision_policy=decision_policy(fallback=[strong]))

    run = await eng.run(route, "t1", run_id="r1")

    assert run.status == "completed"
    assert run.retries == {"parse": 1, "decision": 1}
    picks = [r for r in await store.load_journal("r1") if r.kind == "pick"]
    assert [p.actor for p in picks] == ["retry"]
    ledger = await eng.retries("r1")
    assert [(e["layer"], e["attempt"], e["kind"]) for e in ledger] == [
        ("parse", 1, "no_action"),
        ("decision", 2, "no_action"),
    ]


async def test_resume_replays_the_fallback_attempts_without_calling_any_model() -> None:
    store = MemoryStore()
    strong = ScriptedModel([json.dumps({"call": "billing"}), "?", "??"])
    policy = decision_policy(fallback=[strong])
    first = ScriptedModel(["no", "none", "nothing", "nil"])
    eng = Engine(model=first, store=store, decision_policy=policy)
    run = await eng.run(route_then_close, "t1", run_id="r1")
    assert run.status == "suspended"  # the second decision failed on both models
    assert run.retries == {"parse": 3, "decision": 2}

    fresh = ScriptedModel([json.dumps({"call": "close"})])
    later = Engine(model=fresh, store=store, decision_policy=decision_policy(fallback=[fresh]))
    resumed = await later.resume("r1")

    assert resumed.status == "completed"
    assert resumed.result == ["billing", "close"]
    assert fresh.calls == 1  # the first decision, fallback included, came from the journal
    assert resumed.retries == {"parse": 3, "decision": 2}
