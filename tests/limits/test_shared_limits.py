"""Limits shared by every run: a 429 pauses the model for all, tokens per minute hold."""

from __future__ import annotations

import anyio
from virtual_clock import VirtualClock, virtual_time

from engine import (
    Engine,
    ModelLimits,
    ProviderGuard,
    RateLimitError,
    Runtime,
    agentic_function,
    decision,
    transport_policy,
)
from engine._limits._guard import GuardedModel, provider_of
from engine.models import OpenAIModel, Request, Response, SimulatedModel
from engine.store import MemoryStore


class Timed(SimulatedModel):
    """A simulated model that notes when each call reached it, and may answer one 429."""

    def __init__(self, clock: VirtualClock, *, rate_limit_first: bool = False) -> None:
        super().__init__(seed=3, latency=0.5, sleep=clock.sleep, name="timed")
        self.clock = clock
        self.rate_limit_first = rate_limit_first
        self.starts: list[float] = []
        self.usage: list[tuple[float, int]] = []

    async def complete(self, request: Request) -> Response:
        now = self.clock()
        self.starts.append(now)
        if self.rate_limit_first:
            self.rate_limit_first = False
            await self.clock.sleep(0.5)
            raise RateLimitError("429 from the test", retry_after=2.0, provider="timed")
        response = await super().complete(request)
        self.usage.append((now, response.usage.total_tokens))
        return response


@agentic_function
async def two_steps(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Two decisions in a row."""
    first: str = await decision.make(f"Classify {ticket}.", ["billing", "shipping"])
    second: str = await decision.make(f"Act on {ticket}.", ["refund", "close"])
    return [first, second]


@agentic_function
async def many_steps(ticket: str, runtime: Runtime | None = None) -> int:
    """Eight decisions in a row: a steady stream of calls."""
    for n in range(8):
        await decision.make(f"Step {n} of ticket {ticket}: pick one.", ["left", "right"])
    return 8


def engine_on(model: Timed, clock: VirtualClock, limits: ModelLimits | None = None) -> Engine:
    guard = ProviderGuard(limits, clock=clock, sleep=clock.sleep)
    runtime = Runtime(model=model, transport=transport_policy(sleep=clock.sleep))
    return Engine(runtime=runtime, store=MemoryStore(), limits=guard)


async def test_a_429_with_retry_after_2s_pauses_every_run_on_that_model() -> None:
    async with virtual_time() as clock:
        model = Timed(clock, rate_limit_first=True)
        eng = engine_on(model, clock)

        runs = await eng.run_many(two_steps, ["t1", "t2", "t3"], concurrency=3)

    assert [r.status for r in runs] == ["completed"] * 3
    # All three first calls went at 0; one got the 429 at 0.5 s. Without the shared pause
    # the other two runs would ask their second decision at 0.5 s: they waited for 2.5 s.
    assert model.starts[:3] == [0.0, 0.0, 0.0]
    assert min(model.starts[3:]) >= 2.5
    limiter = eng.guard.limiter(model)
    assert limiter.pauses == 1


async def test_the_window_keeps_tokens_per_minute_under_the_limit_over_simulated_minutes() -> None:
    tpm = 4_000
    async with virtual_time() as clock:
        model = Timed(clock)
        eng = engine_on(model, clock, ModelLimits(tpm=tpm))

        runs = await eng.run_many(many_steps, [f"t{n}" for n in range(30)], concurrency=30)

    assert all(r.status == "completed" for r in runs)
    spent = sorted(model.usage)
    assert spent[-1][0] >= 120.0  # the calls spread over more than two simulated minutes
    for start, _ in spent:
        window = sum(tokens for at, tokens in spent if start <= at < start + 60.0)
        assert window <= tpm
    first_minute = sum(tokens for at, tokens in spent if at < 60.0)
    assert first_minute >= 0.8 * tpm  # and the limit is used, not wasted


async def test_engines_given_one_guard_share_its_limits() -> None:
    async with virtual_time() as clock:
        model = Timed(clock)
        guard = ProviderGuard(ModelLimits(rpm=2), clock=clock, sleep=clock.sleep)
        runtime = Runtime(model=model, transport=transport_policy(sleep=clock.sleep))
        one = Engine(runtime=runtime, store=MemoryStore(), limits=guard)
        two = Engine(runtime=runtime, store=MemoryStore(), limits=guard)

        async with anyio.create_task_group() as tg:
            for eng in (one, two, one):
                tg.start_soon(eng.run, two_steps, "t")

    assert sorted(model.starts) == [0.0, 0.0, 60.0, 60.0, 120.0, 120.0]


def test_limits_by_model_name_leave_other_models_unlimited() -> None:
    guard = ProviderGuard({"cheap": ModelLimits(rpm=10)})

    assert guard.limiter("cheap").limits.rpm == 10
    assert guard.limiter("strong").limits == ModelLimits()


def test_guarded_model_reads_through_to_the_model_and_is_wrapped_once() -> None:
    guard = ProviderGuard()
    model = OpenAIModel("gpt-test", base_url="http://localhost:9/v1", api_key="k")

    guarded = guard.wrap(model)

    assert isinstance(guarded, GuardedModel)
    assert guard.wrap(model) is guarded
    assert guard.wrap(guarded) is guarded
    assert guarded.name == "gpt-test"
    assert guarded.base_url == "http://localhost:9/v1"
    assert provider_of(model) == "OpenAIModel:http://localhost:9/v1"
    assert provider_of(SimulatedModel(name="x")) == "SimulatedModel:x"


def test_guard_forgets_wrappers_past_its_cache_but_keeps_limits_by_name() -> None:
    guard = ProviderGuard(ModelLimits(rpm=5))
    first = SimulatedModel(name="same")
    limiter = guard.limiter(first)

    for n in range(300):
        guard.wrap(SimulatedModel(name=f"m{n}"))

    assert len(guard._wrapped) <= 256
    assert guard.limiter(guard.wrap(first)) is limiter
