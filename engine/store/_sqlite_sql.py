"""The SQL of :class:`~engine.store.SQLiteStore`: its schema and one function per operation.

Every function here is synchronous, takes an open connection, and runs in a worker thread
inside a transaction the store opened; none commits. Values cross as JSON text.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any, cast

from engine._base import JournalError
from engine.store._checks import (
    check_fence,
    journal_records,
    prune_victims,
    record_json,
    run_json,
    trace_json,
)
from engine.store._types import JournalRecord, Run

__all__ = [
    "SCHEMA_VERSION",
    "check_schema",
    "create_schema",
    "delete_runs",
    "insert_journal",
    "insert_run",
    "journal_row",
    "prune",
    "prune_doomed",
    "rollback",
    "run_row",
    "select_journal",
    "select_runs",
    "select_trace",
    "trace_body",
    "update_run",
    "upsert_trace",
]

SCHEMA_VERSION = 1
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY, status TEXT NOT NULL, flow TEXT NOT NULL,
        version INTEGER NOT NULL, owner TEXT, created_at REAL NOT NULL,
        updated_at REAL NOT NULL, finished_at REAL, body TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, created_at, run_id)",
    "CREATE INDEX IF NOT EXISTS runs_by_flow ON runs (flow, created_at, run_id)",
    "CREATE INDEX IF NOT EXISTS runs_by_age ON runs (created_at, run_id)",
    # A row's id is one more than the largest in the table when it goes in, so a run's rows
    # read back in append order by id. (Stores made before keep their AUTOINCREMENT, which
    # also never hands out an id a deleted row had, and costs a write of its counter per
    # insert: neither is needed for that order.)
    """CREATE TABLE IF NOT EXISTS journal (
        id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, key TEXT NOT NULL,
        kind TEXT NOT NULL, fingerprint TEXT NOT NULL, actor TEXT, data TEXT NOT NULL,
        created_at REAL NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS journal_by_run ON journal (run_id, id)",
    """CREATE TABLE IF NOT EXISTS traces (
        run_id TEXT PRIMARY KEY, body TEXT NOT NULL, updated_at REAL NOT NULL)""",
)
_RUN_COLUMNS = "status, flow, version, owner, created_at, updated_at, finished_at, body, run_id"
RunRow = tuple[str, str, int, str | None, float, float, float | None, str, str]
JournalRow = tuple[str, str, str, str, str | None, str, float]


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already."""
    # SQLite may have rolled back already (an I/O error, a full disk); the batch's ops carry
    # the first error, so a second one from here adds nothing.
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def create_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create the tables once and record the schema version, in one transaction.

    Raises:
        JournalError: The file was written by a newer schema than this engine knows.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        found = _rows(conn, "SELECT value FROM meta WHERE key = 'schema_version'")
        if found and int(found[0][0]) > SCHEMA_VERSION:
            raise JournalError(
                f"SQLite store {path!r} has schema version {found[0][0]}, newer than this "
                f"engine's {SCHEMA_VERSION}; upgrade the engine to open it"
            )
        for statement in _SCHEMA:
            conn.execute(statement)
        if not found:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def check_schema(conn: sqlite3.Connection, path: str) -> None:
    """Check that a file opened read-only holds a store this engine reads; change nothing.

    A file with no tables at all (new, or empty) reads as an empty store: its tables are made
    in the connection's own TEMP schema, which is never written to the file.

    Raises:
        JournalError: The file holds other tables than a store's, or a newer schema.
    """
    tables = {
        name for (name,) in _rows(conn, "SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    if not tables:
        for statement in _SCHEMA:
            if statement.startswith("CREATE TABLE"):
                conn.execute(statement.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
        return
    missing = sorted({"meta", "runs", "journal", "traces"} - tables)
    if missing:
        raise JournalError(
            f"SQLite store {path!r} is not a store of this engine (it has no "
            f"{', '.join(missing)} table); point at the file the runs were stored in"
        )
    found = _rows(conn, "SELECT value FROM meta WHERE key = 'schema_version'")
    if found and int(found[0][0]) > SCHEMA_VERSION:
        raise JournalError(
            f"SQLite store {path!r} has schema version {found[0][0]}, newer than this "
            f"engine's {SCHEMA_VERSION}; upgrade the engine to open it"
        )


# -- one function per operation ---------------------------------------------------------------


def _rows(conn: sqlite3.Connection, sql: str, args: Sequence[object] = ()) -> list[Any]:
    # fetchall, never a half-read cursor: an unfinished statement would keep its snapshot.
    return conn.execute(sql, args).fetchall()


def insert_run(row: RunRow, conn: sqlite3.Connection) -> Run | None:
    """Insert the run; return ``None`` when inserted, else the run already stored."""
    cursor = conn.execute(
        f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO NOTHING",
        row,
    )
    if cursor.rowcount == 1:
        return None
    return select_runs("WHERE run_id = ?", [row[-1]], None, conn)[0]


def update_run(row: RunRow, expected_version: int, conn: sqlite3.Connection) -> bool:
    """Replace the run if it is still at ``expected_version``; return whether it was.

    A run's flow and creation time stay as they were, as a rule: the update that leaves them
    out of its SET touches neither index kept on them (two pages fewer in the WAL). Only
    when it matches no row (a lost compare-and-set, or those columns changed) does the full
    update run, which then decides.
    """
    status, flow, version, owner, created, updated, finished, body, run_id = row
    cursor = conn.execute(
        "UPDATE runs SET status = ?, version = ?, owner = ?, updated_at = ?, finished_at = ?, "
        "body = ? WHERE run_id = ? AND version = ? AND flow = ? AND created_at = ?",
        (status, version, owner, updated, finished, body, run_id, expected_version, flow, created),
    )
    if cursor.rowcount == 1:
        return True
    cursor = conn.execute(
        "UPDATE runs SET status = ?, flow = ?, version = ?, owner = ?, created_at = ?, "
        "updated_at = ?, finished_at = ?, body = ? WHERE run_id = ? AND version = ?",
        (*row, expected_version),
    )
    return cursor.rowcount == 1


def finish_run(
    row: RunRow,
    expected_version: int,
    journal: list[JournalRow],
    trace: str | None,
    conn: sqlite3.Connection,
) -> bool:
    """Compare-and-set the run, then append its journal tail and store its trace."""
    if not update_run(row, expected_version, conn):
        return False
    run_id = row[-1]
    if journal:  # the run exists (it was just updated), and nobody else may hold it
        _insert_rows(journal, conn)
    if trace is not None:
        upsert_trace(run_id, trace, conn)
    return True


def select_runs(
    where: str, args: Sequence[object], limit: int | None, conn: sqlite3.Connection
) -> list[Run]:
    """Return the runs matching ``where``, oldest first, at most ``limit`` of them."""
    found = _rows(
        conn,
        f"SELECT body FROM runs {where} ORDER BY created_at, run_id LIMIT ?",
        [*args, -1 if limit is None else limit],
    )
    return [Run.model_validate_json(body) for (body,) in found]


def insert_journal(
    run_id: str, owner: str | None, rows: list[JournalRow], conn: sqlite3.Connection
) -> None:
    """Append journal rows, after checking the run exists and ``owner`` still holds it.

    The check is the insert's own condition, so an append that passes it is one statement;
    one that inserts nothing (the run is gone, or another owner holds it) reads why.
    """
    if rows:
        fenced = [(*row, run_id, owner, owner) for row in rows]
        if conn.executemany(_INSERT_FENCED, fenced).rowcount == len(rows):
            return
        # Every row or none: the run and its owner do not change within the transaction.
    found = _rows(conn, "SELECT owner FROM runs WHERE run_id = ?", [run_id])
    check_fence(run_id, owner, exists=bool(found), holder=found[0][0] if found else None)
    _insert_rows(rows, conn)


_INSERT_FENCED = (
    "INSERT INTO journal (run_id, key, kind, fingerprint, actor, data, created_at) "
    "SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = ? "
    "AND (? IS NULL OR owner = ?))"
)


def _insert_rows(rows: list[JournalRow], conn: sqlite3.Connection) -> None:
    conn.executemany(
        "INSERT INTO journal (run_id, key, kind, fingerprint, actor, data, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def select_journal(run_id: str, conn: sqlite3.Connection) -> list[JournalRecord]:
    """Return the run's journal in append order."""
    found = _rows(
        conn,
        "SELECT key, kind, fingerprint, actor, data, created_at FROM journal "
        "WHERE run_id = ? ORDER BY id",
        [run_id],
    )
    return journal_records(found)


