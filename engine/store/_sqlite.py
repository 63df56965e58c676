"""A store in one SQLite file: the embedded default, durable across crashes and restarts.

Writes use group commit. Each write (create, compare-and-set, append, trace, delete) joins
a queue and waits; whichever waiter next holds the commit lock takes the whole queue and
commits it in one transaction, so many concurrent runs share one commit (one fsync in
``"full"`` mode). A leader yields once before it takes the lock, so the writes ready in that
loop iteration share its batch (with nothing else ready, it takes the lock at once). Each
write runs in its own SAVEPOINT: a lost compare-and-set or fenced-off append fails alone.
A write is queued before anything waits and its batch commits it even when its caller is
cancelled meanwhile (the leader commits shielded): a cancel stops the waiting, not the write.

Where no commit fsyncs (``"normal"``, ``"off"``) a batch commits on the loop's own thread,
cheaper than a hop to a worker thread, on a connection that never waits for a lock: when
another connection holds the write lock, the batch goes to a worker thread instead and waits
there up to ``busy_timeout_s``. In ``"full"`` mode every batch commits in a worker thread.
Small reads (one run, one journal) run on the loop's thread in every mode, the same way.

The SQL lives in plain synchronous functions that take a connection (``_sqlite_sql``, and
``_sqlite_commit`` for a batch's transaction); only :class:`SQLiteStore` awaits.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Literal, TypeVar, cast, get_args

import anyio
import anyio.lowlevel
import anyio.to_thread

from engine._base import JournalError, cancel_scope, copy_model, fast_lock, nothing_else_ready
from engine.store import _sqlite_commit as commits
from engine.store import _sqlite_files as files
from engine.store import _sqlite_sql as sql
from engine.store._base import BatchedStore
from engine.store._checks import check_prune, next_version
from engine.store._paging import PageKey, check_page, page_sql, sqlite_counts, sqlite_page
from engine.store._types import PRUNABLE, JournalRecord, Run, RunStatus

__all__ = ["Durability", "SQLiteStore"]

T = TypeVar("T")
Durability = Literal["full", "normal", "off"]


class SQLiteStore(BatchedStore[commits.Op]):
    """Keep runs, journals and traces in one SQLite file (WAL mode), safe across processes.

    The file is opened on first use (or by ``async with``), and its schema is created and
    versioned by the store. Several store objects, in one process or many, may open the same
    file; a process that crashed leaves a file the next one reopens as is.

    With ``read_only=True`` the file is only read: it is opened read-only (``mode=ro``),
    nothing is set up or migrated in it, and every write fails with a
    :class:`~engine.JournalError`, so a file that may not be written (its permissions, a
    read-only disk, a copy to be left as it is) can still be looked into. With
    ``check=True`` the file's structure is checked when it is opened, before anything is
    written to it, so a damaged file fails the open rather than the first write that reaches
    its damage (the check reads the whole file: about a second per gigabyte).

    When a transition is on disk depends on ``durability``; in every mode a write returns
    only after the transaction holding it has committed, so a later read sees it:

    - ``"full"`` (``synchronous=FULL``): the WAL is fsynced at every commit, so a write is on
      disk when it returns and survives a process crash, an OS crash and power loss.
    - ``"normal"`` (the default; WAL with ``synchronous=NORMAL``): a returned write has been
      handed to the OS and survives a process crash; the WAL is fsynced only at checkpoints,
      so the last transitions before an OS crash or power loss may be lost (the file stays
      consistent).
    - ``"off"`` (``synchronous=OFF``): nothing is ever fsynced. A returned write survives a
      process crash, but an OS crash or power loss may lose recent transitions and can
      corrupt the file. For scratch runs and benchmarks.

    Args:
        path: The database file (created when missing; its folder must exist).
        durability: ``"full"``, ``"normal"`` or ``"off"``, as above.
        busy_timeout_s: How long a write waits for another process's write lock before it
            fails with :class:`~engine.JournalError`.
        read_only: Only read the file, as above; it must exist.
        check: Check the file's structure on opening, as above.

    A file the store cannot use (damaged, read-only when written, locked past
    ``busy_timeout_s``, a full disk) fails each operation with a :class:`~engine.JournalError`
    that names the file, what is wrong and what to do.

    Raises:
        ValueError: An unknown ``durability``, a negative ``busy_timeout_s``, or ``":memory:"``.
    """

    #: Every write is queued before its coroutine first waits, and the batch it joins is
    #: committed whoever waits for it: a caller cancelled while its write waits only stops
    #: waiting, and the write lands (or fails) with its batch. So a journal record handed to
    #: the store is never lost to a cancel, and its writer needs no shield around it. (A
    #: native asyncio ``Task.cancel()``, which no anyio shield stops either, can still take a
    #: leader's own write back out of a queue not yet taken.)
    writes_land = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "normal",
        busy_timeout_s: float = 30.0,
        read_only: bool = False,
        check: bool = False,
    ) -> None:
        super().__init__()
        self._commit_lock = fast_lock()  # a leader gives way before it, where others are ready
        valid = get_args(Durability)
        if durability not in valid:
            raise ValueError(
                f"durability={durability!r} is not one of {', '.join(map(repr, valid))}"
            )
        if busy_timeout_s < 0:
            raise ValueError(f"busy_timeout_s={busy_timeout_s!r} must be zero or more")
        self.path = os.fspath(path)
        if self.path == ":memory:" or self.path.startswith("file::memory:"):
            raise ValueError("SQLiteStore needs a file path; use MemoryStore for runs in memory")
        self.durability: Durability = durability
        self.busy_timeout_s = busy_timeout_s
        self.read_only = read_only
        self.check = check
        #: Whether batches commit on the loop's thread (as small reads do): see the module.
        self._here = durability != "full"
        self._lent_ms = round(busy_timeout_s * 1000)
        self._writer_lent = self._lent_ms if self._here else None
        self._checkpoints = commits.Checkpoints(files.checkpointer(self.path, durability))
        self._writer: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        #: The write that takes the queue next, and what the others in it wait on.
        self._leader: commits.Op | None = None
        self._woken: anyio.Event | None = None
        self._read_limiter = anyio.CapacityLimiter(1)  # the reader: one thread at a time

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"SQLiteStore({self.path!r}, durability={self.durability!r}{mode})"

    # -- the Store protocol --------------------------------------------------------------------

    async def create_run(self, run: Run) -> tuple[Run, bool]:
        """Insert ``run`` unless its id exists; return the stored run and whether it was new."""
        existing = await self._write(partial(sql.insert_run, sql.run_row(run)))
        if existing is None:
            return copy_model(run, {}), True
        return existing, False

    async def get_run(self, run_id: str) -> Run | None:
        """Return the run, or ``None`` for an unknown id."""
        runs = await self._read(
            partial(sql.select_runs, "WHERE run_id = ?", [run_id], None), small=True
        )
        return runs[0] if runs else None

    async def list_runs(
        self, *, status: RunStatus | None = None, flow: str | None = None, limit: int | None = None
    ) -> list[Run]:
        """Return runs, oldest first, optionally filtered by status and flow."""
        terms = [
            (column, value)
            for column, value in (("status", status), ("flow", flow))
            if value is not None
        ]
        where = " AND ".join(f"{column} = ?" for column, _ in terms)
        args = [value for _, value in terms]
        return await self._read(
            partial(sql.select_runs, f"WHERE {where}" if where else "", args, limit)
        )

    async def page_runs(
        self,
        *,
        status: RunStatus | None = None,
        flow: str | None = None,
        search: str | None = None,
        after: PageKey | None = None,
        limit: int = 50,
    ) -> list[Run]:
        """Return a page of runs, newest first; see :meth:`engine.store.Store.page_runs`."""
        check_page(after, limit)
        where, args = page_sql(status, flow, search, after, mark=":{}")
        return await self._read(partial(sqlite_page, where, args, limit))

    async def count_runs_by_status(self) -> dict[str, int]:
        """Return how many runs the store holds in each status."""
        return await self._read(sqlite_counts)

    async def update_run(self, run: Run, *, expected_version: int) -> Run | None:
        """Replace the run if its stored version is ``expected_version`` (compare-and-set).

        Returns:
            The stored run (its version one higher), or ``None`` when another writer won.
        """
        new = next_version(run, expected_version)
        won = await self._write(partial(sql.update_run, sql.run_row(new), expected_version))
        return new if won else None

    async def finish_run(
        self,
        run: Run,
        *,
        expected_version: int,
        records: Sequence[JournalRecord] = (),
        trace: dict[str, Any] | None = None,
    ) -> Run | None:
        """Compare-and-set the run, appending ``records`` and storing ``trace`` in the same
        transaction (nothing is written when the compare-and-set loses)."""
        new = next_version(run, expected_version)
        rows = [sql.journal_row(run.run_id, record) for record in records]
        body = None if trace is None else sql.trace_body(run.run_id, trace)
        won = await self._write(
            partial(sql.finish_run, sql.run_row(new), expected_version, rows, body)
        )
        return new if won else None

    async def append(
        self, run_id: str, records: Sequence[JournalRecord], *, owner: str | None = None
    ) -> None:
        """Append journal records in order; with ``owner``, only while that owner holds the run.

        Raises:
            KeyError: The run does not exist.
            RunConflictError: ``owner`` no longer holds the run (another worker took it over).
            JournalError: A record's ``data`` is not JSON, or the database write failed.
        """
        rows = [sql.journal_row(run_id, record) for record in records]
        await self._write(partial(sql.insert_journal, run_id, owner, rows))

    async def load_journal(self, run_id: str) -> list[JournalRecord]:
        """Return the run's journal in append order (empty for an unknown run)."""
        return await self._read(partial(sql.select_journal, run_id), small=True)

    async def save_trace(self, run_id: str, trace: dict[str, Any]) -> None:
        """Store the run's trace (replacing an earlier one)."""
        body = sql.trace_body(run_id, trace)
        await self._write(partial(sql.upsert_trace, run_id, body))

    async def load_trace(self, run_id: str) -> dict[str, Any] | None:
        """Return the run's stored trace, or ``None``."""
        return await self._read(partial(sql.select_trace, run_id))

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete runs with their journals and traces; return how many existed."""
        return await self._write(partial(sql.delete_runs, list(run_ids)))

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        keep_last: int | None = None,
        statuses: Sequence[RunStatus] = PRUNABLE,
        dry_run: bool = False,
    ) -> int:
        """Delete old finished runs, in one transaction; see :meth:`engine.store.Store.prune`."""
        check_prune(older_than_s, keep_last)
        kept = tuple(statuses)
        if dry_run:  # a read: a read-only store answers it too
            doomed = partial(sql.prune_doomed, kept, older_than_s=older_than_s, keep_last=keep_last)
            return len(await self._read(doomed))
        return await self._write(
            partial(sql.prune, kept, older_than_s=older_than_s, keep_last=keep_last)
        )

    # -- group commit --------------------------------------------------------------------------

    async def _write(self, apply: Callable[[sqlite3.Connection], T]) -> T:
        """Queue one write, see it committed (by this task or another), return its result.

        The first write to join an untaken queue leads it: once the commit lock is free it
        takes the whole queue and commits it, shielded, so a queue with a leader is always
        committed. The others wait on one event for the queue, set when their batch has
        committed. A write is queued before anything waits, and a caller cancelled while it
        waits only stops waiting: its write stays in the queue and lands with its batch
        (see :attr:`writes_land`).
        """
        if self.read_only:
            raise JournalError(
                f"SQLite store {self.path!r} is open read-only, so it cannot be written; "
                "open it without read_only=True to write"
            )
        if self._writer is None:
            await self._ensure_open()
        op = commits.Op(apply)
        self._queue.append(op)
        while not op.done:
            if self._leader is None:
                self._leader = op
                await self._lead(op)
            else:
                if self._woken is None:
                    self._woken = anyio.Event()
                await self._woken.wait()
        if op.error is not None:
            raise self._translate(op.error)
        return cast(T, op.result)

    async def _lead(self, op: commits.Op) -> None:
        """Commit the queue ``op`` leads, shielded: an anyio cancel of its caller waits for it
        (bounded by the commit lock's holder, itself bounded by ``busy_timeout_s``)."""
        try:
            with cancel_scope(shield=True):
                if not nothing_else_ready():  # the writes ready now join this batch
                    await anyio.lowlevel.checkpoint()
                async with self._commit_lock:
                    if not op.done:  # a close may have committed it already
                        await self._flush()
                        await self._checkpoint_if_due()
        except BaseException:
            # Not an anyio cancel (the lead is shielded from those): an interrupt, a native
            # asyncio Task.cancel() (which no anyio shield stops), or no worker thread to be
            # had. The write fails with it, untouched; the queue goes to another leader.
            if not op.done and op in self._queue:
                self._queue.remove(op)
            if self._leader is op:  # it failed before taking the queue: pass the lead on
                self._leader = None
                self._wake_queue()
            raise

    def _wake_queue(self) -> None:
        """Wake the writes waiting in the queue (one of them leads it next)."""
        woken, self._woken = self._woken, None
        if woken is not None:
            woken.set()

    async def _flush(self) -> None:
        """Commit everything queued as one transaction. The caller holds the commit lock."""
        batch, self._queue = self._queue, []
        woken, self._woken = self._woken, None
        self._leader = None  # the next write to come leads the next batch
        try:
            if self._writer is None:
                for op in batch:
                    op.error, op.done = self._closed_error(), True
            elif not (self._here and commits.commit(self._writer, batch, give_way=True)):
                try:  # "full", or the file is locked by another connection: a worker thread
                    await anyio.to_thread.run_sync(
                        commits.commit_waiting, self._writer, batch, self._writer_lent
                    )
                except BaseException:
                    # Failed before the thread started (the thread itself cannot be cut
                    # short): put the untouched ops back first in the queue, in order.
                    self._queue[:0] = [op for op in batch if not op.done]
                    raise
        finally:
            if woken is not None:  # done, or back in the queue to be led by another
                woken.set()

    async def _checkpoint_if_due(self) -> None:
        """Now and then checkpoint the loop's writer in a thread; the caller holds the lock."""
        if self._here and self._writer is not None and self._checkpoints.due():
            with anyio.CancelScope(shield=True):  # its write committed: it returns
                await anyio.to_thread.run_sync(self._checkpoints.run, self._writer)

    def _translate(self, error: BaseException) -> BaseException:
        return files.translate(self.path, error, self.busy_timeout_s)

    # -- connections and reads -----------------------------------------------------------------

    def _is_open(self) -> bool:
        return self._reader is not None

    async def _open_connections(self) -> None:
        try:
            if self.read_only:
                self._reader = await anyio.to_thread.run_sync(
                    files.open_read_only, self.path, self.busy_timeout_s
                )
            else:
                how = (self.durability, self.busy_timeout_s, self.check, self._here)
                self._writer, self._reader = await anyio.to_thread.run_sync(
                    files.open_read_write, self.path, *how
                )
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    async def _release(self) -> None:
        connections = (self._writer, self._reader)
        self._writer = self._reader = None
        if connections != (None, None):
            await anyio.to_thread.run_sync(
                commits.close_all, connections, self._checkpoints, limiter=self._read_limiter
            )

    async def _read(self, query: Callable[[sqlite3.Connection], T], *, small: bool = False) -> T:
        """Run ``query``: a ``small`` one on the loop's thread where it may, else in a thread."""
        await self._ensure_open()
        try:
            if small:
                await anyio.lowlevel.checkpoint()
                if self._read_limiter.borrowed_tokens == 0:  # no thread holds the reader
                    try:
                        return self._run_read(query)
                    except sqlite3.Error as exc:
                        if not commits.is_busy(exc):
                            raise
            return await anyio.to_thread.run_sync(
                self._read_waiting, query, limiter=self._read_limiter
            )
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    def _read_waiting(self, query: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``query`` in a worker thread, waiting up to ``busy_timeout_s`` for a lock."""
        if self._reader is None:
            return self._run_read(query)
        return commits.waiting(self._reader, self._lent_ms, lambda _: self._run_read(query))

    def _run_read(self, query: Callable[[sqlite3.Connection], T]) -> T:
        if self._reader is None:  # closed while this read waited for the connection
            raise self._closed_error()
        try:
            return query(self._reader)
        except (ValueError, RecursionError) as exc:
            # A row SQLite reads but whose JSON or fields are not what the store wrote.
            raise files.unreadable_row(self.path, exc) from exc
