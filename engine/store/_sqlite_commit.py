"""The synchronous side of :class:`~engine.store.SQLiteStore`'s group commit and reads.

A batch of queued writes commits in one transaction, each write keeping its own outcome;
these functions never await. Where the store's durability does not fsync at every commit
(``"normal"``, ``"off"``), its writer never waits for a lock (``busy_timeout`` zero) and a
batch commits on the event loop's own thread: :func:`commit` with ``give_way=True`` leaves a
batch that finds another connection holding the write lock untouched, and the store hands it
to a worker thread, where :func:`waiting` lends the connection the store's full
``busy_timeout_s`` for that one call. Such a writer leaves checkpoints to
:class:`Checkpoints`, which has them run in a worker thread. In ``"full"`` mode every batch
commits in a worker thread, where the fsync does not hold up the loop. The reader, which
small reads use on the loop's thread in every mode, is lent a busy timeout the same way.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from engine.store import _sqlite_sql as sql

__all__ = ["Checkpoints", "Op", "close_all", "commit", "commit_waiting", "is_busy", "waiting"]

T = TypeVar("T")


@dataclass(slots=True, eq=False)
class Op:
    """One queued write and, once its batch committed, its outcome."""

    apply: Callable[[sqlite3.Connection], object]
    result: object = None
    error: BaseException | None = None
    done: bool = False


def is_busy(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's ``SQLITE_BUSY`` (a lock held by another connection)."""
    code = getattr(error, "sqlite_errorcode", None)
    # Extended result codes (SQLITE_BUSY_RECOVERY, ...) keep the primary code in their low byte.
    return isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_BUSY


def commit(conn: sqlite3.Connection, batch: list[Op], *, give_way: bool = False) -> bool:
    """Apply ``batch`` in one transaction, each op failing alone; raises only an interrupt
    (what is not an ``Exception``), once the batch has failed with it.

    The ops run straight through first; only when one of them raises is the transaction
    rolled back and the batch applied again, each op in its own savepoint. The ops are pure
    functions of the database, so the outcome is as if every op had its own savepoint.

    With ``give_way``, a batch that cannot take the write lock at once (``SQLITE_BUSY``) is
    rolled back and left as it came (no op done), and ``False`` returned: the caller commits
    it again where waiting is allowed. Otherwise every op is done and ``True`` returned.
    """
    gave_way = False
    try:
        conn.execute("BEGIN IMMEDIATE")
        if not _apply_all(conn, batch):
            sql.rollback(conn)
            conn.execute("BEGIN IMMEDIATE")
            _apply_each(conn, batch)
        conn.execute("COMMIT")
    except BaseException as exc:
        sql.rollback(conn)
        if give_way and is_busy(exc):
            for op in batch:  # nothing of the batch is stored: it is to be committed afresh
                op.result = op.error = None
            gave_way = True
            return False
        # Nothing of the batch is stored: every op that had not failed on its own fails now.
        for op in batch:
            if op.error is None:
                op.error, op.result = exc, None
        if not isinstance(exc, Exception):
            raise
    finally:
        if not gave_way:
            for op in batch:
                op.done = True
    return True


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


def commit_waiting(conn: sqlite3.Connection, batch: list[Op], lent_ms: int | None) -> None:
    """Commit ``batch`` in a worker thread, where it may wait for the write lock: with
    ``lent_ms``, a loop's connection waits that long for this one batch."""
    if lent_ms is None:
        commit(conn, batch)
    else:
        waiting(conn, lent_ms, lambda conn: commit(conn, batch))


def waiting(
    conn: sqlite3.Connection, busy_timeout_ms: int, call: Callable[[sqlite3.Connection], T]
) -> T:
    """Run ``call(conn)`` with ``busy_timeout_ms`` as the connection's busy timeout, then
    set it back to zero; for a worker thread, on a connection the loop uses without waiting."""
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    try:
        return call(conn)
    finally:
        conn.execute("PRAGMA busy_timeout = 0")


class Checkpoints:
    """When to checkpoint the WAL of a writer that commits on the loop's thread.

    Such a writer never checkpoints on its own (``wal_autocheckpoint = 0``): a checkpoint
    copies the WAL into the file and, at ``"normal"``, fsyncs both, milliseconds the loop
    would stand still. Instead, about every ``every`` batches the WAL is checkpointed twice.
    First, given ``connect`` (a connection of its own), in a thread of its own while writes
    go on: it copies and fsyncs the bulk of the WAL, and no write waits for it (unless it is
    still under way after ``every`` batches). Once it is done, :meth:`run` checkpoints what
    came meanwhile in a worker thread while the store holds its commit lock, a short one, so
    that it completes and the next commit starts the WAL afresh. ``every`` follows the
    batches' size so that a WAL holds about as many pages as SQLite's own checkpoints would
    let it (their default, 1000).
    """

    PAGES = 1000

    def __init__(self, connect: Callable[[], sqlite3.Connection] | None = None) -> None:
        self.batches = 0
        self.every = 100
        #: Pages the last checkpoint left in the WAL: it could not copy them all (a reader
        #: in another connection still needed them), so the WAL did not start afresh.
        self.kept = 0
        self._connect = connect
        self._conn: sqlite3.Connection | None = None
        self._bulk: threading.Thread | None = None

    def due(self) -> bool:
        """Count one batch committed; return whether :meth:`run` is due (start the bulk
        checkpoint in its thread when that is due instead)."""
        self.batches += 1
        if self._bulk is not None:  # done, or slow: what came meanwhile is due (run waits)
            return not self._bulk.is_alive() or self.batches >= self.every
        if self._connect is None:
            return self.batches >= self.every
        # Three quarters of the way: the WAL keeps growing while the bulk is copied.
        if self.batches * 4 >= self.every * 3:
            self._bulk = threading.Thread(target=self._copy_bulk, name="sqlite-checkpoint")
            self._bulk.start()
        return False

    def _copy_bulk(self) -> None:
        """Checkpoint on the checkpointer's own connection (in its own thread); never raises."""
        try:
            if self._conn is None and self._connect is not None:
                self._conn = self._connect()
            if self._conn is not None:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:  # a failing file fails the next write, which says why
            return

    def run(self, conn: sqlite3.Connection) -> None:
        """Checkpoint what the WAL holds (in a worker thread), once a bulk checkpoint under
        way is done; never raises."""
        bulk, self._bulk = self._bulk, None
        if bulk is not None:  # a slow bulk: the WAL grows no further than without it
            bulk.join()
        batches, self.batches = self.batches, 0
        try:
            _, pages, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
        except sqlite3.Error:  # a failing file fails the next write, which says why
            return
        written = pages - self.kept if pages >= self.kept else pages
        self.kept = 0 if copied >= pages else pages
        self.every = max(1, min(self.PAGES, batches * self.PAGES // max(written, 1)))

    def close(self) -> None:
        """Wait for a bulk checkpoint under way, and close its connection (in a thread)."""
        bulk, self._bulk = self._bulk, None
        if bulk is not None:
            bulk.join()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def close_all(
    connections: tuple[sqlite3.Connection | None, ...], checkpoints: Checkpoints | None = None
) -> None:
    """Close the store's connections (those opened), its checkpointer's first."""
    if checkpoints is not None:
        checkpoints.close()
    for conn in connections:
        if conn is not None:
            conn.close()