def upsert_trace(run_id: str, body: str, conn: sqlite3.Connection) -> None:
    """Store the run's trace, replacing an earlier one."""
    conn.execute(
        "INSERT INTO traces (run_id, body, updated_at) VALUES (?, ?, ?) ON CONFLICT (run_id) "
        "DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
        (run_id, body, time.time()),
    )


def select_trace(run_id: str, conn: sqlite3.Connection) -> dict[str, Any] | None:
    """Return the run's trace, or ``None``."""
    found = _rows(conn, "SELECT body FROM traces WHERE run_id = ?", [run_id])
    return cast(dict[str, Any], json.loads(found[0][0])) if found else None


def delete_runs(run_ids: list[str], conn: sqlite3.Connection) -> int:
    """Delete runs with their journals and traces; return how many runs existed."""
    # Deduplicated, so the count is of runs that existed, however often an id is named.
    ids = [(run_id,) for run_id in dict.fromkeys(run_ids)]
    conn.executemany("DELETE FROM journal WHERE run_id = ?", ids)
    conn.executemany("DELETE FROM traces WHERE run_id = ?", ids)
    return conn.executemany("DELETE FROM runs WHERE run_id = ?", ids).rowcount


def prune_doomed(
    statuses: tuple[str, ...],
    conn: sqlite3.Connection,
    *,
    older_than_s: float | None,
    keep_last: int | None,
) -> list[str]:
    """Return the ids ``prune`` deletes among runs in ``statuses`` (the stores' one rule)."""
    marks = ", ".join("?" * len(statuses))
    found = _rows(
        conn,
        f"SELECT run_id, flow, finished_at, updated_at FROM runs WHERE status IN ({marks})",
        statuses,
    )
    # Skinny runs, unvalidated: prune_victims reads only ids and timestamps.
    runs = [
        Run.model_construct(run_id=run_id, flow=flow, finished_at=finished, updated_at=updated)
        for run_id, flow, finished, updated in found
    ]
    return prune_victims(runs, older_than_s=older_than_s, keep_last=keep_last)


