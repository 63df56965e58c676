"""engine.gather and engine.map from the user's side: order, failures, cancellation, limits."""

from __future__ import annotations

import anyio
import pytest

import engine
from engine._base._context import using_node
from engine._base._trace import Trace


async def test_gather_returns_results_in_argument_order() -> None:
    async def late(value: int, delay: float) -> int:
        await anyio.sleep(delay)
        return value

    assert await engine.gather(late(1, 0.02), late(2, 0.0), lambda: late(3, 0.01)) == [1, 2, 3]


async def test_gather_raises_the_failure_itself_not_an_error_of_a_cancelled_sibling() -> None:
    cancelled: list[str] = []

    async def tidy_up_badly() -> None:
        try:
            await anyio.sleep(5)
        except BaseException:
            cancelled.append("b0")
            raise RuntimeError("cleanup failed") from None

    async def fail() -> None:
        await anyio.sleep(0.01)
        raise ValueError("the real failure")

    with anyio.fail_after(2), pytest.raises(ValueError, match="the real failure"):
        await engine.gather(tidy_up_badly(), fail())
    assert cancelled == ["b0"]


async def test_map_keeps_order_and_its_concurrency() -> None:
    running = peak = 0

    async def square(x: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.005)
        running -= 1
        return x * x

    assert await engine.map(square, range(8), concurrency=3) == [x * x for x in range(8)]
    assert peak == 3


async def test_gather_closes_the_branches_it_cancelled() -> None:
    trace = Trace()
    root = trace.open("frame", "flow", parent=None)

    async def slow() -> None:
        await anyio.sleep(5)

    async def fail() -> None:
        raise ValueError("no")

    with using_node(root), anyio.fail_after(2), pytest.raises(ValueError, match="no"):
        await engine.gather(slow(), fail())

    branches = {n.name: n.status for n in trace.nodes if n.kind == "branch"}
    assert branches == {"gather": "error", "0": "cancelled", "1": "error"}
