"""SQLiteStore beyond the contract: durability, schema, files shared and reopened, group commit."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

import engine.store._sqlite as sqlite_module
import engine.store._sqlite_commit as commit_module
from engine import JournalError, RunConflictError
from engine.store import JournalRecord, Run, SQLiteStore
from engine.store._sqlite import Durability

Call = Callable[[], Awaitable[object]]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
async def store(db: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(db) as opened:
        yield opened


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the size of every batch the stores commit."""
    sizes: list[int] = []
    commit = commit_module.commit

    def spy(conn: sqlite3.Connection, batch: list[commit_module.Op], **how: bool) -> bool:
        sizes.append(len(batch))
        return commit(conn, batch, **how)

    monkeypatch.setattr(commit_module, "commit", spy)
    return sizes


@contextlib.contextmanager
def raw(db: Path) -> Iterator[sqlite3.Connection]:
    """A plain connection to the file, closed on exit."""
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        yield conn


def new_run(run_id: str, **fields: object) -> Run:
    return Run.model_validate({"run_id": run_id, "flow": "flows.tickets:route", **fields})


def record(key: str, data: object = None) -> JournalRecord:
    return JournalRecord(key=key, kind="step", data=data)


async def keys(store: SQLiteStore, run_id: str) -> list[str]:
    return [r.key for r in await store.load_journal(run_id)]


async def queued(store: SQLiteStore, count: int) -> None:
    """Let other tasks run until ``count`` writes wait in the store's queue."""
    while len(store._queue) < count:
        await anyio.lowlevel.checkpoint()


async def in_one_batch(store: SQLiteStore, calls: list[Call]) -> list[object]:
    """Start ``calls`` while the commit lock is held, so that one batch takes them all.

    Returns each call's result, or the exception it raised.
    """
    results: list[object] = [None] * len(calls)

    async def run(index: int, call: Call) -> None:
        try:
            results[index] = await call()
        except Exception as exc:
            results[index] = exc

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg, store._commit_lock:
            for index, call in enumerate(calls):
                tg.start_soon(run, index, call)
            await queued(store, len(calls))
    return results


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("durability", "level"),
    [
        pytest.param("full", 2, id="full"),
        pytest.param("normal", 1, id="normal"),
        pytest.param("off", 0, id="off"),
    ],
)
async def test_sqlite_store_durability_sets_synchronous(
    db: Path, durability: sqlite_module.Durability, level: int
) -> None:
    async with SQLiteStore(db, durability=durability) as store:
        # synchronous is per connection, so only the store's own connections can tell.
        assert store._writer is not None
        assert store._writer.execute("PRAGMA synchronous").fetchall() == [(level,)]
        found = await store._read(lambda conn: conn.execute("PRAGMA synchronous").fetchall())
        assert found == [(level,)]


