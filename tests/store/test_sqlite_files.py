"""SQLiteStore on files it may only read, and on damaged files: JournalErrors that say what to do.

Run as root, the tests cannot make SQLite itself refuse a write for permissions; they test the
read-only open mode directly (it opens ``mode=ro``, so it writes nothing whatever the rights).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from engine import JournalError
from engine.store import JournalRecord, Run, SQLiteStore

PAGE = 4096


def _bytes(path: Path) -> bytes:
    return path.read_bytes()


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


async def _read_everything(store: SQLiteStore) -> None:
    try:
        for run in await store.list_runs():
            await store.load_journal(run.run_id)
            await store.load_trace(run.run_id)
    finally:
        await store.close()


def new_run(run_id: str) -> Run:
    return Run.model_validate(
        {"run_id": run_id, "flow": "flows.tickets:route", "input": {"body": "x" * 900}}
    )


@pytest.fixture
async def filled(tmp_path: Path) -> Path:
    """A store file of 200 runs, each with a journal record and a trace, closed."""
    path = tmp_path / "runs.db"
    async with SQLiteStore(path) as store:
        for n in range(200):
            await store.create_run(new_run(f"r{n:03}"))
            await store.append(f"r{n:03}", [JournalRecord(key="k", kind="step", data={"n": n})])
            await store.save_trace(f"r{n:03}", {"executions": [], "n": n})
    return path


async def test_a_read_only_store_reads_what_a_writer_stored(filled: Path) -> None:
    before = _bytes(filled)
    async with SQLiteStore(filled, read_only=True) as store:
        assert len(await store.list_runs()) == 200
        assert (await store.get_run("r007")) is not None
        assert [r.data for r in await store.load_journal("r007")] == [{"n": 7}]
        assert await store.load_trace("r007") == {"executions": [], "n": 7}
        assert "read_only=True" in repr(store)
    assert _bytes(filled) == before


@pytest.mark.parametrize(
    "write",
    [
        lambda s: s.create_run(new_run("new")),
        lambda s: s.append("r001", [JournalRecord(key="k2", kind="step", data={})]),
        lambda s: s.save_trace("r001", {}),
        lambda s: s.delete_runs(["r001"]),
        lambda s: s.prune(keep_last=0),
    ],
    ids=["create", "append", "trace", "delete", "prune"],
)
async def test_a_read_only_store_refuses_every_write(
    filled: Path, write: Callable[[SQLiteStore], Awaitable[object]]
) -> None:
    before = _bytes(filled)
    async with SQLiteStore(filled, read_only=True) as store:
        with pytest.raises(JournalError, match="is open read-only, so it cannot be written"):
            await write(store)
        assert len(await store.list_runs()) == 200
    assert _bytes(filled) == before


async def test_a_read_only_store_reads_a_file_with_no_tables_as_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    async with SQLiteStore(empty, read_only=True) as store:
        assert await store.list_runs() == []
        assert await store.get_run("x") is None
        assert await store.load_trace("x") is None
    assert _bytes(empty) == b""


async def test_a_read_only_store_names_a_file_that_is_not_a_store(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE things (x)")
    with pytest.raises(JournalError, match=r"is not a store of this engine .*no journal, meta"):
        async with SQLiteStore(other, read_only=True) as store:
            await store.list_runs()


async def test_a_read_only_store_refuses_a_newer_schema(filled: Path) -> None:
    with contextlib.closing(sqlite3.connect(filled)) as conn, conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(JournalError, match="schema version 99, newer than"):
        async with SQLiteStore(filled, read_only=True):
            pass


async def test_a_read_only_store_never_creates_its_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(JournalError, match="cannot be opened"):
        async with SQLiteStore(missing, read_only=True):
            pass
    assert not missing.exists()


def _head(data: bytes) -> bytes:
    return b"garbage " * 16 + data[128:]


def _middle(data: bytes) -> bytes:
    start = len(data) // 2 // PAGE * PAGE
    return data[:start] + b"\xff" * (2 * PAGE) + data[start + 2 * PAGE :]


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 3]


@pytest.mark.parametrize("damage", [_head, _middle, _truncated], ids=["head", "middle", "cut"])
@pytest.mark.parametrize("mode", ["read_only", "check"])
async def test_a_damaged_file_is_a_journal_error_that_says_so(
    filled: Path, damage: Callable[[bytes], bytes], mode: str
) -> None:
    damaged = damage(_bytes(filled))
    _write(filled, damaged)
    store = SQLiteStore(filled, **{mode: True})  # type: ignore[arg-type]
    with pytest.raises(JournalError) as raised:
        await _read_everything(store)
    message = str(raised.value)
    assert repr(str(filled)) in message
    assert "is damaged" in message or "cannot be read" in message
    assert "integrity_check" in message
    assert _bytes(filled) == damaged


async def test_a_row_that_cannot_be_decoded_is_a_journal_error(filled: Path) -> None:
    with contextlib.closing(sqlite3.connect(filled)) as conn, conn:
        conn.execute("UPDATE runs SET body = '{\"run_id\": 3}' WHERE run_id = 'r003'")
        conn.execute("UPDATE journal SET data = 'nope' WHERE run_id = 'r004'")
        conn.execute("UPDATE traces SET body = '[1,' WHERE run_id = 'r005'")
    async with SQLiteStore(filled) as store:
        with pytest.raises(JournalError, match="holds a row that cannot be read"):
            await store.get_run("r003")
        with pytest.raises(JournalError, match="holds a row that cannot be read"):
            await store.load_journal("r004")
        with pytest.raises(JournalError, match="holds a row that cannot be read"):
            await store.load_trace("r005")
        assert (await store.get_run("r006")) is not None


async def test_a_checked_store_opens_a_healthy_file_as_usual(filled: Path) -> None:
    async with SQLiteStore(filled, check=True) as store:
        await store.create_run(new_run("more"))
        assert len(await store.list_runs()) == 201
