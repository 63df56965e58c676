"""Runs handed back as they finish: order, early exit, lazy inputs, back-pressure, progress."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
from batch_support import Slow, engine, one_step, three_steps
from virtual_clock import virtual_time

from engine import BatchProgress
from engine.models import SimulatedModel
from engine.store import MemoryStore


async def test_as_completed_hands_runs_back_in_the_order_they_finish() -> None:
    async with virtual_time() as clock:
        eng = engine(Slow(clock, by_ticket=True))  # ticket tN takes 10 - N seconds
        tickets = [f"t{n}" for n in range(5)]

        async with eng.as_completed(one_step, tickets, run_id=lambda t: t) as runs:
            finished = [run.run_id async for run in runs]

    assert finished == ["t4", "t3", "t2", "t1", "t0"]


async def test_run_many_returns_runs_in_input_order() -> None:
    async with virtual_time() as clock:
        eng = engine(Slow(clock, by_ticket=True))

        runs = await eng.run_many(one_step, ["t0", "t1", "t2"], run_id=lambda t: t)

    assert [r.run_id for r in runs] == ["t0", "t1", "t2"]


async def test_leaving_the_block_early_cancels_the_rest_and_leaves_them_resumable() -> None:
    store = MemoryStore()
    async with virtual_time() as clock:
        eng = engine(Slow(clock, by_ticket=True), store)
        tickets = [f"t{n}" for n in range(8)]

        async with eng.as_completed(one_step, tickets, concurrency=4, run_id=lambda t: t) as runs:
            async for run in runs:
                first = run
                break

        stored = await store.list_runs()
        assert first.run_id == "t3"  # the fastest of the four in flight
        assert {r.run_id: r.status for r in stored} == {
            "t0": "cancelled",
            "t1": "cancelled",
            "t2": "cancelled",
            "t3": "completed",
        }
        resumed = [await eng.resume(r.run_id) for r in stored if r.status == "cancelled"]

    assert [r.status for r in resumed] == ["completed"] * 3


async def test_a_batch_read_to_the_end_works_as_a_plain_async_iterator() -> None:
    eng = engine(SimulatedModel())
    with anyio.fail_after(10):
        runs = [run async for run in eng.as_completed(one_step, [f"t{n}" for n in range(5)])]

    assert len({r.run_id for r in runs}) == 5
    assert {r.status for r in runs} == {"completed"}


async def test_inputs_are_pulled_lazily_and_in_flight_runs_stay_bounded() -> None:
    pulled: list[int] = []
    seen: list[BatchProgress] = []

    def tickets() -> Iterator[str]:
        for n in range(40):
            pulled.append(n)
            yield f"x{n}"

    async with virtual_time() as clock:
        eng = engine(Slow(clock))

        async with eng.as_completed(
            one_step, tickets(), concurrency=5, progress=seen.append
        ) as runs:
            async for _ in runs:
                progress = seen[-1]
                # Never more inputs read than runs done, in flight, or waiting to be read.
                assert len(pulled) <= progress.done + 5 + 1

    assert max(p.in_flight for p in seen) == 5
    assert len(pulled) == 40


async def test_a_slow_reader_holds_back_the_runs_and_the_inputs() -> None:
    pulled: list[int] = []

    def tickets() -> Iterator[str]:
        for n in range(30):
            pulled.append(n)
            yield f"x{n}"

    async with virtual_time() as clock:
        eng = engine(Slow(clock, latency=0.1))

        async with eng.as_completed(one_step, tickets(), concurrency=3) as runs:
            read = 0
            async for _ in runs:
                read += 1
                await clock.sleep(10.0)  # a slow reader
                # At most a buffer of three results and three runs waiting to hand theirs over.
                assert len(pulled) <= read + 3 + 3 + 1

    assert read == 30


async def test_async_iterable_inputs_work_too() -> None:
    async def tickets() -> AsyncIterator[str]:
        for n in range(3):
            yield f"a{n}"

    async with virtual_time() as clock:
        runs = await engine(Slow(clock)).run_many(one_step, tickets(), run_id=lambda t: t)

    assert [r.run_id for r in runs] == ["a0", "a1", "a2"]


async def test_progress_reports_statuses_tokens_and_in_flight() -> None:
    seen: list[BatchProgress] = []
    async with virtual_time() as clock:
        eng = engine(Slow(clock))

        runs = await eng.run_many(three_steps, ["p1", "p2", "p3"], progress=seen.append)

    last = seen[-1]
    assert (last.started, last.in_flight, last.done, last.completed) == (3, 0, 3, 3)
    assert last.tokens == sum(r.usage.total_tokens for r in runs) > 0
    assert last.model_calls == 9
    assert max(p.in_flight for p in seen) == 3


async def test_an_error_in_the_reader_propagates_as_itself_and_every_run_is_recorded() -> None:
    store = MemoryStore()
    async with virtual_time() as clock:
        eng = engine(Slow(clock), store)

        async def read_one() -> None:
            batch = eng.as_completed(one_step, [f"e{n}" for n in range(6)], concurrency=3)
            async with batch as runs:
                async for _ in runs:
                    raise LookupError("the reader failed")

        with pytest.raises(LookupError, match="the reader failed"):
            await read_one()

    assert {r.status for r in await store.list_runs()} <= {"completed", "cancelled"}


async def test_a_cancel_while_runs_finish_never_leaves_one_stored_running() -> None:
    store = MemoryStore()
    eng = engine(SimulatedModel(seed=8), store)  # no latency: runs end while others start

    async with eng.as_completed(three_steps, [f"f{n}" for n in range(200)], concurrency=20) as runs:
        read = 0
        async for _ in runs:
            read += 1
            if read == 50:
                runs.cancel()

    stored = await store.list_runs()
    assert {r.status for r in stored} <= {"completed", "cancelled"}
    assert all(r.owner is None for r in stored)
