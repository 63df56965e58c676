"""Layer 4: a run policy resumes runs that suspended for a reason worth another try."""

from __future__ import annotations

import pytest
from virtual_clock import VirtualClock, virtual_time

from engine import (
    CircuitBreaker,
    Engine,
    ProviderGuard,
    ProviderUnavailableError,
    RetryEvent,
    RunBudget,
    Runtime,
    agentic_function,
    decision,
    run_policy,
    transport_policy,
)
from engine.models import Request, Response, SimulatedModel
from engine.store import MemoryStore


class Outage(SimulatedModel):
    """A simulated model whose provider is down until ``up_at`` (virtual seconds)."""

    def __init__(self, clock: VirtualClock, up_at: float) -> None:
        super().__init__(seed=7, name="outage", sleep=clock.sleep)
        self.clock = clock
        self.up_at = up_at

    async def complete(self, request: Request) -> Response:
        if self.clock() < self.up_at:
            raise ProviderUnavailableError("503 from the test", provider="outage")
        return await super().complete(request)


@agentic_function
async def route(ticket: str, runtime: Runtime | None = None) -> str:
    """One decision."""
    picked: str = await decision.make(f"Route {ticket}.", ["billing", "shipping"])
    return picked


def engine(model: SimulatedModel, clock: VirtualClock, attempts: int, **options: object) -> Engine:
    guard = ProviderGuard(
        breaker=CircuitBreaker(failures=2, reset_s=10.0, on_open="suspend"),
        clock=clock,
        sleep=clock.sleep,
    )
    runtime = Runtime(model=model, transport=transport_policy(attempts=3, sleep=clock.sleep))
    policy = run_policy(attempts, initial=5.0, sleep=clock.sleep)
    return Engine(
        runtime=runtime,
        store=MemoryStore(),
        limits=guard,
        run_policy=policy,
        **options,  # type: ignore[arg-type]
    )


def test_run_policy_rejects_no_attempts() -> None:
    with pytest.raises(ValueError, match="attempts"):
        run_policy(0)


async def test_run_policy_resumes_a_run_parked_by_the_breaker_until_it_completes() -> None:
    events: list[RetryEvent] = []
    async with virtual_time() as clock:
        model = Outage(clock, up_at=12.0)
        eng = engine(model, clock, attempts=5, on_retry=events.append)

        run = await eng.run(route, "t1", run_id="r1")

    assert run.status == "completed"
    assert run.resumes >= 1
    assert run.retries["run"] == run.resumes
    layers = [e.layer for e in events]
    assert "run" in layers
    assert "transport" in layers
    ledger = await eng.retries("r1")
    assert [e["layer"] for e in ledger if e["layer"] == "run"] == ["run"] * run.resumes
    trace = await eng.trace("r1")
    assert trace is not None
    assert any(n["data"].get("layer") == "run" for n in trace["nodes"])


async def test_run_policy_that_runs_out_returns_the_run_suspended() -> None:
    async with virtual_time() as clock:
        eng = engine(Outage(clock, up_at=1e9), clock, attempts=2)

        run = await eng.run(route, "t1")

    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "provider_unavailable"
    assert run.resumes == 1


async def test_run_policy_leaves_decision_failures_and_budgets_alone() -> None:
    async with virtual_time() as clock:
        bad = SimulatedModel(faults={"no_json": 1.0}, sleep=clock.sleep)
        eng = engine(bad, clock, attempts=5)
        spent = engine(Outage(clock, up_at=1e9), clock, attempts=5, budget=RunBudget(attempts=1))

        decided = await eng.run(route, "t1")
        budgeted = await spent.run(route, "t2")

    assert (decided.status, decided.resumes) == ("suspended", 0)
    assert decided.error is not None
    assert decided.error.kind == "no_action"
    assert (budgeted.status, budgeted.resumes) == ("suspended", 0)
    assert budgeted.error is not None
    assert budgeted.error.kind == "budget_exceeded"


async def test_run_policy_applies_to_runs_of_a_batch() -> None:
    async with virtual_time() as clock:
        eng = engine(Outage(clock, up_at=8.0), clock, attempts=5)

        runs = await eng.run_many(route, ["t1", "t2", "t3"])

    assert [r.status for r in runs] == ["completed"] * 3
