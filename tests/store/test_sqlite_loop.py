"""SQLiteStore on the loop's own thread: where its batches and small reads run, how a file
locked by another connection sends them to a worker thread, and what cancellation does."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import engine.store._sqlite_commit as commit_module
import engine.store._sqlite_sql as sql_module
from engine import JournalError
from engine.store import JournalRecord, Run, SQLiteStore
from engine.store._sqlite import Durability


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
async def store(db: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(db) as opened:
        yield opened


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Record each batch commits calls: its size and whether it ran on the loop's thread."""
    seen: list[tuple[int, bool]] = []
    commit = commit_module.commit

    def spy(conn: sqlite3.Connection, batch: list[commit_module.Op], **how: bool) -> bool:
        seen.append((len(batch), threading.current_thread() is threading.main_thread()))
        return commit(conn, batch, **how)

    monkeypatch.setattr(commit_module, "commit", spy)
    return seen


@contextlib.contextmanager
def write_locked(db: Path) -> Iterator[sqlite3.Connection]:
    """Another connection holding the file's write lock until the block ends (or it lets go)."""
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        try:
            yield other
        finally:
            if other.in_transaction:
                other.execute("ROLLBACK")


def new_run(run_id: str) -> Run:
    return Run.model_validate({"run_id": run_id, "flow": "flows.tickets:route"})


def record(key: str) -> JournalRecord:
    return JournalRecord(key=key, kind="step")


async def keys(store: SQLiteStore, run_id: str) -> list[str]:
    return [r.key for r in await store.load_journal(run_id)]


def wal_pages(path: str) -> int:
    return Path(f"{path}-wal").stat().st_size // 4096


def busy_timeout(conn: sqlite3.Connection | None) -> int:
    assert conn is not None
    return int(conn.execute("PRAGMA busy_timeout").fetchall()[0][0])


@pytest.mark.parametrize(
    ("durability", "on_loop"),
    [
        pytest.param("normal", True, id="normal"),
        pytest.param("off", True, id="off"),
        pytest.param("full", False, id="full"),
    ],
)
async def test_a_batch_commits_on_the_loop_thread_unless_it_fsyncs(
    db: Path, durability: Durability, on_loop: bool, commits: list[tuple[int, bool]]
) -> None:
    async with SQLiteStore(db, durability=durability) as store:
        await store.create_run(new_run("r1"))
        await store.append("r1", [record("a")])
        assert commits == [(1, on_loop), (1, on_loop)]
        # The loop's connections wait for no lock; a thread's wait the store's timeout.
        assert busy_timeout(store._writer) == (0 if on_loop else 30_000)
        assert busy_timeout(store._reader) == 0  # small reads run on the loop's thread


async def test_writes_queued_in_one_loop_iteration_share_one_batch(
    store: SQLiteStore, commits: list[tuple[int, bool]]
) -> None:
    await store.create_run(new_run("r1"))
    commits.clear()
    async with anyio.create_task_group() as tg:
        for n in range(10):  # all start in the same iteration
            tg.start_soon(store.append, "r1", [record(f"k{n}")])
    assert commits == [(10, True)]
    assert sorted(await keys(store, "r1")) == sorted(f"k{n}" for n in range(10))


async def test_a_write_waits_in_a_thread_while_another_connection_holds_the_lock(
    db: Path, commits: list[tuple[int, bool]]
) -> None:
    async with SQLiteStore(db) as store:
        await store.create_run(new_run("r1"))
        commits.clear()
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await anyio.sleep(0.005)

        with write_locked(db) as other, anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(tick)

                async def release_soon() -> None:
                    await anyio.sleep(0.2)
                    other.execute("ROLLBACK")  # let go of the lock

                tg.start_soon(release_soon)
                await store.append("r1", [record("a")])
                tg.cancel_scope.cancel()
        # Tried on the loop's thread, then committed in a thread once the lock was free;
        # the loop kept running meanwhile.
        assert commits == [(1, True), (1, False)]
        assert ticks >= 10
        assert await keys(store, "r1") == ["a"]
        assert busy_timeout(store._writer) == 0  # lent the full timeout for that one call
        await store.append("r1", [record("b")])
        assert commits[-1] == (1, True)


@pytest.mark.parametrize("durability", ["normal", "off"])
async def test_a_write_fails_with_the_documented_error_when_the_lock_stays_held(
    db: Path, durability: Durability
) -> None:
    async with SQLiteStore(db, durability=durability, busy_timeout_s=0.05) as store:
        await store.create_run(new_run("r1"))
        with write_locked(db), pytest.raises(JournalError) as caught:
            await store.append("r1", [record("a")])
        assert "is locked by another writer" in str(caught.value)
        assert "busy_timeout_s=0.05" in str(caught.value)
        assert await keys(store, "r1") == []


