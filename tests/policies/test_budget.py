"""A run's budget (retry attempts, tokens, wall time) stops it, suspended, across resumes."""

from __future__ import annotations

import anyio
import pytest

from engine import (
    Engine,
    ProviderUnavailableError,
    RunBudget,
    Runtime,
    agentic_function,
    decision,
    transport_policy,
)
from engine.models import Request, Response, SimulatedModel
from engine.store import MemoryStore


async def no_wait(seconds: float) -> None:
    await anyio.lowlevel.checkpoint()


class Down(SimulatedModel):
    """A simulated model whose provider fails every call while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__(seed=4, name="down")
        self.down = True
        self.attempts = 0

    async def complete(self, request: Request) -> Response:
        self.attempts += 1
        if self.down:
            raise ProviderUnavailableError("503 from the test", provider="down")
        return await super().complete(request)


@agentic_function
async def three_routes(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Three decisions."""
    return [
        await decision.make(f"Route {ticket}, step {n}.", ["billing", "shipping"]) for n in range(3)
    ]


@agentic_function
async def slow(ticket: str, runtime: Runtime | None = None) -> str:
    """A decision, then a long wait."""
    picked: str = await decision.make(f"Route {ticket}.", ["billing", "shipping"])
    await anyio.sleep(5.0)
    return picked


def engine(model: SimulatedModel, store: MemoryStore, budget: RunBudget) -> Engine:
    runtime = Runtime(model=model, transport=transport_policy(attempts=10, sleep=no_wait))
    return Engine(runtime=runtime, store=store, budget=budget, breaker=None)


def test_run_budget_rejects_negative_limits() -> None:
    with pytest.raises(ValueError, match="tokens"):
        RunBudget(tokens=-1)


async def test_an_attempts_budget_stops_the_run_and_suspends_it_with_the_reason() -> None:
    model = Down()
    eng = engine(model, MemoryStore(), RunBudget(attempts=2))

    run = await eng.run(three_routes, "t1", run_id="r1")

    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "budget_exceeded"
    assert "attempts budget ran out (2 spent of 2)" in run.error.message
    assert run.retries == {"transport": 2}
    assert model.attempts == 3  # the first try and two retries; the third retry never went


async def test_the_attempts_budget_survives_a_resume() -> None:
    store, model = MemoryStore(), Down()
    await engine(model, store, RunBudget(attempts=2)).run(three_routes, "t1", run_id="r1")

    again = await engine(model, store, RunBudget(attempts=2)).resume("r1")

    assert again.status == "suspended"
    assert again.error is not None
    assert again.error.kind == "budget_exceeded"
    assert model.attempts == 4  # one more first try; its retry was already over budget
    model.down = False
    done = await engine(model, store, RunBudget(attempts=10)).resume("r1")
    assert done.status == "completed"


async def test_a_tokens_budget_stops_the_run_after_the_call_that_crossed_it() -> None:
    store, model = MemoryStore(), SimulatedModel(seed=5)

    run = await engine(model, store, RunBudget(tokens=40)).run(three_routes, "t1", run_id="r1")

    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "budget_exceeded"
    assert "tokens budget ran out" in run.error.message
    assert run.model_calls == 2  # about 30 tokens a call: the second one crossed 40
    assert run.usage.total_tokens > 40
    # The reply that crossed the budget was journaled: a resume does not pay for it again.
    resumed = await engine(model, store, RunBudget(tokens=10_000)).resume("r1")
    assert resumed.status == "completed"
    assert model.calls == 3


async def test_a_wall_time_budget_suspends_the_run_and_counts_across_resumes() -> None:
    store, model = MemoryStore(), SimulatedModel(seed=6)
    eng = engine(model, store, RunBudget(wall_s=0.05))

    run = await eng.run(slow, "t1", run_id="r1")

    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "budget_exceeded"
    assert "wall_s budget ran out" in run.error.message
    assert run.active_s >= 0.05
    again = await eng.resume("r1")  # the run spent its wall time already: it stops at once
    assert again.status == "suspended"
    assert model.calls == 1
