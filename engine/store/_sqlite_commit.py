"""The writer thread's side of :class:`~engine.store.SQLiteStore`'s group commit.

A batch of queued writes reaches one worker thread and commits there in one transaction,
each write keeping its own outcome; these functions are synchronous and never await.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from engine.store import _sqlite_sql as sql

__all__ = ["Op", "close_all", "commit"]


@dataclass(slots=True, eq=False)
class Op:
    """One queued write and, once its batch committed, its outcome."""

    apply: Callable[[sqlite3.Connection], object]
    result: object = None
    error: BaseException | None = None
    done: bool = False


def commit(conn: sqlite3.Connection, batch: list[Op]) -> None:
    """Apply ``batch`` in one transaction, each op failing alone; never raises.

    The ops run straight through first; only when one of them raises is the transaction
    rolled back and the batch applied again, each op in its own savepoint. The ops are pure
    functions of the database, so the outcome is as if every op had its own savepoint.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        if not _apply_all(conn, batch):
            sql.rollback(conn)
            conn.execute("BEGIN IMMEDIATE")
            _apply_each(conn, batch)
        conn.execute("COMMIT")
    except Exception as exc:
        sql.rollback(conn)
        # Nothing of the batch is stored: every op that had not failed on its own fails now.
        for op in batch:
            if op.error is None:
                op.error, op.result = exc, None
    finally:
        for op in batch:
            op.done = True


def _apply_all(conn: sqlite3.Connection, batch: list[Op]) -> bool:
    """Apply every op with no savepoints; return False at the first that raises."""
    for op in batch:
        try:
            op.result = op.apply(conn)
        except Exception:
            return False
    return True


def _apply_each(conn: sqlite3.Connection, batch: list[Op]) -> None:
    """Apply every op in a savepoint of its own: a failing op is undone and keeps its error."""
    for op in batch:
        op.result = None
        conn.execute("SAVEPOINT op")
        try:
            op.result = op.apply(conn)
        except Exception as exc:
            conn.execute("ROLLBACK TO op")
            op.error = exc
        conn.execute("RELEASE op")


def close_all(connections: tuple[sqlite3.Connection | None, ...]) -> None:
    """Close the store's connections (those opened)."""
    for conn in connections:
        if conn is not None:
            conn.close()