def test_sqlite_store_rejects_an_unknown_durability(db: Path) -> None:
    with pytest.raises(ValueError, match="durability='fast' is not one of 'full', 'normal', 'off'"):
        SQLiteStore(db, durability="fast")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "kwargs", "message"),
    [
        pytest.param(":memory:", {}, "use MemoryStore", id="memory"),
        pytest.param("x.db", {"busy_timeout_s": -1}, "busy_timeout_s=-1", id="negative-timeout"),
    ],
)
def test_sqlite_store_rejects_bad_arguments(
    path: str, kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        SQLiteStore(path, **kwargs)


async def test_sqlite_store_touches_no_file_before_first_use(db: Path) -> None:
    store = SQLiteStore(db)
    assert not await anyio.Path(db).exists()
    assert await store.get_run("r1") is None
    assert await anyio.Path(db).exists()
    await store.close()


# -- the file ----------------------------------------------------------------------------------


async def test_sqlite_store_puts_the_file_in_wal_mode(store: SQLiteStore, db: Path) -> None:
    with raw(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]


async def test_sqlite_store_records_its_schema_version(store: SQLiteStore, db: Path) -> None:
    with raw(db) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert version == [(str(sqlite_module.sql.SCHEMA_VERSION),)]
    assert {"runs", "journal", "traces", "runs_by_status", "journal_by_run"} <= names


async def test_a_journal_row_costs_no_counter_write(store: SQLiteStore, db: Path) -> None:
    # Its id is one more than the largest (SQLite's rowid), not AUTOINCREMENT's, whose
    # counter (the sqlite_sequence table) is written again at every insert.
    await store.create_run(new_run("r1"))
    await store.append("r1", [record("a"), record("b")])
    with raw(db) as conn:
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        ids = [i for (i,) in conn.execute("SELECT id FROM journal ORDER BY id")]
    assert "sqlite_sequence" not in names
    assert ids == [1, 2]


async def test_a_store_made_with_an_autoincrement_journal_keeps_working(db: Path) -> None:
    # What earlier versions made: the journal's ids from AUTOINCREMENT. Opened now, it is
    # used as it is, in append order, with nothing to migrate.
    with raw(db) as conn:
        conn.execute(
            "CREATE TABLE journal (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, "
            "key TEXT NOT NULL, kind TEXT NOT NULL, fingerprint TEXT NOT NULL, actor TEXT, "
            "data TEXT NOT NULL, created_at REAL NOT NULL)"
        )
    async with SQLiteStore(db) as store:
        for run_id in ("r1", "r2"):
            await store.create_run(new_run(run_id))
        await store.append("r1", [record("a")])
        await store.append("r2", [record("x")])
        await store.append("r1", [record("b"), record("c")])
        assert await store.delete_runs(["r2"]) == 1
        await store.append("r1", [record("d")])
        assert await keys(store, "r1") == ["a", "b", "c", "d"]
    with raw(db) as conn:
        assert conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'journal'"
        ).fetchall() == [(5,)]


async def test_sqlite_store_refuses_a_file_with_a_newer_schema(db: Path) -> None:
    async with SQLiteStore(db):
        pass
    with raw(db) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    store = SQLiteStore(db)
    with pytest.raises(JournalError, match="schema version 99, newer than"):
        await store.get_run("r1")
    await store.close()


async def test_sqlite_store_keeps_everything_across_close_and_reopen(db: Path) -> None:
    async with SQLiteStore(db) as store:
        await store.create_run(new_run("r1", status="suspended", result={"a": [1]}))
        records = [record("k0", {"x": 1}), record("k1")]
        await store.append("r1", records)
        await store.save_trace("r1", {"nodes": [1]})
        before = await store.get_run("r1")
    async with SQLiteStore(db) as store:
        assert await store.get_run("r1") == before
        assert await store.load_journal("r1") == records
        assert await store.load_trace("r1") == {"nodes": [1]}


async def test_sqlite_store_two_stores_on_one_file_see_each_others_commits(db: Path) -> None:
    async with SQLiteStore(db) as first, SQLiteStore(db) as second:
        stored, _ = await first.create_run(new_run("r1", owner="w1"))
        assert await second.get_run("r1") == stored
        await first.append("r1", [record("a")], owner="w1")
        assert await keys(second, "r1") == ["a"]
        # The second takes the run over; the first is fenced off at once.
        taken = await second.update_run(
            stored.model_copy(update={"owner": "w2"}), expected_version=0
        )
        assert taken is not None
        with pytest.raises(RunConflictError, match="now owned by 'w2'"):
            await first.append("r1", [record("b")], owner="w1")
        assert await first.update_run(stored, expected_version=0) is None
        assert await first.get_run("r1") == taken


async def test_sqlite_store_reopens_the_file_of_a_crashed_process(db: Path) -> None:
    script = f"""
import os, anyio
from engine.store import JournalRecord, Run, SQLiteStore
from engine.store._sqlite import Durability
async def main():
    store = SQLiteStore({str(db)!r})
    await store.create_run(Run(run_id="r1", flow="f:f", status="running", owner="dead"))
    await store.append("r1", [JournalRecord(key="k0", kind="step", data=1)], owner="dead")
    os._exit(3)  # no close: the process dies holding the file
anyio.run(main)
"""
    with anyio.fail_after(60):
        done = await anyio.run_process([sys.executable, "-c", script], check=False)
    assert done.returncode == 3, done.stderr.decode()
    async with SQLiteStore(db) as store:
        run = await store.get_run("r1")
        assert run is not None
        assert run.owner == "dead"
        assert await keys(store, "r1") == ["k0"]
        assert await store.update_run(run.model_copy(update={"owner": "new"}), expected_version=0)
        await store.append("r1", [record("k1")], owner="new")
        assert await keys(store, "r1") == ["k0", "k1"]


