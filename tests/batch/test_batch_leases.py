"""Leases while a batch runs: a run the batch did not start renews its own."""

from __future__ import annotations

import time

import anyio

from engine import Engine, agentic_function
from engine.models import ScriptedModel
from engine.store import MemoryStore

LEASE_S = 0.3


async def test_a_run_started_beside_a_batch_keeps_its_lease_after_the_batch_ends() -> None:
    store = MemoryStore()
    eng = Engine(model=ScriptedModel([]), store=store, lease_s=LEASE_S)
    batch_open, slow_started, batch_done = anyio.Event(), anyio.Event(), anyio.Event()
    leases: list[float] = []

    @agentic_function
    async def quick(item: str) -> str:
        batch_open.set()
        await slow_started.wait()  # the batch stays open until the other run has started
        return item

    @agentic_function
    async def slow(item: str) -> str:
        slow_started.set()
        await batch_done.wait()
        await anyio.sleep(4 * LEASE_S)  # several leases after the batch's renewer stopped
        run = await store.get_run("slow")
        assert run is not None
        leases.append((run.lease_expires_at or 0.0) - time.time())
        return item

    async def batch() -> None:
        await eng.run_many(quick, ["a", "b"], run_id=lambda item: item)
        batch_done.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(batch)
            await batch_open.wait()
            run = await eng.run(slow, "x", run_id="slow")

    assert run.status == "completed"
    assert leases[0] > 0  # renewed by the run's own renewer: not expired