def prune(
    statuses: tuple[str, ...],
    conn: sqlite3.Connection,
    *,
    older_than_s: float | None,
    keep_last: int | None,
) -> int:
    """Delete what ``prune_doomed`` picks among runs in ``statuses``; return how many."""
    doomed = prune_doomed(statuses, conn, older_than_s=older_than_s, keep_last=keep_last)
    return delete_runs(doomed, conn)


# -- rows ------------------------------------------------------------------------------------


def run_row(run: Run) -> RunRow:
    """Return the run's row: its indexed columns and its JSON body.

    Raises:
        JournalError: The run holds a value that is not JSON.
    """
    body = run_json(run)
    return (
        run.status,
        run.flow,
        run.version,
        run.owner,
        run.created_at,
        run.updated_at,
        run.finished_at,
        body,
        run.run_id,
    )


def journal_row(run_id: str, record: JournalRecord) -> JournalRow:
    """Return the record's row, its data as JSON text (a ``JournalError`` when it is not)."""
    data = record_json(run_id, record)
    return (
        run_id,
        record.key,
        record.kind,
        record.fingerprint,
        record.actor,
        data,
        record.created_at,
    )


def trace_body(run_id: str, trace: dict[str, Any]) -> str:
    """Return a run's trace as JSON text (a ``JournalError`` when it is not JSON)."""
    return trace_json(run_id, trace)
