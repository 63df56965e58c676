"""The circuit breaker of a provider: it opens after failures in a row, a probe closes it."""

from __future__ import annotations

import anyio
import pytest
from virtual_clock import VirtualClock, virtual_time

from engine import (
    CircuitBreaker,
    CircuitOpenError,
    Engine,
    ProviderGuard,
    ProviderUnavailableError,
    RateLimitError,
    Runtime,
    agentic_function,
    decision,
    transport_policy,
)
from engine._limits._breaker import Circuit
from engine.models import Request, Response, SimulatedModel
from engine.store import MemoryStore


class Outage(SimulatedModel):
    """A simulated model whose provider is down while ``down`` is set."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(seed=1, name="outage", sleep=clock.sleep)
        self.down = True
        self.attempts = 0

    async def complete(self, request: Request) -> Response:
        self.attempts += 1
        if self.down:
            raise ProviderUnavailableError("503 from the test", provider="outage")
        return await super().complete(request)


@agentic_function
async def route(ticket: str, runtime: Runtime | None = None) -> str:
    """One decision."""
    picked: str = await decision.make(f"Route {ticket}.", ["billing", "shipping"])
    return picked


def circuit(clock: VirtualClock, **settings: object) -> Circuit:
    return Circuit("p", CircuitBreaker(**settings), clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]


def engine(model: Outage, clock: VirtualClock, breaker: CircuitBreaker) -> Engine:
    guard = ProviderGuard(breaker=breaker, clock=clock, sleep=clock.sleep)
    runtime = Runtime(model=model, transport=transport_policy(attempts=6, sleep=clock.sleep))
    return Engine(runtime=runtime, store=MemoryStore(), limits=guard)


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"failures": 0}, id="no-failures"),
        pytest.param({"reset_s": -1.0}, id="negative-reset"),
        pytest.param({"on_open": "explode"}, id="unknown-mode"),
    ],
)
def test_circuit_breaker_rejects_bad_settings(settings: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"CircuitBreaker|on_open"):
        CircuitBreaker(**settings)  # type: ignore[arg-type]


async def test_circuit_opens_after_failures_in_a_row_and_a_success_resets_the_count() -> None:
    async with virtual_time() as clock:
        c = circuit(clock, failures=3, on_open="suspend")
        c.failure(False)
        c.failure(False)
        c.success(False)
        c.failure(False)
        c.failure(False)
        assert c.state == "closed"
        c.failure(False)
        assert c.state == "open"

        with pytest.raises(CircuitOpenError, match="circuit breaker is open") as info:
            await c.enter()

    assert info.value.retry_in_s == pytest.approx(30.0)


async def test_circuit_lets_one_probe_through_after_reset_and_its_success_closes_it() -> None:
    async with virtual_time() as clock:
        c = circuit(clock, failures=1, reset_s=10.0, on_open="suspend")
        c.failure(False)
        await clock.sleep(10.0)

        probe = await c.enter()
        assert probe is True
        assert c.state == "half_open"
        with pytest.raises(CircuitOpenError):
            await c.enter()  # one probe at a time
        c.success(probe)

        assert c.state == "closed"
        assert await c.enter() is False


async def test_circuit_failed_probe_opens_it_again_for_another_reset() -> None:
    async with virtual_time() as clock:
        c = circuit(clock, failures=1, reset_s=10.0, on_open="suspend")
        c.failure(False)
        await clock.sleep(10.0)
        c.failure(await c.enter())

        assert c.state == "open"
        assert c.opened_at == 10.0
        assert c.opens == 2


async def test_circuit_in_wait_mode_callers_wait_for_the_probe_then_go() -> None:
    async with virtual_time() as clock:
        c = circuit(clock, failures=1, reset_s=10.0)
        c.failure(False)
        went: list[tuple[float, bool]] = []

        async def call() -> None:
            probe = await c.enter()
            went.append((clock(), probe))
            if probe:
                await clock.sleep(1.0)  # the probe call takes a second, then succeeds
                c.success(probe)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(call)

    assert went == [(10.0, True), (11.0, False), (11.0, False)]


async def test_circuit_in_wait_mode_gives_up_after_max_wait() -> None:
    async with virtual_time() as clock:
        c = circuit(clock, failures=1, reset_s=100.0, max_wait_s=5.0)
        c.failure(False)

        with pytest.raises(CircuitOpenError):
            await c.enter()

        assert clock() == 5.0


async def test_breaker_opens_and_the_run_parks_then_a_probe_closes_it_on_resume() -> None:
    async with virtual_time() as clock:
        model = Outage(clock)
        eng = engine(model, clock, CircuitBreaker(failures=3, reset_s=10.0, on_open="suspend"))

        run = await eng.run(route, "t1", run_id="r1")

        assert run.status == "suspended"
        assert run.error is not None
        assert run.error.kind == "provider_unavailable"
        assert "circuit breaker is open" in run.error.message
        assert model.attempts == 3  # the fourth attempt never reached the provider
        breaker = eng.guard.circuit(model)
        assert breaker is not None
        assert breaker.state == "open"

        model.down = False
        await clock.sleep(10.0)
        resumed = await eng.resume("r1")

    assert resumed.status == "completed"
    assert breaker.state == "closed"


async def test_breaker_in_wait_mode_holds_the_call_until_the_provider_is_back() -> None:
    async with virtual_time() as clock:
        model = Outage(clock)
        eng = engine(model, clock, CircuitBreaker(failures=2, reset_s=10.0, on_open="wait"))

        async def recover() -> None:
            await clock.sleep(5.0)
            model.down = False

        async with anyio.create_task_group() as tg:
            tg.start_soon(recover)
            run = await eng.run(route, "t1")

        assert run.status == "completed"
        assert clock() >= 10.0  # waited for the probe, not for the transport's backoff
        breaker = eng.guard.circuit(model)
        assert breaker is not None
        assert (breaker.state, breaker.opens) == ("closed", 1)


async def test_breaker_counts_no_rate_limit_as_a_failure() -> None:
    async with virtual_time() as clock:
        guard = ProviderGuard(breaker=CircuitBreaker(failures=1), clock=clock, sleep=clock.sleep)
        model = SimulatedModel(faults={"rate_limit": 1.0, "retry_after": 0.0})
        guarded = guard.wrap(model)

        with pytest.raises(RateLimitError):
            await guarded.complete(Request(messages=[]))

        breaker = guard.circuit(model)
        assert breaker is not None
        assert breaker.state == "closed"
