"""Leases of runs started one by one: kept alive while they run, by one clock for them all."""

from __future__ import annotations

import time

import anyio

from engine import Engine, Runtime, agentic_function, decision
from engine.models import ScriptedModel
from engine.store import MemoryStore, Run, Store

LEASE_S = 0.3
GO = '{"call": "go"}'


async def slow_go() -> str:
    """Take longer than a lease, then go."""
    await anyio.sleep(LEASE_S * 3)
    return "went"


async def lease_left(store: Store, run_id: str, after_s: float) -> float:
    """Seconds left on the run's lease ``after_s`` from now (past a lease, it was renewed)."""
    await anyio.sleep(after_s)
    run = await store.get_run(run_id)
    assert run is not None
    return (run.lease_expires_at or 0) - time.time()


@agentic_function
async def slow_flow(item: str, runtime: Runtime | None = None) -> str:
    """One decision whose step outlasts several leases."""
    return str(await decision.make(f"Handle {item}.", {"go": slow_go}))


async def test_a_lone_run_keeps_its_lease_while_it_outlasts_it(store: Store) -> None:
    engine = Engine(model=ScriptedModel([GO]), store=store, lease_s=LEASE_S)
    rival = Engine(model=ScriptedModel([GO]), store=store, lease_s=LEASE_S)
    seen: list[float] = []
    taken: list[str] = []

    async def watch() -> None:
        seen.append(await lease_left(store, "lone", LEASE_S * 2))
        taken.extend(r.run_id for r in await rival.recover(flows=[slow_flow]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        run = await engine.run(slow_flow, "box", run_id="lone")

    assert run.status == "completed"
    assert run.result == "went"
    assert seen, "the watcher saw nothing"
    assert seen[0] > 0, "the lease ran out while the run was still running"
    assert taken == []  # a live lease: nobody took the run over


async def test_many_runs_in_flight_share_the_clock_and_each_keeps_its_lease(
    store: Store,
) -> None:
    engine = Engine(model=ScriptedModel([GO] * 8), store=store, lease_s=LEASE_S)
    runs: dict[str, object] = {}
    expired: list[str] = []

    async def one(i: int) -> None:
        await anyio.sleep(i * LEASE_S / 4)  # started at different points of the clock
        runs[f"r{i}"] = await engine.run(slow_flow, f"item {i}", run_id=f"r{i}")

    async def watch() -> None:
        for _ in range(4):
            await anyio.sleep(LEASE_S / 2)
            now = time.time()
            running = await store.list_runs(status="running")
            expired.extend(r.run_id for r in running if (r.lease_expires_at or 0) < now)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        for i in range(8):
            tg.start_soon(one, i)

    assert expired == []
    assert sorted(runs) == [f"r{i}" for i in range(8)]
    assert all(getattr(r, "status", None) == "completed" for r in runs.values())
    # The clock stops at its first tick with no run in flight: nothing is left scheduled.
    await anyio.sleep(LEASE_S / 3 + 0.05)
    assert engine._executor.leases._timer is None


@agentic_function
async def quick_flow(item: str, runtime: Runtime | None = None) -> str:
    """One decision, over at once."""
    return str(await decision.make(f"Handle {item}.", ["go"]))


async def test_runs_one_after_another_share_one_timer_and_closing_disarms_it(
    store: Store,
) -> None:
    engine = Engine(model=ScriptedModel([GO] * 3), store=store, lease_s=LEASE_S)
    leases = engine._executor.leases
    first = await engine.run(quick_flow, "a", run_id="a")
    timer = leases._timer
    assert timer is not None  # left armed after the run: the next run needs no timer of its own
    second = await engine.run(quick_flow, "b", run_id="b")
    assert leases._timer is timer
    assert (first.status, second.status) == ("completed", "completed")
    await engine.aclose()
    assert leases._timer is None
    assert timer.cancelled()
    # A run after the close arms the clock again, and the clock keeps its lease.
    third = await engine.run(quick_flow, "c", run_id="c")
    assert third.status == "completed"
    assert leases._timer is not None
    await engine.aclose()


def test_an_engine_used_under_a_second_event_loop_keeps_its_runs_leases() -> None:
    store = MemoryStore()
    engine = Engine(model=ScriptedModel([GO, GO]), store=store, lease_s=LEASE_S)
    # The first loop leaves the clock armed on itself, and ends.
    first = anyio.run(lambda: engine.run(quick_flow, "a", run_id="a"))
    assert first.status == "completed"
    seen: list[float] = []

    async def second_loop() -> Run:
        async def watch() -> None:
            seen.append(await lease_left(store, "lone", LEASE_S * 2))

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            return await engine.run(slow_flow, "box", run_id="lone")

    run = anyio.run(second_loop)
    assert run.status == "completed"
    assert seen, "the watcher saw nothing"
    assert seen[0] > 0, "the clock of the first loop was taken for this one's"


async def test_closing_an_engine_while_a_run_is_in_flight_keeps_that_runs_lease(
    store: Store,
) -> None:
    engine = Engine(model=ScriptedModel([GO]), store=store, lease_s=LEASE_S)
    seen: list[float] = []

    async def close_then_watch() -> None:
        await anyio.sleep(LEASE_S / 6)  # the run is under way
        await engine.aclose()
        seen.append(await lease_left(store, "kept", LEASE_S * 2))

    async with anyio.create_task_group() as tg:
        tg.start_soon(close_then_watch)
        run = await engine.run(slow_flow, "box", run_id="kept")

    assert run.status == "completed"
    assert seen, "the watcher saw nothing"
    assert seen[0] > 0, "closing the engine stopped the lease of a run still in flight"
