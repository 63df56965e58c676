"""Provider limits of one model: requests and tokens per minute, calls in flight, 429 pauses."""

from __future__ import annotations

import anyio
import pytest
from virtual_clock import VirtualClock, virtual_time

from engine import ModelLimits
from engine._limits._limiter import FIRST_REPLY_GUESS, ModelLimiter
from engine.models import Message, Request, Usage


def request(chars: int = 400, max_tokens: int | None = None) -> Request:
    return Request(messages=[Message.of("user", "x" * chars)], max_tokens=max_tokens)


def limiter(clock: VirtualClock, **limits: int) -> ModelLimiter:
    return ModelLimiter(ModelLimits(**limits), clock=clock, sleep=clock.sleep)


async def admit_all(lim: ModelLimiter, clock: VirtualClock, n: int, req: Request) -> list[float]:
    """Admit ``n`` concurrent calls; return the virtual time each was admitted at."""
    times: list[float] = []

    async def one() -> None:
        ticket = await lim.admit(req)
        times.append(clock())
        lim.release(ticket)

    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    return sorted(times)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("rpm", 0, id="rpm-zero"),
        pytest.param("tpm", -5, id="tpm-negative"),
        pytest.param("max_in_flight", 1.5, id="in-flight-float"),
    ],
)
def test_model_limits_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        ModelLimits(**{field: value})  # type: ignore[arg-type]


async def test_limiter_without_limits_admits_at_once_and_holds_nothing() -> None:
    lim = ModelLimiter()

    assert await lim.admit(request()) is None


async def test_limiter_rpm_admits_a_minute_of_requests_then_waits_for_the_window() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, rpm=4)

        times = await admit_all(lim, clock, 10, request())

    assert times == [0.0] * 4 + [60.0] * 4 + [120.0] * 2


async def test_limiter_pause_holds_every_call_until_it_ends() -> None:
    async with virtual_time() as clock:
        lim = ModelLimiter(None, clock=clock, sleep=clock.sleep)
        lim.pause(2.0)

        times = await admit_all(lim, clock, 3, request())

        assert times == [2.0, 2.0, 2.0]
        assert lim.paused_until == 0.0  # the pause is over: the hot path is free again


async def test_limiter_pause_without_retry_after_waits_a_second() -> None:
    async with virtual_time() as clock:
        lim = ModelLimiter(None, clock=clock, sleep=clock.sleep)
        lim.pause(None)

        assert await admit_all(lim, clock, 1, request()) == [1.0]


async def test_limiter_max_in_flight_caps_calls_waiting_for_a_reply() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, max_in_flight=2)
        starts: list[float] = []

        async def call() -> None:
            ticket = await lim.admit(request())
            starts.append(clock())
            await clock.sleep(1.0)
            lim.release(ticket)

        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(call)

    assert sorted(starts) == [0.0, 0.0, 1.0, 1.0, 2.0]


async def test_limiter_estimates_tokens_then_corrects_them_from_usage() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, tpm=10_000)

        ticket = await lim.admit(request(chars=400))
        assert lim.tokens_in_window == 100 + FIRST_REPLY_GUESS
        lim.settle(ticket, Usage(input_tokens=100, output_tokens=7))
        assert lim.tokens_in_window == 107
        # The next estimate uses the largest recent reply instead of the first guess.
        await lim.admit(request(chars=400))
        assert lim.tokens_in_window == 107 + 107


async def test_limiter_estimate_uses_max_tokens_when_the_request_sets_it() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, tpm=10_000)

        await lim.admit(request(chars=40, max_tokens=50))

        assert lim.tokens_in_window == 10 + 50


async def test_limiter_usage_without_tokens_keeps_the_estimate() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, tpm=10_000)
        ticket = await lim.admit(request(chars=400))

        lim.settle(ticket, Usage())

        assert lim.tokens_in_window == 100 + FIRST_REPLY_GUESS


async def test_limiter_a_correction_wakes_the_waiter_before_the_window_moves() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, tpm=800)
        first = await lim.admit(request(chars=400))  # 100 + 256 estimated
        second = await lim.admit(request(chars=400))  # 712 in the window: a third won't fit
        admitted: list[float] = []

        async def third() -> None:
            await lim.admit(request(chars=400))
            admitted.append(clock())

        async with anyio.create_task_group() as tg:
            tg.start_soon(third)
            await clock.sleep(5.0)
            assert admitted == []  # still waiting
            lim.settle(first, Usage(input_tokens=100, output_tokens=10))
            lim.settle(second, Usage(input_tokens=100, output_tokens=10))

    assert admitted == [5.0]  # woken by the corrections, not by the window


async def test_limiter_is_fifo_so_a_large_call_is_not_starved_by_small_ones() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, tpm=1_000)
        order: list[str] = []
        await lim.admit(request(chars=2_400))  # 600 + 256: the window is nearly full

        async def call(name: str, chars: int) -> None:
            await lim.admit(request(chars=chars))
            order.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "large", 2_000)
            await clock.sleep(0.1)
            for n in range(5):
                tg.start_soon(call, f"small{n}", 4)

    # The small calls would fit at once, but they queue behind the large one.
    assert order[0] == "large"


async def test_limiter_a_call_larger_than_the_limit_goes_alone_in_an_empty_window() -> None:
    async with virtual_time() as clock:
        lim = limiter(clock, tpm=100)
        await lim.admit(request(chars=40, max_tokens=10))  # 20 tokens

        times = await admit_all(lim, clock, 1, request(chars=4_000))

    assert times == [60.0]
