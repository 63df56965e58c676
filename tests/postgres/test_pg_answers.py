"""A waiting run is answered through the queue, from another machine, and a worker finishes it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pg_flows
import pg_people_flows as ppf
import pytest
import structlog
from typer.testing import CliRunner

from engine import Engine
from engine.cli import app
from engine.distributed import request_answer, submit, worker
from engine.models import Request, ScriptedModel
from engine.store import PostgresStore, Run


@pytest.fixture
async def store(pg_dsn: str, pg_schema: str) -> AsyncIterator[PostgresStore]:
    pg_flows.create_tables(pg_dsn, pg_schema)
    made = PostgresStore(pg_dsn, schema=pg_schema, pool_max=6)
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def elsewhere(pg_dsn: str, pg_schema: str) -> AsyncIterator[PostgresStore]:
    """The same database, as another machine opens it to answer."""
    made = PostgresStore(pg_dsn, schema=pg_schema)
    try:
        yield made
    finally:
        await made.close()


async def _work(
    store: PostgresStore, *replies: str, by_ticket: dict[str, str] | None = None
) -> None:
    """Let a worker take every job queued; ``by_ticket`` replies by the ticket asked about."""
    script: Any = list(replies)
    if by_ticket is not None:

        def script(request: Request) -> str:
            asked = request.messages[-1].text
            return next(reply for ticket, reply in by_ticket.items() if f" {ticket}." in asked)

    engine = Engine(model=ScriptedModel(script), store=store, lease_s=5)
    with anyio.fail_after(30):
        await worker(
            engine, concurrency=4, one_shot=True, poll_s=0.1, install_signal_handlers=False
        )


async def _run(store: PostgresStore, run_id: str) -> Run:
    run = await store.get_run(run_id)
    assert run is not None
    return run


def _refund(amount: int) -> str:
    return json.dumps({"call": "refund", "args": {"amount": amount}})


async def test_a_waiting_run_answered_through_the_queue_is_completed_by_a_worker(
    store: PostgresStore, elsewhere: PostgresStore
) -> None:
    await submit(store, ppf.ask_a_person, ["t1"], run_id=lambda t: t)
    await _work(store)
    assert (await _run(store, "t1")).status == "waiting"

    await request_answer(elsewhere, "t1", pick={"call": "escalate", "args": {"queue": "vip"}})
    await _work(store)

    done = await _run(store, "t1")
    assert (done.status, done.result) == ("completed", "escalated to vip")
    picks = [r for r in await store.load_journal("t1") if r.kind == "pick"]
    assert [p.actor for p in picks] == ["human"]


async def test_an_approval_answered_through_the_queue_lets_the_pick_run(
    store: PostgresStore, elsewhere: PostgresStore
) -> None:
    await submit(store, ppf.settle, ["t1", "t2"], run_id=lambda t: t)
    # The worker runs both at once: each ticket gets its own reply, whichever goes first.
    await _work(store, by_ticket={"t1": _refund(900), "t2": _refund(800)})
    assert [(await _run(store, t)).status for t in ("t1", "t2")] == ["waiting", "waiting"]

    await request_answer(elsewhere, "t1", approve=True)
    await request_answer(elsewhere, "t2", edit={"amount": 300})
    await _work(store)  # no model call: the approved picks run as they are

    assert {(await _run(store, t)).result for t in ("t1", "t2")} == {
        "refunded 900",
        "refunded 300",
    }


async def test_an_invalid_queued_answer_is_logged_and_leaves_the_run_waiting(
    store: PostgresStore, elsewhere: PostgresStore
) -> None:
    await submit(store, ppf.ask_a_person, ["t1"], run_id=lambda t: t)
    await _work(store)
    before = await _run(store, "t1")
    journal = await store.load_journal("t1")

    await request_answer(elsewhere, "t1", pick={"call": "escalate", "args": {"queue": "gold"}})
    with structlog.testing.capture_logs() as logs:
        await _work(store)

    after = await _run(store, "t1")
    assert (after.status, after.version, after.error) == ("waiting", before.version, before.error)
    assert await store.load_journal("t1") == journal
    (rejected,) = [e for e in logs if e["event"] == "answer_rejected"]
    assert (rejected["run_id"], rejected["kind"]) == ("t1", "enum_violation")
    assert "queue" in rejected["detail"]


async def test_a_queued_answer_that_does_not_fit_the_question_is_refused_at_once(
    store: PostgresStore, elsewhere: PostgresStore
) -> None:
    await submit(store, ppf.ask_a_person, ["t1"], run_id=lambda t: t)
    await _work(store)

    with pytest.raises(ValueError, match="for a person's pick"):
        await request_answer(elsewhere, "t1", approve=True)
    with pytest.raises(ValueError, match="answer with one of"):
        await request_answer(elsewhere, "t1")
    with pytest.raises(KeyError, match="ghost"):
        await request_answer(elsewhere, "ghost", approve=True)
    await _work(store, _refund(1))  # nothing was queued: nothing runs
    assert (await _run(store, "t1")).status == "waiting"


async def test_engine_answer_on_worker_queues_the_answer_for_a_worker(
    store: PostgresStore, pg_dsn: str, pg_schema: str
) -> None:
    await submit(store, ppf.ask_a_person, ["t1"], run_id=lambda t: t)
    await _work(store)
    url = f"{pg_dsn}?schema={pg_schema}"
    pick = '{"call": "escalate", "args": {"queue": "vip"}}'

    result = await anyio.to_thread.run_sync(
        lambda: CliRunner().invoke(app, ["answer", "t1", "--on-worker", "--pick", pick, "-s", url])
    )

    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "queued the answer to run t1; a worker will execute it"
    assert (await _run(store, "t1")).status == "waiting"  # until a worker takes the job
    await _work(store)
    assert (await _run(store, "t1")).result == "escalated to vip"
