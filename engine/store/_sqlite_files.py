"""How :class:`~engine.store.SQLiteStore` reaches its file: read-only opens, and what fails.

A failed SQLite call becomes one line that names the file, says what is wrong with it and
what to do; so does a row that SQLite reads but the store cannot (its JSON damaged).
"""

from __future__ import annotations

import os
import shlex
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pydantic import ValidationError

from engine._base import JournalError
from engine.store import _sqlite_sql as sql

__all__ = [
    "checkpointer",
    "explain",
    "open_read_only",
    "open_read_write",
    "quick_check",
    "unreadable_row",
]


def open_read_write(
    path: str, durability: str, busy_timeout_s: float, check: bool, here: bool
) -> tuple[sqlite3.Connection, sqlite3.Connection]:
    """Open the writer (creating the schema) and the reader; runs in a worker thread.

    The loop's own thread reads on the reader, so it waits for no lock once open; so does
    the writer with ``here`` (the loop's thread commits on it), and it leaves checkpoints to
    the store (``Checkpoints`` in ``_sqlite_commit``).

    Raises:
        sqlite3.Error: SQLite cannot open or write the file.
        JournalError: The file is damaged (with ``check``), cannot enter WAL mode, or has a
            newer schema.
    """
    writer = _connect(path, durability, busy_timeout_s)
    try:
        if check:  # before WAL mode is set, which would write to the file
            quick_check(writer, path)
        mode = writer.execute("PRAGMA journal_mode = WAL").fetchall()[0][0]
        if mode != "wal":
            raise JournalError(
                f"SQLite store {path!r} could not enter WAL mode (it is in {mode!r}); "
                "put the file on a local filesystem"
            )
        sql.create_schema(writer, path)
        reader = _connect(path, durability, busy_timeout_s)
    except BaseException:
        writer.close()
        raise
    reader.execute("PRAGMA busy_timeout = 0")  # the loop's thread reads on it
    if here:  # and commits on the writer: no waiting for a lock, no checkpoint in a commit
        writer.execute("PRAGMA busy_timeout = 0")
        writer.execute("PRAGMA wal_autocheckpoint = 0")
    return writer, reader


def checkpointer(path: str, durability: str) -> Callable[[], sqlite3.Connection]:
    """Return what opens a connection that only checkpoints the WAL (in a thread of its
    own), waiting for no lock; at ``durability``, so that it fsyncs as the writer would."""
    return partial(_connect, path, durability, 0.0)