# -- group commit ------------------------------------------------------------------------------


async def test_sqlite_store_resolves_each_cas_of_one_batch_on_its_own(
    store: SQLiteStore, batches: list[int]
) -> None:
    runs = [(await store.create_run(new_run(f"r{n}")))[0] for n in range(6)]
    for run in runs[:3]:  # these three move to version 1, so a CAS at version 0 loses
        assert await store.update_run(run, expected_version=0) is not None
    batches.clear()
    calls: list[Call] = [
        partial(store.update_run, run.model_copy(update={"owner": "w"}), expected_version=0)
        for run in runs
    ]
    # Two claims on one run in the same batch: the first wins, the second sees its write.
    calls.append(partial(store.update_run, runs[5], expected_version=0))
    results = await in_one_batch(store, calls)
    assert batches == [len(calls)]
    assert [r is None for r in results] == [True, True, True, False, False, False, True]
    for n, run in enumerate(runs):
        stored = await store.get_run(run.run_id)
        assert stored is not None
        assert (stored.version, stored.owner) == ((1, None) if n < 3 else (1, "w"))


async def test_sqlite_store_fails_a_fenced_append_alone_in_its_batch(
    store: SQLiteStore, batches: list[int]
) -> None:
    await store.create_run(new_run("mine", owner="w1"))
    await store.create_run(new_run("theirs", owner="w2"))
    batches.clear()
    results = await in_one_batch(
        store,
        [
            lambda: store.append("mine", [record("a")], owner="w1"),
            lambda: store.append("theirs", [record("x")], owner="w1"),
            lambda: store.append("ghost", [record("y")]),
            lambda: store.create_run(new_run("fresh")),
            lambda: store.append("mine", [record("b")], owner="w1"),
            lambda: store.save_trace("mine", {"nodes": []}),
        ],
    )
    assert batches == [6]
    assert isinstance(results[1], RunConflictError)
    assert isinstance(results[2], KeyError)
    assert results[0] is None
    assert results[4] is None
    assert await keys(store, "mine") == ["a", "b"]
    assert await keys(store, "theirs") == []
    assert await store.get_run("fresh") is not None
    assert await store.load_trace("mine") == {"nodes": []}


async def test_sqlite_store_shares_commits_among_concurrent_appenders(
    store: SQLiteStore, batches: list[int]
) -> None:
    await store.create_run(new_run("r1"))
    batches.clear()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for n in range(100):
                tg.start_soon(store.append, "r1", [record(f"k{n}")])
    assert sum(batches) == 100
    assert len(batches) < 100
    assert sorted(await keys(store, "r1")) == sorted(f"k{n}" for n in range(100))


async def test_a_write_whose_caller_is_cancelled_while_it_waits_still_lands(
    store: SQLiteStore,
) -> None:
    assert store.writes_land is True
    await store.create_run(new_run("r1"))
    scopes = {"leader": anyio.CancelScope(), "follower": anyio.CancelScope()}
    returned: list[str] = []
    ended: list[str] = []

    async def append(key: str) -> None:
        try:
            with scopes[key]:
                await store.append("r1", [record(key)])
                returned.append(key)
        finally:
            ended.append(key)

    with anyio.fail_after(10):
        # The leader waits for the commit lock, the follower for the leader.
        async with anyio.create_task_group() as tg, store._commit_lock:
            tg.start_soon(append, "leader")
            await queued(store, 1)
            tg.start_soon(append, "follower")
            await queued(store, 2)
            for scope in scopes.values():
                scope.cancel()
            while "follower" not in ended:  # it stopped waiting; its write did not go
                await anyio.lowlevel.checkpoint()
            assert len(store._queue) == 2
    # The leader committed its queue, shielded, and returned; the follower's caller was
    # cancelled, but its write landed with the batch, in order.
    assert returned == ["leader"]
    assert await keys(store, "r1") == ["leader", "follower"]
    assert store._queue == []
    await store.append("r1", [record("later")])
    assert await keys(store, "r1") == ["leader", "follower", "later"]


