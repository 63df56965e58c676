"""Graceful shutdown: no new runs, in-flight calls finish, every run recorded where it stands."""

from __future__ import annotations

import os
import signal

import anyio
from batch_support import Slow, engine, three_steps
from virtual_clock import virtual_time

from engine.store import MemoryStore, Run


async def test_shutdown_lets_calls_in_flight_finish_then_stops_every_run() -> None:
    store = MemoryStore()
    tickets = [f"t{n}" for n in range(10)]
    async with virtual_time() as clock:
        model = Slow(clock)
        eng = engine(model, store)
        runs: list[Run] = []

        async def stop_later() -> None:
            await clock.sleep(0.5)
            await eng.shutdown(grace_s=30.0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_later)
            runs = await eng.run_many(three_steps, tickets, concurrency=4, run_id=lambda t: t)

        assert eng.stopping
        assert [r.run_id for r in runs] == ["t0", "t1", "t2", "t3"]  # nothing else started
        assert all(r.status == "cancelled" for r in runs)
        assert all(r.error is not None and r.error.kind == "shutdown" for r in runs)
        assert all((r.error.where or "").endswith("decision:1/model_call:0") for r in runs)  # type: ignore[union-attr]
        # The call each run had in flight finished and was journaled: none was wasted.
        assert all(r.model_calls == 1 for r in runs)

        later = engine(Slow(clock), store)
        resumed = [await later.resume(r.run_id) for r in runs]

    assert [r.status for r in resumed] == ["completed"] * 4
    assert all(r.model_calls == 3 for r in resumed)


async def test_shutdown_past_its_grace_period_cancels_the_runs_still_going() -> None:
    store = MemoryStore()
    async with virtual_time() as clock:
        eng = engine(Slow(clock), store)

        async def stop_later() -> None:
            await clock.sleep(0.5)
            await eng.shutdown(grace_s=0.0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_later)
            runs = await eng.run_many(three_steps, ["a", "b"], run_id=lambda t: t)

        assert [(r.status, r.model_calls) for r in runs] == [("cancelled", 0)] * 2
        assert all(r.error is not None and r.error.kind == "shutdown" for r in runs)
        resumed = [await engine(Slow(clock), store).resume(r.run_id) for r in runs]

    assert [r.status for r in resumed] == ["completed"] * 2


async def test_sigint_during_run_many_shuts_down_gracefully() -> None:
    store = MemoryStore()
    async with virtual_time() as clock:
        eng = engine(Slow(clock), store, grace_s=30.0)

        async def interrupt() -> None:
            await clock.sleep(0.5)
            os.kill(os.getpid(), signal.SIGINT)

        async with anyio.create_task_group() as tg:
            tg.start_soon(interrupt)
            with anyio.fail_after(10):
                runs = await eng.run_many(
                    three_steps, [f"s{n}" for n in range(8)], concurrency=2, handle_signals=True
                )

    assert len(runs) == 2
    assert [r.status for r in runs] == ["cancelled"] * 2
    assert all(r.error is not None and r.error.kind == "shutdown" for r in runs)
