"""Resuming many runs at once: each comes back as it finishes; one that cannot be is reported."""

from __future__ import annotations

from typing import Any

import anyio
from batch_support import Slow, engine, three_steps
from virtual_clock import virtual_time

from engine import RunNotFoundError
from engine.store import MemoryStore, Run


async def test_resume_as_completed_resumes_every_run_and_reports_an_unknown_one() -> None:
    store = MemoryStore()
    tickets = [f"t{n}" for n in range(6)]
    async with virtual_time() as clock:
        eng = engine(Slow(clock), store)

        async def stop_later(scope: anyio.CancelScope) -> None:
            await clock.sleep(1.5)  # every run is cancelled after its first decision
            scope.cancel()

        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_later, scope)
                await eng.run_many(three_steps, tickets, run_id=lambda t: t)
        assert {r.status for r in await store.list_runs()} == {"cancelled"}
        refused: list[tuple[Any, str | None, Exception]] = []

        batch = eng.resume_as_completed(
            [*tickets, "nope"],
            concurrency=2,
            on_error=lambda item, run_id, exc: refused.append((item, run_id, exc)),
        )
        async with batch as runs:
            resumed: list[Run] = [run async for run in runs]

    assert sorted(r.run_id for r in resumed) == tickets
    assert {r.status for r in resumed} == {"completed"}
    assert all(r.model_calls == 3 for r in resumed)  # the first decision was replayed
    [(item, run_id, exc)] = refused
    assert (item, run_id, type(exc)) == ("nope", "nope", RunNotFoundError)
    assert batch.progress.not_started == 1


async def test_resume_as_completed_of_a_completed_run_returns_it_as_it_is() -> None:
    async with virtual_time() as clock:
        eng = engine(Slow(clock))
        done = await eng.run(three_steps, "c1", run_id="c1")
        runs = [run async for run in eng.resume_as_completed(["c1"])]

    assert runs == [done]
