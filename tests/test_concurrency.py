"""Many decisions share one event loop without blocking or seeing each other's state."""

from __future__ import annotations

import json
import time

import anyio
import pytest

from engine import Runtime, agentic_function, decision
from engine.models import Request, ScriptedModel

OPTIONS: dict[str, object] = {"approve": "APPROVED", "reject": "REJECTED"}


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def test_concurrency_fifty_decisions_overlap_their_model_waits() -> None:
    async def slow_reply(request: Request) -> str:
        await anyio.sleep(0.2)
        return pick("approve")

    runtime = Runtime(ScriptedModel(slow_reply))
    results: list[object] = []

    async def one() -> None:
        results.append(await decision.make("Pick one.", OPTIONS, runtime=runtime))

    started = time.perf_counter()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(one)
    elapsed = time.perf_counter() - started

    assert results == ["APPROVED"] * 50
    assert elapsed < 0.45
    assert len(runtime.trace.find("decision")) == 50


async def test_concurrency_blocking_def_option_does_not_stall_other_decisions() -> None:
    def archive() -> str:
        """A plain def that blocks its thread."""
        time.sleep(0.2)
        return "archived"

    async def fast_reply(request: Request) -> str:
        await anyio.sleep(0.02)
        return pick("approve")

    blocking = Runtime(ScriptedModel([pick("archive")]))
    fast = Runtime(ScriptedModel(fast_reply))
    finished: dict[str, float] = {}
    started = time.perf_counter()

    async def run_blocking() -> None:
        assert await decision.make("Pick.", [archive], runtime=blocking) == "archived"
        finished["blocking"] = time.perf_counter() - started

    async def run_fast() -> None:
        await anyio.sleep(0.01)  # let the blocking option start first
        assert await decision.make("Pick.", OPTIONS, runtime=fast) == "APPROVED"
        finished["fast"] = time.perf_counter() - started

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_blocking)
            tg.start_soon(run_fast)

    assert finished["blocking"] >= 0.2
    assert finished["fast"] < 0.15


@agentic_function
async def ticket(n: int, runtime: Runtime | None = None) -> object:
    first = await decision.make("Which ticket?", [f"t{n}", "other"])
    await anyio.sleep(0.001 * (n % 5))
    second = await decision.make("Which ticket again?", [f"t{n}", "other"])
    return first, second


@pytest.mark.parametrize("runs", [2, 40], ids=["two", "forty"])
async def test_concurrency_runs_never_see_each_others_ambient_runtime(runs: int) -> None:
    def echo_own(n: int) -> Runtime:
        async def reply(request: Request) -> str:
            await anyio.sleep(0.001 * ((n * 7) % 5))  # interleave the runs
            return pick(f"t{n}")

        return Runtime(ScriptedModel(reply))

    runtimes = [echo_own(n) for n in range(runs)]
    results: dict[int, object] = {}

    async def one(n: int) -> None:
        results[n] = await ticket(n, runtime=runtimes[n])

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for n in range(runs):
                tg.start_soon(one, n)

    assert results == {n: (f"t{n}", f"t{n}") for n in range(runs)}
    assert [rt.model.calls for rt in runtimes] == [2] * runs  # type: ignore[attr-defined]
    for rt in runtimes:
        [frame] = rt.trace.find("frame")
        assert [d.parent_id for d in rt.trace.find("decision")] == [frame.id, frame.id]