async def test_a_write_cancelled_as_it_leads_is_committed_once_and_returns(
    store: SQLiteStore,
) -> None:
    await store.create_run(new_run("r1"))
    for round_ in range(20):
        scope = anyio.CancelScope()
        outcome: list[str] = []

        async def leader(
            key: str, scope: anyio.CancelScope = scope, outcome: list[str] = outcome
        ) -> None:
            with scope:
                await store.append("r1", [record(key)])
                outcome.append("returned")

        async with anyio.create_task_group() as tg:
            tg.start_soon(leader, f"l{round_}")
            tg.start_soon(store.append, "r1", [record(f"f{round_}")])
            for _ in range(round_ % 4):  # cancel at different points of the commit
                await anyio.lowlevel.checkpoint()
            scope.cancel()
        stored = await keys(store, "r1")
        # Queued before anything waited, and led to its commit shielded: whenever the cancel
        # comes, the write is committed exactly once, and its call returns.
        assert stored.count(f"f{round_}") == 1
        assert stored.count(f"l{round_}") == 1
        assert outcome == ["returned"]
    assert store._queue == []


async def test_close_commits_what_is_queued_on_the_loop_thread(
    db: Path, commits: list[tuple[int, bool]]
) -> None:
    store = SQLiteStore(db)
    await store.create_run(new_run("r1"))
    commits.clear()
    results: list[str] = []

    async def append(key: str) -> None:
        await store.append("r1", [record(key)])
        results.append(key)

    # The close waits for the lock first, then two writes queue behind it.
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg, store._commit_lock:
            tg.start_soon(store.close)
            while store._commit_lock.statistics().tasks_waiting < 1:
                await anyio.lowlevel.checkpoint()
            tg.start_soon(append, "a")
            tg.start_soon(append, "b")
            while len(store._queue) < 2:
                await anyio.lowlevel.checkpoint()
    assert sorted(results) == ["a", "b"]
    assert commits == [(2, True)]  # the close's batch, on the loop's thread
    async with SQLiteStore(db) as reopened:
        assert await keys(reopened, "r1") == ["a", "b"]


