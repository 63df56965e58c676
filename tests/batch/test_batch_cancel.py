"""Cancelling a batch, a run, or the caller's scope leaves every run clean and resumable."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import anyio.abc
import pytest
from batch_support import Slow, engine, one_step, three_steps
from virtual_clock import virtual_time

from engine import Engine, RunConflictError, agentic_function, decision
from engine.models import Request, Response, ScriptedModel
from engine.store import JournalRecord, MemoryStore, Run, SQLiteStore, Store


async def test_cancelling_a_batch_leaves_every_run_resumable_and_a_resume_completes_them() -> None:
    store = MemoryStore()
    tickets = [f"t{n}" for n in range(10)]
    async with virtual_time() as clock:
        eng = engine(Slow(clock), store)
        seen: list[Run] = []
        async with eng.as_completed(
            three_steps, tickets, concurrency=4, run_id=lambda t: t
        ) as runs:
            async for run in runs:
                seen.append(run)
                if len(seen) == 1:
                    runs.cancel()  # from inside the loop: the cancelled runs still come back

        stored = await store.list_runs()
        assert {r.status for r in stored} <= {"completed", "cancelled"}
        assert sorted(r.run_id for r in seen) == sorted(r.run_id for r in stored)
        cancelled = [r for r in stored if r.status == "cancelled"]
        assert cancelled
        assert all(r.error is not None and r.error.kind == "cancelled" for r in cancelled)
        assert all(r.owner is None for r in stored)
        journals = {r.run_id: await store.load_journal(r.run_id) for r in cancelled}
        assert any(journals.values())  # what they had done is journaled

        # The inputs never started run now; the cancelled runs resume from their journals.
        rerun = await eng.run_many(three_steps, tickets, run_id=lambda t: t)
        resumed = [await eng.resume(r.run_id) for r in cancelled]

    assert [r.status for r in resumed] == ["completed"] * len(cancelled)
    assert all(r.run_id in {x.run_id for x in rerun} for r in resumed)
    final = await store.list_runs()
    assert len(final) == 10
    assert {r.status for r in final} == {"completed"}


async def test_cancelling_the_callers_scope_records_every_run_in_flight_as_cancelled() -> None:
    store = MemoryStore()
    async with virtual_time() as clock:
        eng = engine(Slow(clock), store)

        async def stop_later(scope: anyio.CancelScope) -> None:
            await clock.sleep(1.5)
            scope.cancel()

        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_later, scope)
                await eng.run_many(three_steps, [f"s{n}" for n in range(6)], concurrency=3)

        stored = await store.list_runs()
        assert [r.status for r in stored] == ["cancelled"] * 3
        resumed = [await eng.resume(r.run_id) for r in stored]

    assert [r.status for r in resumed] == ["completed"] * 3
    # The first decision of each was journaled before the cancel: resumes replayed it.
    assert all(r.model_calls == 3 for r in resumed)


async def test_engine_cancel_stops_one_run_in_flight_and_it_resumes() -> None:
    async with virtual_time() as clock:
        eng = engine(Slow(clock))
        result: list[Run] = []

        async def run_it() -> None:
            result.append(await eng.run(three_steps, "c1", run_id="c1"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_it)
            await clock.sleep(1.5)
            cancelled = await eng.cancel("c1")

        assert cancelled.status == "cancelled"
        assert result == [cancelled]
        resumed = await eng.resume("c1")

    assert resumed.status == "completed"


async def test_engine_cancel_of_a_stopped_run_marks_it_cancelled() -> None:
    store = MemoryStore()
    eng = engine(ScriptedModel(["?", "??"]), store)  # type: ignore[arg-type]
    run = await eng.run(one_step, "x", run_id="x")
    assert run.status == "suspended"

    cancelled = await eng.cancel("x")

    assert cancelled.status == "cancelled"
    assert cancelled.error is not None
    assert cancelled.error.kind == "cancelled"
    assert await eng.cancel("x") == cancelled  # cancelling twice changes nothing
    with pytest.raises(KeyError, match="nope"):
        await eng.cancel("nope")


async def test_engine_cancel_refuses_a_run_held_by_another_live_owner() -> None:
    store = MemoryStore()
    eng = engine(ScriptedModel([]), store)  # type: ignore[arg-type]
    await store.create_run(
        Run(
            run_id="held",
            flow="x:y",
            status="running",
            owner="someone-else",
            lease_expires_at=time.time() + 60,
        )
    )

    with pytest.raises(RunConflictError, match="someone-else"):
        await eng.cancel("held")


async def test_a_pick_cannot_settle_a_run_that_did_not_stop_at_a_decision() -> None:
    store = MemoryStore()
    async with virtual_time() as clock:
        eng = engine(Slow(clock), store)

        async def run_it() -> None:
            await eng.run(three_steps, "p1", run_id="p1")

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_it)
            await clock.sleep(0.5)
            await eng.cancel("p1")

    with pytest.raises(ValueError, match="cancelled"):
        await eng.resume("p1", pick={"call": "left"})


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_run_whose_flow_returned_as_its_caller_was_cancelled_is_stored_completed(
    kind: str, tmp_path: Path
) -> None:
    # The cancel comes while the run is being recorded as ended: that write is not cut short,
    # whether it cannot wait at all (MemoryStore) or waits under a shield (SQLite).
    store: Store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "runs.db")
    eng = Engine(model=ScriptedModel([]), store=store)

    with anyio.CancelScope() as scope:

        @agentic_function
        async def cancels_its_caller(ticket: str) -> str:
            scope.cancel()
            return f"done {ticket}"

        await eng.run(cancels_its_caller, "t", run_id="r1")
        await anyio.sleep(1)  # the cancel is live: this never sleeps

    assert scope.cancelled_caught
    run = await store.get_run("r1")
    assert run is not None
    assert (run.status, run.result, run.owner) == ("completed", "done t", None)
    await store.close()


async def test_a_run_cancelled_while_its_reply_waits_to_be_journaled_keeps_the_reply(
    tmp_path: Path,
) -> None:
    # SQLite's writes land whoever waits for them, so the journal writes no shield: a run
    # cancelled while its model reply waits in the store's queue (behind another run's
    # batch) stops at once, and the reply it paid for is journaled all the same.
    store = SQLiteStore(tmp_path / "runs.db")
    await store.create_run(
        Run(run_id="other", flow="m:f", status="running", owner="x", lease_expires_at=2e9)
    )
    locked, unlock, replied, go = anyio.Event(), anyio.Event(), anyio.Event(), anyio.Event()

    async def hold_the_commit_lock() -> None:
        async with store._commit_lock:
            locked.set()
            await unlock.wait()

    async def reply(request: object) -> str:
        replied.set()
        await go.wait()
        return '{"call": "b"}'

    eng = Engine(model=ScriptedModel(reply), store=store)

    @agentic_function
    async def picks(ticket: str) -> str:
        return str(await decision.make(f"Pick for {ticket}.", ["a", "b"]))

    scope = anyio.CancelScope()
    ended: list[str] = []

    async def run_it() -> None:
        with scope:
            await eng.run(picks, "t", run_id="r1")
        ended.append("r1")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_it)
            await replied.wait()  # the run is created; the model is answering
            tg.start_soon(hold_the_commit_lock)
            await locked.wait()
            # Another write leads the queue and waits for the lock; the reply joins behind it.
            tg.start_soon(store.append, "other", [JournalRecord(key="k", kind="step", data=1)])
            while len(store._queue) < 1:
                await anyio.lowlevel.checkpoint()
            go.set()
            while len(store._queue) < 2:
                await anyio.lowlevel.checkpoint()
            scope.cancel()
            while len(store._queue) < 3:  # the run's end, recorded behind its reply
                await anyio.lowlevel.checkpoint()
            assert ended == []
            unlock.set()
    assert ended == ["r1"]
    run = await store.get_run("r1")
    assert run is not None
    assert (run.status, run.owner) == ("cancelled", None)
    journal = await store.load_journal("r1")
    assert [(r.kind, r.data["text"]) for r in journal if r.kind == "model"] == [
        ("model", '{"call": "b"}')
    ]
    # A resume replays the journaled reply: the model is not asked again.
    resumed = await Engine(model=ScriptedModel([]), store=store).resume("r1")
    assert (resumed.status, resumed.result) == ("completed", "b")
    await store.close()


class _Yields(ScriptedModel):
    """Picks "left" after yielding once to the loop, like a network call; at its call
    ``at``, it has ``cancel`` run ``after`` loop turns later."""

    def __init__(self, at: int = 0, after: int = 0, cancel: anyio.CancelScope | None = None):
        super().__init__(lambda request: '{"call": "left"}')
        self.asked, self.at, self.after, self.cancel = 0, at, after, cancel
        self.group: anyio.abc.TaskGroup | None = None

    async def complete(self, request: Request) -> Response:
        self.asked += 1
        if self.asked == self.at and self.group is not None:
            self.group.start_soon(self._cancel_later)
        await anyio.lowlevel.checkpoint()
        return await super().complete(request)

    async def _cancel_later(self) -> None:
        for _ in range(self.after):
            await anyio.lowlevel.checkpoint()
        assert self.cancel is not None
        self.cancel.cancel()


@pytest.mark.parametrize("after", [0, 1, 2, 3, 5, 8])
@pytest.mark.parametrize("at", [4, 9, 17])
async def test_a_batch_on_sqlite_cancelled_at_any_point_leaves_no_run_running(
    tmp_path: Path, at: int, after: int
) -> None:
    # The journal writes to SQLite with no shield: wherever the cancel lands (a write
    # waiting behind a batch, a batch being committed, a run's end), every run is stored
    # completed or cancelled, what it journaled replays, and a resume completes it.
    store = SQLiteStore(tmp_path / "runs.db")
    scope = anyio.CancelScope()
    model = _Yields(at, after, scope)
    eng = Engine(model=model, store=store)
    tickets = [f"t{n}" for n in range(12)]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            model.group = tg
            with scope:
                await eng.run_many(three_steps, tickets, concurrency=6, run_id=lambda t: t)
        stored = {r.run_id: r for r in await store.list_runs()}
        assert {r.status for r in stored.values()} <= {"completed", "cancelled"}
        assert "cancelled" in {r.status for r in stored.values()}
        assert all(r.owner is None for r in stored.values())
        assert store._queue == []
        replayed = Engine(model=_Yields(), store=store)
        for run in stored.values():
            if run.status == "cancelled":
                resumed = await replayed.resume(run.run_id)
                assert (resumed.status, resumed.result) == ("completed", ["left"] * 3)
            else:
                journal = await store.load_journal(run.run_id)
                assert [r.kind for r in journal].count("model") == 3
    await store.close()
