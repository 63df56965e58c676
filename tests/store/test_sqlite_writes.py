"""The SQLite store's lean writes: an update that leaves unchanged indexed columns alone, an
append whose owner check is its insert's condition, and checkpoints whose bulk runs beside
the writes."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import engine.store._sqlite_commit as commit_module
from engine import RunConflictError
from engine.store import JournalRecord, Run, SQLiteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "runs.db") as opened:
        yield opened


def new_run(run_id: str, **fields: object) -> Run:
    return Run.model_validate({"run_id": run_id, "flow": "flows.tickets:route", **fields})


def record(key: str) -> JournalRecord:
    return JournalRecord(key=key, kind="step")


async def test_an_update_that_changes_the_flow_and_creation_time_stores_them(
    store: SQLiteStore,
) -> None:
    run, _ = await store.create_run(new_run("r1"))
    moved = run.model_copy(update={"flow": "flows.other:main", "created_at": 12.5})
    stored = await store.update_run(moved, expected_version=run.version)
    assert stored is not None
    assert [r.run_id for r in await store.list_runs(flow="flows.other:main")] == ["r1"]
    assert await store.list_runs(flow="flows.tickets:route") == []
    got = await store.get_run("r1")
    assert got is not None
    assert (got.flow, got.created_at) == ("flows.other:main", 12.5)
    # A stale version still loses, whichever of the two updates it would take.
    assert await store.update_run(moved, expected_version=run.version) is None
    assert await store.update_run(run, expected_version=run.version) is None


async def test_a_fenced_append_of_many_records_stores_none_or_all(store: SQLiteStore) -> None:
    _run, _ = await store.create_run(new_run("r1", owner="w1"))
    await store.append("r1", [record("a"), record("b"), record("c")], owner="w1")
    await store.append("r1", [record("d")])  # no owner: no fence
    with pytest.raises(RunConflictError):
        await store.append("r1", [record("e"), record("f")], owner="w2")
    with pytest.raises(KeyError):
        await store.append("gone", [record("g")], owner="w1")
    with pytest.raises(KeyError):
        await store.append("gone", [])
    await store.append("r1", [], owner="w1")
    with pytest.raises(RunConflictError):
        await store.append("r1", [], owner="w2")
    assert [r.key for r in await store.load_journal("r1")] == ["a", "b", "c", "d"]


async def test_an_owned_run_whose_owner_is_cleared_refuses_a_fenced_append(
    store: SQLiteStore,
) -> None:
    run, _ = await store.create_run(new_run("r1", owner="w1"))
    released = await store.update_run(
        run.model_copy(update={"owner": None}), expected_version=run.version
    )
    assert released is not None
    with pytest.raises(RunConflictError):
        await store.append("r1", [record("a")], owner="w1")
    await store.append("r1", [record("b")])
    assert [r.key for r in await store.load_journal("r1")] == ["b"]


async def test_the_bulk_of_a_checkpoint_runs_in_its_own_thread_and_close_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bulks: list[str] = []
    real = commit_module.Checkpoints._copy_bulk

    def spy(self: commit_module.Checkpoints) -> None:
        bulks.append(threading.current_thread().name)
        real(self)

    monkeypatch.setattr(commit_module.Checkpoints, "_copy_bulk", spy)
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    async with store:
        await store.create_run(new_run("r1"))
        for n in range(1500):
            await store.append("r1", [record(f"k{n}")])
        checkpoints = store._checkpoints
    assert bulks
    assert set(bulks) == {"sqlite-checkpoint"}
    assert checkpoints._bulk is None
    assert checkpoints._conn is None
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM journal").fetchall() == [(1500,)]
    conn.close()


def test_checkpoints_without_a_connection_of_their_own_run_only_under_the_lock() -> None:
    checkpoints = commit_module.Checkpoints()
    checkpoints.every = 4
    assert [checkpoints.due() for _ in range(4)] == [False, False, False, True]
    assert checkpoints._bulk is None