@pytest.mark.parametrize("durability", ["normal", "full"])
async def test_small_reads_run_on_the_loop_thread_and_others_in_a_thread(
    db: Path, durability: Durability, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(db, durability=durability)
    await store.create_run(new_run("r1"))
    where: list[tuple[str, bool]] = []
    for name in ("select_runs", "select_journal", "select_trace"):
        real = getattr(sql_module, name)

        def spy(*args: object, _real: object = real, _name: str = name) -> object:
            where.append((_name, threading.current_thread() is threading.main_thread()))
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(sql_module, name, spy)
    with write_locked(Path(store.path)):  # a held write lock does not hold up a read (WAL)
        assert await store.get_run("r1") is not None
        assert await store.load_journal("r1") == []
        assert await store.load_trace("r1") is None
        assert [r.run_id for r in await store.list_runs()] == ["r1"]
    await store.close()
    assert where == [
        ("select_runs", True),
        ("select_journal", True),
        ("select_trace", False),
        ("select_runs", False),
    ]


async def test_a_small_read_that_finds_the_file_busy_is_retried_in_a_thread(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.create_run(new_run("r1"))
    await store.append("r1", [record("a")])
    real = sql_module.select_journal
    where: list[bool] = []

    def busy_on_the_loop(run_id: str, conn: sqlite3.Connection) -> list[JournalRecord]:
        on_loop = threading.current_thread() is threading.main_thread()
        where.append(on_loop)
        if on_loop:
            error = sqlite3.OperationalError("database is locked")
            error.sqlite_errorcode = sqlite3.SQLITE_BUSY
            raise error
        assert busy_timeout(conn) == 30_000  # the thread may wait
        return real(run_id, conn)

    monkeypatch.setattr(sql_module, "select_journal", busy_on_the_loop)
    assert await keys(store, "r1") == ["a"]
    assert where == [True, False]
    assert busy_timeout(store._reader) == 0


async def test_a_small_read_goes_to_a_thread_while_a_thread_holds_the_reader(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.create_run(new_run("r1"))
    holder = object()
    await store._read_limiter.acquire_on_behalf_of(holder)
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                got: list[Run | None] = []

                async def get() -> None:
                    got.append(await store.get_run("r1"))

                tg.start_soon(get)
                for _ in range(5):
                    await anyio.lowlevel.checkpoint()
                assert got == []  # it waits for the reader, not use it under the thread
                store._read_limiter.release_on_behalf_of(holder)
                holder = None
    finally:
        if holder is not None:
            store._read_limiter.release_on_behalf_of(holder)
    assert len(got) == 1
    assert got[0] is not None


@pytest.mark.parametrize(
    ("durability", "autocheckpoint"),
    [pytest.param("normal", 0, id="normal"), pytest.param("full", 1000, id="full")],
)
async def test_only_a_writer_in_a_thread_checkpoints_in_its_commits(
    db: Path, durability: Durability, autocheckpoint: int
) -> None:
    async with SQLiteStore(db, durability=durability) as store:
        await store.create_run(new_run("r1"))
        assert store._writer is not None
        found = store._writer.execute("PRAGMA wal_autocheckpoint").fetchall()
        assert found == [(autocheckpoint,)]


async def test_the_loop_writer_checkpoints_in_a_thread_and_the_wal_stays_small(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[bool] = []
    real = commit_module.Checkpoints.run

    def spy(self: commit_module.Checkpoints, conn: sqlite3.Connection) -> None:
        ran.append(threading.current_thread() is threading.main_thread())
        real(self, conn)

    monkeypatch.setattr(commit_module.Checkpoints, "run", spy)
    await store.create_run(new_run("r1"))
    for n in range(1500):  # each commit writes a page or more: 1500 and more without checkpoints
        await store.append("r1", [record(f"k{n}")])
    assert ran
    assert not any(ran)  # never on the loop's thread
    pages = wal_pages(store.path)
    assert pages < 1200, pages  # SQLite's own rule: about 1000
    assert len(await store.load_journal("r1")) == 1500


class _Answers:
    """A connection whose checkpoint finds ``pages`` pages in the WAL and copies ``copied``."""

    def __init__(self, pages: int, copied: int) -> None:
        self.pages, self.copied = pages, copied

    def execute(self, statement: str) -> _Answers:
        assert statement == "PRAGMA wal_checkpoint(PASSIVE)"
        return self

    def fetchall(self) -> list[tuple[int, int, int]]:
        return [(0, self.pages, self.copied)]


@pytest.mark.parametrize(
    ("kept", "pages", "copied", "every", "kept_after"),
    [
        pytest.param(0, 300, 300, 333, 0, id="three-pages-a-batch"),
        pytest.param(0, 50_000, 50_000, 2, 0, id="big-batches"),
        pytest.param(0, 10**9, 10**9, 1, 0, id="at-least-one"),
        pytest.param(0, 0, 0, 1000, 0, id="nothing-in-the-wal"),
        # A reader held the WAL: it did not start afresh, and only what came since counts.
        pytest.param(0, 300, 200, 333, 300, id="left-pages"),
        pytest.param(300, 600, 600, 333, 0, id="after-left-pages"),
        pytest.param(900, 300, 300, 333, 0, id="started-afresh-meanwhile"),
    ],
)
def test_checkpoints_follow_the_pages_a_batch_writes(
    kept: int, pages: int, copied: int, every: int, kept_after: int
) -> None:
    checkpoints = commit_module.Checkpoints()
    checkpoints.batches, checkpoints.kept = 100, kept
    checkpoints.run(_Answers(pages, copied))  # type: ignore[arg-type]
    assert (checkpoints.batches, checkpoints.every, checkpoints.kept) == (0, every, kept_after)


class _BusyAtBegin(sqlite3.Connection):
    """A connection whose ``busy_at``-th ``BEGIN IMMEDIATE`` finds the write lock taken."""

    busy_at = 0
    begins = 0

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if sql == "BEGIN IMMEDIATE":
            self.begins += 1
            if self.begins == self.busy_at:
                error = sqlite3.OperationalError("database is locked")
                error.sqlite_errorcode = sqlite3.SQLITE_BUSY
                raise error
        return super().execute(sql, parameters)


@pytest.mark.parametrize(
    "busy_at",
    [pytest.param(1, id="at-the-first-begin"), pytest.param(2, id="at-the-retry-in-savepoints")],
)
@pytest.mark.parametrize("give_way", [True, False])
def test_a_batch_that_finds_the_lock_taken_gives_way_untouched(
    tmp_path: Path, busy_at: int, give_way: bool
) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None, factory=_BusyAtBegin)
    assert isinstance(conn, _BusyAtBegin)
    with contextlib.closing(conn):
        conn.execute("CREATE TABLE t (v INTEGER PRIMARY KEY)")
        conn.busy_at = busy_at

        def insert(value: int, conn: sqlite3.Connection) -> int:
            conn.execute("INSERT INTO t VALUES (?)", (value,))
            return value

        # The second op fails on its own (a duplicate key), which sends the batch to its
        # retry in savepoints: a second BEGIN.
        batch = [commit_module.Op(partial(insert, 1)), commit_module.Op(partial(insert, 1))]
        committed = commit_module.commit(conn, batch, give_way=give_way)
        assert not conn.in_transaction
        assert conn.execute("SELECT count(*) FROM t").fetchall() == [(0,)]
        if give_way:
            assert committed is False
            assert [(op.done, op.result, op.error) for op in batch] == [(False, None, None)] * 2
        else:
            assert committed is True
            assert all(op.done and commit_module.is_busy(op.error) for op in batch)  # type: ignore[arg-type]


async def test_a_reader_holding_the_wal_does_not_make_checkpoints_run_every_batch(
    store: SQLiteStore, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[int] = []
    real = commit_module.Checkpoints.run

    def spy(self: commit_module.Checkpoints, conn: sqlite3.Connection) -> None:
        runs.append(self.batches)
        real(self, conn)

    monkeypatch.setattr(commit_module.Checkpoints, "run", spy)
    await store.create_run(new_run("r1"))
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM journal").fetchall()  # holds its snapshot
        for n in range(3000):
            await store.append("r1", [record(f"k{n}")])
        reader.execute("COMMIT")
    # About every 1000 pages (some 300 appends here), as without the reader.
    assert len(runs) >= 2, runs
    assert min(runs[1:]) >= 100, runs
