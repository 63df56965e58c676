"""One contract suite for every store: each test runs against each factory in ``FACTORIES``.

A new backend is one more entry there. The PostgreSQL factory takes a fresh schema per test
(dropped afterwards) from the ``pg_schema`` fixture, which skips where no server answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from engine import RunConflictError
from engine.store import (
    JournalRecord,
    MemoryStore,
    PostgresStore,
    Run,
    RunErrorInfo,
    RunStatus,
    SQLiteStore,
    Store,
    TokenUsage,
)

StoreFactory = Callable[[pytest.FixtureRequest, Path], Store]


def _postgres(request: pytest.FixtureRequest, tmp: Path) -> Store:
    dsn, schema = request.getfixturevalue("pg_dsn"), request.getfixturevalue("pg_schema")
    return PostgresStore(dsn, schema=schema, pool_max=4)


FACTORIES = [
    pytest.param(lambda request, tmp: MemoryStore(), id="memory"),
    pytest.param(lambda request, tmp: SQLiteStore(tmp / "runs.db"), id="sqlite"),
    pytest.param(_postgres, id="postgres"),
]


@pytest.fixture(params=FACTORIES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    factory: StoreFactory = request.param
    made = factory(request, tmp_path)
    try:
        yield made
    finally:
        await made.close()


def new_run(run_id: str, **fields: object) -> Run:
    return Run.model_validate({"run_id": run_id, "flow": "flows.tickets:route", **fields})


def record(key: str, **fields: object) -> JournalRecord:
    return JournalRecord.model_validate({"key": key, "kind": "step", **fields})


async def keys(store: Store, run_id: str) -> list[str]:
    return [r.key for r in await store.load_journal(run_id)]


async def test_store_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


# -- create, get, list -------------------------------------------------------------------------


async def test_create_run_stores_a_new_run(store: Store) -> None:
    stored, created = await store.create_run(new_run("r1"))
    assert created
    assert stored == new_run("r1").model_copy(
        update={"created_at": stored.created_at, "updated_at": stored.updated_at}
    )
    assert await store.get_run("r1") == stored


async def test_create_run_with_an_existing_id_returns_the_stored_run_and_false(
    store: Store,
) -> None:
    first, _ = await store.create_run(new_run("r1", input={"n": 1}))
    again, created = await store.create_run(new_run("r1", input={"n": 2}, status="running"))
    assert not created
    assert again == first
    assert await store.get_run("r1") == first


async def test_get_run_of_an_unknown_id_is_none(store: Store) -> None:
    assert await store.get_run("nope") is None


async def test_get_run_returns_a_copy_the_caller_may_change(store: Store) -> None:
    await store.create_run(new_run("r1", input={"items": [1]}))
    got = await store.get_run("r1")
    assert got is not None
    got.input["items"].append(2)
    got.status = "failed"
    again = await store.get_run("r1")
    assert again is not None
    assert (again.input, again.status) == ({"items": [1]}, "queued")


async def test_list_runs_returns_oldest_first(store: Store) -> None:
    for run_id, created_at in [("b", 3.0), ("a", 1.0), ("c", 2.0), ("d", 2.0)]:
        await store.create_run(new_run(run_id, created_at=created_at))
    assert [r.run_id for r in await store.list_runs()] == ["a", "c", "d", "b"]


async def test_list_runs_filters_by_status_and_flow(store: Store) -> None:
    await store.create_run(new_run("q1", created_at=1.0))
    await store.create_run(new_run("s1", status="suspended", created_at=2.0))
    await store.create_run(new_run("s2", status="suspended", flow="other:f", created_at=3.0))
    await store.create_run(new_run("q2", flow="other:f", created_at=4.0))
    assert [r.run_id for r in await store.list_runs(status="suspended")] == ["s1", "s2"]
    assert [r.run_id for r in await store.list_runs(flow="other:f")] == ["s2", "q2"]
    both = await store.list_runs(status="queued", flow="other:f")
    assert [r.run_id for r in both] == ["q2"]
    assert await store.list_runs(status="completed") == []


@pytest.mark.parametrize(
    ("limit", "status", "expected"),
    [
        pytest.param(2, None, ["r0", "r1"], id="first-two"),
        pytest.param(0, None, [], id="zero"),
        pytest.param(10, None, ["r0", "r1", "r2", "r3"], id="more-than-there-are"),
        pytest.param(1, "failed", ["r1"], id="with-a-filter"),
    ],
)
async def test_list_runs_limit_caps_the_oldest_first_list(
    store: Store, limit: int, status: RunStatus | None, expected: list[str]
) -> None:
    for n in range(4):
        status_n = "failed" if n % 2 else "queued"
        await store.create_run(new_run(f"r{n}", status=status_n, created_at=float(n)))
    runs = await store.list_runs(status=status, limit=limit)
    assert [r.run_id for r in runs] == expected


# -- compare-and-set ---------------------------------------------------------------------------


async def test_update_run_increments_the_version_and_stores_the_run(store: Store) -> None:
    stored, _ = await store.create_run(new_run("r1", updated_at=1.0))
    updated = await store.update_run(
        stored.model_copy(update={"status": "running", "owner": "w1"}), expected_version=0
    )
    assert updated is not None
    assert (updated.version, updated.status, updated.owner) == (1, "running", "w1")
    assert updated.updated_at > 1.0
    assert await store.get_run("r1") == updated
    again = await store.update_run(updated, expected_version=1)
    assert again is not None
    assert again.version == 2


async def test_update_run_with_a_stale_version_is_none_and_changes_nothing(store: Store) -> None:
    stored, _ = await store.create_run(new_run("r1"))
    winner = await store.update_run(stored.model_copy(update={"owner": "w1"}), expected_version=0)
    assert winner is not None
    loser = await store.update_run(stored.model_copy(update={"owner": "w2"}), expected_version=0)
    assert loser is None
    assert await store.get_run("r1") == winner


async def test_update_run_of_an_unknown_run_is_none(store: Store) -> None:
    assert await store.update_run(new_run("ghost"), expected_version=0) is None
    assert await store.get_run("ghost") is None


async def test_update_run_lets_exactly_one_of_many_concurrent_claims_win(store: Store) -> None:
    stored, _ = await store.create_run(new_run("r1"))
    winners: list[str] = []

    async def claim(owner: str) -> None:
        won = await store.update_run(stored.model_copy(update={"owner": owner}), expected_version=0)
        if won is not None:
            winners.append(owner)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(claim, f"w{n}")
    assert len(winners) == 1
    final = await store.get_run("r1")
    assert final is not None
    assert (final.owner, final.version) == (winners[0], 1)


async def test_finish_run_stores_the_outcome_with_the_journal_tail_and_trace(store: Store) -> None:
    stored, _ = await store.create_run(new_run("r1", status="running", owner="w1"))
    await store.append("r1", [record("a")], owner="w1")
    final = stored.model_copy(update={"status": "completed", "owner": None, "result": "ok"})
    done = await store.finish_run(
        final, expected_version=0, records=[record("b"), record("c")], trace={"nodes": [1]}
    )
    assert done is not None
    assert (done.status, done.version, done.result) == ("completed", 1, "ok")
    assert await store.get_run("r1") == done
    assert await keys(store, "r1") == ["a", "b", "c"]
    assert await store.load_trace("r1") == {"nodes": [1]}


async def test_finish_run_after_a_takeover_writes_nothing(store: Store) -> None:
    stored, _ = await store.create_run(new_run("r1", status="running", owner="w1"))
    taken = await store.update_run(stored.model_copy(update={"owner": "w2"}), expected_version=0)
    assert taken is not None
    late = stored.model_copy(update={"status": "failed", "owner": None})
    lost = await store.finish_run(late, expected_version=0, records=[record("x")], trace={"n": 1})
    assert lost is None
    assert await store.get_run("r1") == taken
    assert await store.load_journal("r1") == []
    assert await store.load_trace("r1") is None


# -- journal -----------------------------------------------------------------------------------


async def test_append_keeps_append_order_across_many_appends(store: Store) -> None:
    await store.create_run(new_run("r1"))
    expected = []
    for batch in range(30):
        chunk = [record(f"k{batch}:{n}") for n in range(batch % 3 + 1)]
        expected += [r.key for r in chunk]
        await store.append("r1", chunk)
    assert await keys(store, "r1") == expected


async def test_append_keeps_append_order_after_the_newest_records_are_deleted(
    store: Store,
) -> None:
    # The run that holds the newest records goes: later appends still come after what the
    # older run held, never before it (nothing reuses its place in the order).
    for run_id in ("old", "new"):
        await store.create_run(new_run(run_id))
    await store.append("old", [record("a"), record("b")])
    await store.append("new", [record(f"n{i}") for i in range(5)])
    await store.append("old", [record("c")])
    await store.append("new", [record("n5")])
    assert await store.delete_runs(["new"]) == 1
    await store.append("old", [record("d")])
    await store.append("old", [record("e"), record("f")])
    assert await keys(store, "old") == ["a", "b", "c", "d", "e", "f"]


async def test_append_round_trips_every_record_field(store: Store) -> None:
    await store.create_run(new_run("r1"))
    records = [
        JournalRecord(
            key="main/model:0",
            kind="model",
            fingerprint="f0",
            actor="model",
            data={"text": "hi", "usage": [1, 2.5, None, True]},
            created_at=1.5,
        ),
        JournalRecord(key="main/pick:1", kind="pick", actor="human", data=["a", {"b": None}]),
        JournalRecord(key="main/step:2", kind="step", data=None),
        JournalRecord(key="main/decision:3", kind="decision_failed", data="no_action"),
    ]
    await store.append("r1", records)
    assert await store.load_journal("r1") == records


async def test_append_keeps_each_runs_journal_apart(store: Store) -> None:
    for run_id in ("r1", "r2"):
        await store.create_run(new_run(run_id))
    await store.append("r1", [record("a")])
    await store.append("r2", [record("b")])
    await store.append("r1", [record("c")])
    assert (await keys(store, "r1"), await keys(store, "r2")) == (["a", "c"], ["b"])


async def test_append_by_the_owner_of_the_run_succeeds(store: Store) -> None:
    await store.create_run(new_run("r1", owner="w1"))
    await store.append("r1", [record("a")], owner="w1")
    assert await keys(store, "r1") == ["a"]


@pytest.mark.parametrize(
    "holder", [pytest.param("w2", id="taken-over"), pytest.param(None, id="released")]
)
async def test_append_fenced_by_another_owner_raises_and_leaves_the_journal(
    store: Store, holder: str | None
) -> None:
    await store.create_run(new_run("r1", owner=holder))
    await store.append("r1", [record("a")])
    with pytest.raises(RunConflictError, match=r"run 'r1' is now owned by .*not 'w1'") as info:
        await store.append("r1", [record("b"), record("c")], owner="w1")
    assert info.value.run_id == "r1"
    assert await keys(store, "r1") == ["a"]


async def test_append_to_an_unknown_run_raises_key_error(store: Store) -> None:
    with pytest.raises(KeyError, match="ghost"):
        await store.append("ghost", [record("a")])
    assert await store.load_journal("ghost") == []


async def test_load_journal_of_an_unknown_run_is_empty(store: Store) -> None:
    assert await store.load_journal("nope") == []


async def test_concurrent_appends_from_many_tasks_land_in_per_run_order(store: Store) -> None:
    runs, tasks, per_task = 10, 50, 4  # 200 appends from 50 tasks
    for n in range(runs):
        await store.create_run(new_run(f"r{n}", owner="w"))

    async def writer(task: int) -> None:
        for step in range(per_task):
            await store.append(f"r{task % runs}", [record(f"t{task}:{step}")], owner="w")

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for task in range(tasks):
                tg.start_soon(writer, task)
    total = 0
    for n in range(runs):
        journal = await keys(store, f"r{n}")
        total += len(journal)
        for task in range(n, tasks, runs):
            mine = [k for k in journal if k.startswith(f"t{task}:")]
            assert mine == [f"t{task}:{step}" for step in range(per_task)]
    assert total == tasks * per_task


# -- traces ------------------------------------------------------------------------------------


async def test_save_trace_round_trips_and_replaces(store: Store) -> None:
    await store.create_run(new_run("r1"))
    first = {"nodes": [{"id": "n1", "parent": None, "usage": {"input_tokens": 3}}], "ok": True}
    await store.save_trace("r1", first)
    assert await store.load_trace("r1") == first
    await store.save_trace("r1", {"nodes": []})
    assert await store.load_trace("r1") == {"nodes": []}


async def test_load_trace_of_a_run_without_one_is_none(store: Store) -> None:
    await store.create_run(new_run("r1"))
    assert await store.load_trace("r1") is None
    assert await store.load_trace("nope") is None


# -- delete (prune: test_contract_prune.py) ----------------------------------------------------


async def test_delete_runs_removes_runs_journals_and_traces(store: Store) -> None:
    for run_id in ("r1", "r2", "r3"):
        await store.create_run(new_run(run_id))
        await store.append(run_id, [record("a")])
        await store.save_trace(run_id, {"nodes": []})
    assert await store.delete_runs(["r1", "r3", "ghost", "r1"]) == 2
    assert [r.run_id for r in await store.list_runs()] == ["r2"]
    for gone in ("r1", "r3"):
        assert await store.get_run(gone) is None
        assert await store.load_journal(gone) == []
        assert await store.load_trace(gone) is None
    assert await keys(store, "r2") == ["a"]
    assert await store.load_trace("r2") == {"nodes": []}
    assert await store.delete_runs([]) == 0


# -- the Run model -----------------------------------------------------------------------------


async def test_run_round_trips_every_field(store: Store) -> None:
    full = Run(
        run_id="r-full",
        flow="flows.tickets:route",
        status="suspended",
        input={"args": ["t1"], "kwargs": {"priority": 2, "tags": ["a", "b"]}},
        result={"nested": {"list": [1, 2.5, None, "x"], "flag": False}},
        error=RunErrorInfo(
            kind="no_action",
            message="no pick",
            where="main/decision:2",
            options=["close", "reopen"],
            replies=["?", "??"],
            traceback="Traceback ...",
        ),
        transitions=7,
        model_calls=5,
        usage=TokenUsage(input_tokens=120, output_tokens=34),
        cost_usd=0.012345678,
        resumes=2,
        owner="worker-1",
        lease_expires_at=1234.5,
        created_at=1000.25,
        updated_at=1001.5,
        started_at=1000.75,
        finished_at=1001.125,
    )
    stored, _ = await store.create_run(full)
    assert stored == full
    assert await store.get_run("r-full") == full
    assert await store.list_runs(status="suspended") == [full]
    updated = await store.update_run(full, expected_version=0)
    assert updated is not None
    assert await store.get_run("r-full") == updated
    assert updated.model_dump(exclude={"version", "updated_at"}) == full.model_dump(
        exclude={"version", "updated_at"}
    )