def _connect(path: str, durability: str, busy_timeout_s: float) -> sqlite3.Connection:
    # isolation_level=None: transactions are ours (BEGIN IMMEDIATE ... COMMIT), and each
    # read is its own snapshot, so it sees every commit made before it started.
    # check_same_thread=False: the loop's thread and worker threads vary; the commit lock
    # and the read limiter make sure one thread at a time uses each connection.
    conn = sqlite3.connect(
        path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA synchronous = {durability.upper()}")
    return conn


def open_read_only(path: str, busy_timeout_s: float) -> sqlite3.Connection:
    """Open ``path`` read-only, check it holds a store, and return the connection, which
    then waits for no lock (the loop's thread reads on it).

    Runs in a worker thread. SQLite reads a WAL file through an index beside it (``-shm``)
    that it must be able to create; where the folder forbids that and no ``-wal`` is beside
    the file, every commit is in the file itself, and it is opened as immutable instead.

    Raises:
        sqlite3.Error: SQLite cannot read the file.
        JournalError: The file is not a store of this engine, or has a newer schema.
    """
    try:
        conn = _open(path, busy_timeout_s, immutable=False)
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_READONLY_DIRECTORY:
            raise
        if os.path.exists(f"{path}-wal"):
            raise JournalError(
                f"SQLite store {path!r} cannot be read here: its folder is read-only and "
                f"{path}-wal beside it holds commits SQLite must index first; open it once "
                "where the folder may be written, or copy the file with its -wal to such a folder"
            ) from exc
        conn = _open(path, busy_timeout_s, immutable=True)
    conn.execute("PRAGMA busy_timeout = 0")
    return conn


def _open(path: str, busy_timeout_s: float, *, immutable: bool) -> sqlite3.Connection:
    # A URI, so that SQLite opens the file read-only and never creates it.
    uri = f"{Path(path).absolute().as_uri()}?mode=ro{'&immutable=1' if immutable else ''}"
    conn = sqlite3.connect(
        uri, uri=True, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
    )
    try:
        sql.check_schema(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


# What each SQLite result code means for the file, and what to do about it.
_DAMAGED = (
    'is damaged ({error}): `sqlite3 {path} "PRAGMA integrity_check"` says what is wrong, and '
    '`sqlite3 {path} ".recover" | sqlite3 recovered.db` copies out what can be read'
)
_EXPLAINED = {
    sqlite3.SQLITE_CORRUPT: _DAMAGED,
    sqlite3.SQLITE_NOTADB: _DAMAGED,
    sqlite3.SQLITE_READONLY: (
        "is read-only ({error}): make the file and its folder writable, or open it with "
        "read_only=True to read it"
    ),
    sqlite3.SQLITE_CANTOPEN: (
        "cannot be opened ({error}): check that the file and its folder exist and may be read"
    ),
    sqlite3.SQLITE_FULL: "cannot grow ({error}): free space on its disk",
    sqlite3.SQLITE_IOERR: "failed to read or write its file ({error}): check the disk",
    sqlite3.SQLITE_BUSY: (
        "is locked by another writer ({error}) longer than busy_timeout_s={timeout}; "
        "try again once it is done"
    ),
}


def explain(path: str, error: sqlite3.Error, busy_timeout_s: float) -> str:
    """Return one line on a failed SQLite call: the file, what is wrong, and what to do."""
    code = getattr(error, "sqlite_errorcode", None)
    # Extended result codes keep the primary code in their low byte.
    template = _EXPLAINED.get(code & 0xFF) if isinstance(code, int) else None
    if template is None:
        return f"SQLite store {path!r} failed: {error}"
    return f"SQLite store {path!r} " + template.format(
        error=error, path=shlex.quote(path), timeout=busy_timeout_s
    )


def quick_check(conn: sqlite3.Connection, path: str) -> None:
    """Check the file's structure (``PRAGMA quick_check``); runs in a worker thread.

    Raises:
        JournalError: The check found damage; the message says where and what to do.
    """
    found = conn.execute("PRAGMA quick_check(1)").fetchall()
    if found != [("ok",)]:
        why = " ".join(str(found[0][0] if found else "no answer").split())
        why = why.removeprefix("*** in database main *** ")
        raise JournalError(
            f"SQLite store {path!r} " + _DAMAGED.format(error=_clip(why), path=shlex.quote(path))
        )


def unreadable_row(path: str, exc: ValueError | RecursionError) -> JournalError:
    """Return the error for a row SQLite read but the store cannot (its JSON or fields)."""
    return JournalError(
        f"SQLite store {path!r} holds a row that cannot be read ({_one_line(exc)}); the file "
        f'is damaged or was written by hand: `sqlite3 {shlex.quote(path)} "PRAGMA '
        'integrity_check"` says more'
    )


def _one_line(exc: BaseException) -> str:
    """Return what an exception says, on one line (a validation error: its first error)."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        return f"{where}: {first['msg']}" if where else first["msg"]
    return _clip(" ".join(str(exc).split()))


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def translate(path: str, error: BaseException, busy_timeout_s: float) -> BaseException:
    """Return a database failure as the :class:`~engine.JournalError` a caller gets (any
    other error as it is). One failure may be shared by a whole batch: it is wrapped afresh
    per caller."""
    if isinstance(error, sqlite3.Error):
        wrapped = JournalError(explain(path, error, busy_timeout_s))
        wrapped.__cause__ = error
        return wrapped
    return error