@pytest.mark.parametrize(
    "durability",
    [
        pytest.param("full", id="full-commits-in-a-thread"),
        pytest.param("normal", id="normal-locked-elsewhere-commits-in-a-thread"),
    ],
)
async def test_sqlite_store_commits_a_cancelled_leaders_batch_once_a_thread_is_free(
    db: Path, durability: Durability
) -> None:
    store = SQLiteStore(db, durability=durability)
    await store.create_run(new_run("r1"))
    # With the one worker-thread token held, the leader waits before its batch reaches a
    # thread ("normal" commits on the loop's thread, but gives way to a thread while another
    # connection holds the write lock). Its lead is shielded: a cancel waits for it.
    limiter = anyio.to_thread.current_default_thread_limiter()
    saved, limiter.total_tokens = limiter.total_tokens, 1
    holder = object()
    await limiter.acquire_on_behalf_of(holder)
    scope = anyio.CancelScope()
    returned: list[str] = []

    async def leader() -> None:
        with scope:
            await store.append("r1", [record("leader")])
            returned.append("leader")

    try:
        with raw(db) as other, anyio.fail_after(10):
            if durability == "normal":
                other.execute("BEGIN IMMEDIATE")
            async with anyio.create_task_group() as tg:
                async with store._commit_lock:  # both queue up before either commits
                    tg.start_soon(leader)
                    await queued(store, 1)
                    tg.start_soon(store.append, "r1", [record("follower")])
                    await queued(store, 2)
                while store._queue:  # the leader took both and waits for a thread
                    await anyio.lowlevel.checkpoint()
                scope.cancel()
                for _ in range(5):  # the cancel reaches nothing: the leader waits on
                    await anyio.lowlevel.checkpoint()
                assert returned == []
                if other.in_transaction:
                    other.execute("ROLLBACK")
                limiter.release_on_behalf_of(holder)
    finally:
        limiter.total_tokens = saved
    assert returned == ["leader"]
    assert await keys(store, "r1") == ["leader", "follower"]
    await store.close()


async def test_sqlite_store_fails_the_whole_batch_when_the_file_stays_locked(db: Path) -> None:
    async with SQLiteStore(db, busy_timeout_s=0.05) as store:
        await store.create_run(new_run("r1"))
        with raw(db) as other:
            other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            results = await in_one_batch(
                store,
                [
                    lambda: store.append("r1", [record("a")]),
                    lambda: store.create_run(new_run("r2")),
                ],
            )
            other.execute("ROLLBACK")
        assert all(isinstance(r, JournalError) for r in results), results
        assert all("database is locked" in str(r) for r in results)
        assert await keys(store, "r1") == []
        assert await store.get_run("r2") is None
        await store.append("r1", [record("b")])  # usable again once the lock is gone
        assert await keys(store, "r1") == ["b"]


# -- errors and lifetime -----------------------------------------------------------------------


async def test_sqlite_store_refuses_data_that_is_not_json(store: SQLiteStore) -> None:
    await store.create_run(new_run("r1"))
    with pytest.raises(JournalError, match="journal record 'k' of run 'r1' holds a value"):
        await store.append("r1", [record("k", object())])
    with pytest.raises(JournalError, match="run 'r2' holds a value that is not JSON"):
        await store.create_run(new_run("r2", result=object()))
    assert await keys(store, "r1") == []


async def test_sqlite_store_refuses_use_after_close(db: Path) -> None:
    store = SQLiteStore(db)
    await store.create_run(new_run("r1"))
    await store.close()
    await store.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="is closed; open a new store"):
        await store.get_run("r1")
    with pytest.raises(RuntimeError, match="is closed"):
        await store.append("r1", [record("a")])
