"""submit, worker and queued resumes, in one process, on a fresh schema per test."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pg_flows
import pytest

from engine import Engine
from engine.distributed import request_resume, submit, worker
from engine.models import Request, ScriptedModel
from engine.store import MemoryStore, PostgresStore

TICKETS = [f"t{i:03d}" for i in range(12)]


@pytest.fixture
async def store(pg_dsn: str, pg_schema: str) -> AsyncIterator[PostgresStore]:
    pg_flows.create_tables(pg_dsn, pg_schema)
    pg_flows.configure(pg_dsn, pg_schema)
    made = PostgresStore(pg_dsn, schema=pg_schema, pool_max=6)
    try:
        yield made
    finally:
        await pg_flows.close()
        await made.close()


async def _jobs(store: PostgresStore) -> list[tuple[Any, ...]]:
    async with store.transaction() as conn:
        cursor = await conn.execute(
            "SELECT args->>'run_id', queue_name, priority, lock, status FROM procrastinate_jobs "
            "ORDER BY id"
        )
        return list(await cursor.fetchall())


async def _work(store: PostgresStore, model: Any = pg_flows.latency_model) -> Engine:
    engine = Engine(model=ScriptedModel(model), store=store, lease_s=5)
    with anyio.fail_after(30):
        await worker(
            engine, concurrency=8, one_shot=True, poll_s=0.1, install_signal_handlers=False
        )
    return engine


async def test_submit_queues_each_run_with_one_job_and_nothing_twice(store: PostgresStore) -> None:
    runs = await submit(store, pg_flows.ticket_flow, TICKETS, run_id=lambda t: t, priority=3)
    assert [(r.run_id, r.status) for r in runs] == [(t, "queued") for t in TICKETS]
    again = await submit(store, pg_flows.ticket_flow, [*TICKETS, "t999"], run_id=lambda t: t)
    assert [r.run_id for r in again] == [*TICKETS, "t999"]
    jobs = await _jobs(store)
    assert [j[0] for j in jobs] == [*TICKETS, "t999"]
    assert {(j[1], j[2], j[4]) for j in jobs[:-1]} == {("engine", 3, "todo")}
    stored = await store.get_run("t000")
    assert stored is not None
    assert (stored.status, stored.flow, stored.input) == (
        "queued",
        "pg_flows:ticket_flow",
        {"args": ["t000"], "kwargs": {}},
    )


@pytest.mark.parametrize("bad", ["", None, 7], ids=["empty", "none", "number"])
async def test_submit_refuses_a_run_id_that_is_not_a_non_empty_string(
    store: PostgresStore, bad: object
) -> None:
    with pytest.raises(ValueError, match="a run id must be a non-empty string"):
        await submit(store, pg_flows.ticket_flow, TICKETS, run_id=lambda t: bad)  # type: ignore[arg-type,return-value]
    assert await store.list_runs() == []


async def test_worker_executes_every_submitted_run(store: PostgresStore) -> None:
    await submit(store, pg_flows.ticket_flow, TICKETS, run_id=lambda t: t, max_concurrency=3)
    lanes = {j[3] for j in await _jobs(store)}
    assert len(lanes) <= 3
    assert all(lane.startswith("flow:pg_flows:ticket_flow#") for lane in lanes)
    await _work(store)
    runs = await store.list_runs()
    assert [(r.run_id, r.status, r.result) for r in runs] == [
        (t, "completed", f"{t}:refunded 5.0 for {t}") for t in TICKETS
    ]
    assert await _jobs(store) == []  # done jobs are deleted: the store keeps the history


async def test_engine_submit_is_the_same_as_the_function(store: PostgresStore) -> None:
    engine = Engine(model=ScriptedModel(pg_flows.latency_model), store=store)
    runs = await engine.submit(pg_flows.ticket_flow, ["t001"], run_id=lambda t: t, queue="slow")
    assert runs[0].status == "queued"
    assert [(j[0], j[1]) for j in await _jobs(store)] == [("t001", "slow")]


def _unsure_at_first(request: Request) -> Any:
    """Reply nonsense to the first question, so the run suspends there."""
    if request.messages[0].text.startswith("Classify"):
        return "I cannot tell."
    return pg_flows.latency_model(request)


async def test_a_queued_resume_with_a_human_pick_is_executed_by_a_worker(
    store: PostgresStore,
) -> None:
    await submit(store, pg_flows.ticket_flow, ["t001"], run_id=lambda t: t)
    await _work(store, _unsure_at_first)
    suspended = await store.get_run("t001")
    assert suspended is not None
    assert suspended.status == "suspended"
    await request_resume(store, "t001", pick={"call": "billing"})
    await _work(store, _unsure_at_first)
    done = await store.get_run("t001")
    assert done is not None
    assert (done.status, done.resumes) == ("completed", 1)
    picks = [r for r in await store.load_journal("t001") if r.kind == "pick"]
    assert picks[0].actor == "human"


async def test_a_queued_resume_of_a_completed_run_is_refused(store: PostgresStore) -> None:
    await submit(store, pg_flows.ticket_flow, ["t001"], run_id=lambda t: t)
    await _work(store)
    with pytest.raises(ValueError, match="'t001' is completed"):
        await request_resume(store, "t001", model="simulated")
    with pytest.raises(KeyError, match="ghost"):
        await request_resume(store, "ghost")


async def test_submit_needs_a_postgres_store() -> None:
    with pytest.raises(TypeError, match="need a PostgresStore"):
        await submit(MemoryStore(), pg_flows.ticket_flow, ["t001"])


def test_worker_jobs_carry_only_json() -> None:
    from engine._run._queue import make_job

    job = make_job("r1", "engine", 0, None, {"pick": {"call": "a"}, "model": None})
    assert json.loads(json.dumps(job.task_kwargs)) == job.task_kwargs
    assert job.queueing_lock == "run:r1"


async def test_submit_refuses_a_flow_the_workers_cannot_import(store: PostgresStore) -> None:
    async def local_flow(ticket: str) -> str:
        return ticket

    with pytest.raises(ValueError, match="cannot be imported by the workers"):
        await submit(store, local_flow, ["t001"])
    assert await store.list_runs() == []
