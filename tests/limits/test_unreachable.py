"""A provider that never answered and cannot be reached: its runs stop at once, naming it.

A provider that answered before keeps the breaker's usual behaviour: its connection
failures are transport failures, retried, counted, and waited for.
"""

from __future__ import annotations

import uuid

import anyio
import pytest
from virtual_clock import VirtualClock, virtual_time

from engine import (
    CircuitBreaker,
    CircuitOpenError,
    Engine,
    ProviderGuard,
    ProviderUnreachableError,
    Runtime,
    agentic_function,
    decision,
    transport_policy,
)
from engine.models import Message, Request, Response, SimulatedModel
from engine.store import MemoryStore

HELLO = Request(messages=[Message.of("user", "Hi")])


class Dead(SimulatedModel):
    """A model whose server is not listening while ``dead`` is set."""

    def __init__(self, clock: VirtualClock, *, dead: bool = True) -> None:
        # A name of its own: which providers answered is known for the whole process.
        super().__init__(seed=1, name=f"dead-{uuid.uuid4().hex[:8]}", sleep=clock.sleep)
        self.dead = dead
        self.attempts = 0

    async def complete(self, request: Request) -> Response:
        self.attempts += 1
        if self.dead:
            raise ProviderUnreachableError(
                "could not reach test at http://127.0.0.1:9/v1: Connection error.",
                provider="test",
                url="http://127.0.0.1:9/v1",
            )
        return await super().complete(request)


@agentic_function
async def route(ticket: str, runtime: Runtime | None = None) -> str:
    """One decision."""
    picked: str = await decision.make(f"Route {ticket}.", ["billing", "shipping"])
    return picked


def guard(clock: VirtualClock, **settings: object) -> ProviderGuard:
    return ProviderGuard(breaker=CircuitBreaker(**settings), clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]


async def test_unreachable_a_provider_that_never_answered_fails_its_calls_at_once() -> None:
    async with virtual_time() as clock:
        model = Dead(clock)
        guarded = guard(clock).wrap(model)

        with pytest.raises(CircuitOpenError) as first:
            await guarded.complete(HELLO)
        with pytest.raises(CircuitOpenError) as second:  # the breaker's wait mode, not waited
            await guarded.complete(HELLO)

        assert clock() == 0.0
        assert model.attempts == 1  # the second call is not sent
    for error in (first.value, second.value):
        assert str(error).startswith("could not reach test at http://127.0.0.1:9/v1")
        assert error.reason is not None


async def test_unreachable_calls_waiting_on_the_circuit_fail_with_the_first() -> None:
    async with virtual_time() as clock:
        model = Dead(clock)
        guarded = guard(clock, failures=1, reset_s=30.0).wrap(model)
        # Another failure opened the circuit first: calls wait for its probe.
        circuit = guarded.circuit  # type: ignore[attr-defined]
        circuit.failure(False)
        outcomes: list[str] = []

        async def call() -> None:
            try:
                await guarded.complete(HELLO)
            except CircuitOpenError as exc:
                outcomes.append(f"{clock():g}: {str(exc)[:18]}")

        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(call)

    # The probe at 30 s finds nothing listening; the two waiting behind it stop with it.
    assert sorted(outcomes) == ["30: could not reach te"] * 3
    assert model.attempts == 1


async def test_unreachable_a_probe_after_reset_s_that_gets_an_answer_closes_the_circuit() -> None:
    async with virtual_time() as clock:
        model = Dead(clock)
        guarded = guard(clock, reset_s=30.0).wrap(model)
        with pytest.raises(CircuitOpenError):
            await guarded.complete(HELLO)
        model.dead = False
        await clock.sleep(30.0)

        response = await guarded.complete(HELLO)

        assert response.text
        assert guarded.circuit.state == "closed"  # type: ignore[attr-defined]


async def test_unreachable_a_provider_that_was_up_keeps_the_breakers_behaviour() -> None:
    async with virtual_time() as clock:
        model = Dead(clock, dead=False)
        guarded = guard(clock, failures=2, reset_s=1000.0).wrap(model)
        await guarded.complete(HELLO)  # it answered once in this process
        model.dead = True

        with pytest.raises(ProviderUnreachableError):  # a transport failure, to be retried
            await guarded.complete(HELLO)
        with pytest.raises(ProviderUnreachableError):
            await guarded.complete(HELLO)

        assert guarded.circuit.state == "open"  # type: ignore[attr-defined]
        with pytest.raises(CircuitOpenError, match="circuit breaker is open"):
            await guarded.complete(HELLO)
        assert clock() == 300.0  # waited the breaker's max_wait_s, as for any outage


async def test_unreachable_a_batch_suspends_every_run_without_transport_retries() -> None:
    async with virtual_time() as clock:
        model = Dead(clock)
        runtime = Runtime(model=model, transport=transport_policy(sleep=clock.sleep))
        engine = Engine(runtime=runtime, store=MemoryStore(), limits=guard(clock))

        runs = await engine.run_many(route, [f"t{i}" for i in range(5)], concurrency=2)

        assert clock() == 0.0
        assert clock.sleeps == []
    assert [r.status for r in runs] == ["suspended"] * 5
    assert {r.error.kind for r in runs if r.error} == {"provider_unavailable"}
    assert all("http://127.0.0.1:9/v1" in r.error.message for r in runs if r.error)
