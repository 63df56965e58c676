"""A store in a PostgreSQL database: many workers on many machines share one journal.

Writes use group commit, as in :class:`~engine.store.SQLiteStore`: each write joins a queue,
and whichever waiter next holds the commit lock sends the whole queue as one transaction in
one pipelined round trip. No write raises on the server (see ``_postgres_sql``), so each
write keeps its own outcome without savepoints; should the server still reject a batch (a
deadlock between two workers, say), nothing of it committed, and each write is retried
alone.

psycopg and psycopg_pool are imported when the store opens, so ``import engine`` works
without the ``postgres`` extra.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from engine._base import JournalError
from engine.store import _postgres_io as io
from engine.store import _postgres_sql as sql
from engine.store._base import BatchedStore
from engine.store._checks import check_prune, journal_records, next_version, trace_json
from engine.store._paging import (
    POSTGRES_COUNTS,
    PageKey,
    check_page,
    counts_of,
    postgres_page,
)
from engine.store._types import PRUNABLE, JournalRecord, Run, RunStatus

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresStore"]

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_INSTALL_HINT = 'PostgresStore needs psycopg 3; install it with: pip install -e ".[postgres]"'


class PostgresStore(BatchedStore[io.Op]):
    """Keep runs, journals and traces in PostgreSQL, shared by every worker that opens it.

    The pool opens on first use (or by ``async with``); the store then creates or migrates
    its tables (``engine_*``, versioned in ``engine_meta``), once per database, whichever
    process gets there first. See ``docs/postgres.md``.

    A write returns once its transaction has committed, so it is as durable as the server
    makes commits (``synchronous_commit``), and every process sees it from then on.

    Args:
        dsn: A libpq connection string or URL (``postgresql://user@host:5432/db``). A URL may
            name the schema as ``?schema=NAME``.
        schema: The schema holding the tables (created when missing); the connections'
            ``search_path``. ``None``: the DSN's ``schema`` parameter, else the server's default.
        pool_min: Connections the pool keeps open.
        pool_max: The most connections the pool opens.
        timeout_s: How long a connection, a batch of writes or a read may take before it
            fails with :class:`~engine.JournalError`.

    Raises:
        ValueError: A schema that is not a plain identifier, or a bad pool size.
    """

    _reopen_hint = "the database"

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        pool_min: int = 1,
        pool_max: int = 10,
        timeout_s: float = 30.0,
    ) -> None:
        super().__init__()
        dsn, from_url = io.split_schema(dsn)
        schema = schema or from_url
        if schema is not None and not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(f"schema={schema!r} must be a plain identifier such as engine_runs")
        if not 0 <= pool_min <= pool_max or pool_max < 1:
            raise ValueError(
                f"need 0 <= pool_min <= pool_max and pool_max >= 1, got {pool_min}, {pool_max}"
            )
        self.dsn = dsn
        self.schema = schema
        self.pool_min, self.pool_max, self.timeout_s = pool_min, pool_max, timeout_s
        self._pool: AsyncConnectionPool[Any] | None = None

    def __repr__(self) -> str:
        where = "" if self.schema is None else f", schema={self.schema!r}"
        return f"PostgresStore({io.masked(self.dsn)!r}{where})"

    # -- the Store protocol --------------------------------------------------------------------

    async def create_run(self, run: Run) -> tuple[Run, bool]:
        """Insert ``run`` unless its id exists; return the stored run and whether it was new."""
        ((created, existing),) = await self._write(sql.create_run(run))
        if created:
            return run.model_copy(), True
        if existing is None:  # inserted by a transaction that committed after ours began
            stored = await self.get_run(run.run_id)
            if stored is None:  # and deleted since: rare enough to report, not to retry
                raise JournalError(f"run {run.run_id!r} was deleted while being created")
            return stored, False
        return Run.model_validate_json(existing), False

    async def get_run(self, run_id: str) -> Run | None:
        """Return the run, or ``None`` for an unknown id."""
        rows = await self._read(sql.read_run(run_id))
        return Run.model_validate_json(rows[0][0]) if rows else None

    async def list_runs(
        self, *, status: RunStatus | None = None, flow: str | None = None, limit: int | None = None
    ) -> list[Run]:
        """Return runs, oldest first, optionally filtered by status and flow."""
        rows = await self._read(sql.read_runs(status, flow, limit))
        return [Run.model_validate_json(body) for (body,) in rows]

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
        rows = await self._read(postgres_page(status, flow, search, after, limit))
        return [Run.model_validate_json(body) for (body,) in rows]

    async def count_runs_by_status(self) -> dict[str, int]:
        """Return how many runs the store holds in each status."""
        return counts_of(await self._read(POSTGRES_COUNTS))

    async def update_run(self, run: Run, *, expected_version: int) -> Run | None:
        """Replace the run if its stored version is ``expected_version`` (compare-and-set).

        Returns:
            The stored run (its version one higher), or ``None`` when another writer won.
        """
        new = next_version(run, expected_version)
        rows = await self._write(sql.update_run(new, expected_version))
        return new if rows else None

    async def finish_run(
        self,
        run: Run,
        *,
        expected_version: int,
        records: Sequence[JournalRecord] = (),
        trace: dict[str, Any] | None = None,
    ) -> Run | None:
        """Compare-and-set the run, appending ``records`` and storing ``trace`` in the same
        transaction (nothing is written when the compare-and-set loses: a takeover raised the
        version, so a worker that lost the run cannot record its outcome)."""
        new = next_version(run, expected_version)
        body = None if trace is None else trace_json(run.run_id, trace)
        ((won,),) = await self._write(sql.finish_run(new, expected_version, records, body))
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
        (row,) = await self._write(sql.append(run_id, records, owner))
        sql.fenced(run_id, owner, row)

    async def load_journal(self, run_id: str) -> list[JournalRecord]:
        """Return the run's journal in append order (empty for an unknown run)."""
        return journal_records(await self._read(sql.read_journal(run_id)))

    async def save_trace(self, run_id: str, trace: dict[str, Any]) -> None:
        """Store the run's trace (replacing an earlier one)."""
        await self._write(sql.save_trace(run_id, trace_json(run_id, trace)))

    async def load_trace(self, run_id: str) -> dict[str, Any] | None:
        """Return the run's stored trace, or ``None``."""
        return sql.trace_of(await self._read(sql.read_trace(run_id)))

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete runs with their journals and traces; return how many existed."""
        if not run_ids:
            return 0
        ((count,),) = await self._write(sql.delete_runs(run_ids))
        return int(count)

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        keep_last: int | None = None,
        statuses: Sequence[RunStatus] = PRUNABLE,
        dry_run: bool = False,
    ) -> int:
        """Delete old finished runs, in one statement; see :meth:`engine.store.Store.prune`."""
        check_prune(older_than_s, keep_last)
        if older_than_s is None and keep_last is None:
            return 0
        statement = sql.prune(statuses, older_than_s, keep_last, dry_run=dry_run)
        ((count,),) = await (self._read(statement) if dry_run else self._write(statement))
        return int(count)

    # -- for the distribution layer ------------------------------------------------------------

    async def open(self) -> AsyncConnectionPool[Any]:
        """Open the pool (creating or migrating the schema) and return it.

        Raises:
            JournalError: The server is unreachable, or its schema is newer than this engine.
            ImportError: psycopg is not installed.
        """
        if self._pool is None:
            await self._ensure_open()
        pool = self._pool
        if pool is None:  # for the type checker: an open store holds its pool
            raise self._closed_error()
        return pool

    @asynccontextmanager
    async def transaction(self, *, lock: str | None = None) -> AsyncIterator[AsyncConnection[Any]]:
        """Hold a pooled connection inside one transaction, committed when the block ends.

        For writes that must land together with the store's, such as a queue's jobs beside
        the runs they start.

        Args:
            lock: A name to hold a transaction-wide advisory lock on first (its key is a hash
                of the name), so one process at a time runs the block, as migrations do.
        """
        pool = await self.open()
        async with self._translated(), pool.connection() as conn, conn.transaction():
            if lock is not None:
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", [io.lock_key(lock)])
            yield conn

    async def create_runs(
        self, runs: Sequence[Run], *, connection: AsyncConnection[Any]
    ) -> list[str]:
        """Insert the runs whose ids do not exist, on ``connection``; return the ids inserted."""
        if not runs:
            return []
        async with self._translated():
            cursor = await connection.execute(*sql.create_runs(runs))
            return [run_id for (run_id,) in await cursor.fetchall()]

    async def save_dispatch(
        self,
        runs: Sequence[Run],
        queue: str,
        priority: int,
        locks: Sequence[str | None],
        *,
        connection: AsyncConnection[Any],
    ) -> None:
        """Record, on ``connection``, the queue, priority and lock submitted runs went to."""
        if runs:
            ids = [run.run_id for run in runs]
            async with self._translated():
                await connection.execute(*sql.save_dispatch(ids, queue, priority, locks))

    async def load_dispatch(self, run_id: str) -> tuple[str, int, str | None] | None:
        """Return the queue, priority and lock a submitted run went to, or ``None``."""
        rows = await self._read(sql.read_dispatch(run_id))
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    # -- group commit --------------------------------------------------------------------------

    async def _write(self, statement: sql.Statement) -> io.Rows:
        """Queue one write, see it committed (by this task or another), return its rows."""
        await self.open()
        op = io.Op(statement)
        self._queue.append(op)
        try:
            async with self._commit_lock:
                if not op.done:  # an earlier holder may have committed it in its batch
                    await self._flush()
        except BaseException:
            if not op.done and op in self._queue:  # cancelled before any batch took it
                self._queue.remove(op)
            raise
        if op.error is not None:
            raise self._translate(op.error)
        return op.rows

    async def _flush(self) -> None:
        """Commit everything queued as one transaction. The caller holds the commit lock."""
        batch, self._queue = self._queue, []
        try:
            if self._pool is None:
                raise self._closed_error()
            # Shielded and bounded: a batch holds other tasks' writes, which must not be cut
            # off half-sent because the task that happens to send them was cancelled.
            with anyio.fail_after(self.timeout_s, shield=True):
                await io.commit(self._pool, batch)
        except Exception as exc:
            for op in batch:
                if op.error is None and not op.done:
                    op.error = exc
        finally:
            for op in batch:
                op.done = True

    def _translate(self, error: BaseException) -> BaseException:
        # One failure may be shared by a whole batch: wrap it afresh per caller.
        if isinstance(error, TimeoutError):
            error = JournalError(
                f"{self!r}: a write took more than timeout_s={self.timeout_s}; its outcome is "
                "unknown (check the server's load and locks)"
            )
        elif io.is_driver_error(error):
            wrapped = JournalError(f"{self!r} failed: {error}")
            wrapped.__cause__ = error
            return wrapped
        return error

    # -- connections and reads -----------------------------------------------------------------

    def _is_open(self) -> bool:
        return self._pool is not None

    async def _open_connections(self) -> None:
        self._pool = await self._connect()

    async def _release(self) -> None:
        # The flush before this is bounded by timeout_s; closing the pool waits only for
        # connections in use.
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(timeout=self.timeout_s)

    async def _connect(self) -> AsyncConnectionPool[Any]:
        try:
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:
            raise ImportError(_INSTALL_HINT) from exc
        # Not autocommit=True in kwargs: procrastinate opens its LISTEN connection with these
        # kwargs and its own autocommit=True. The schema goes in the startup options, so
        # that connection, too, finds procrastinate's tables in it. Quoted, as the migration
        # creates it: unquoted, the server would fold a mixed-case name to lower case.
        kwargs: dict[str, Any] = {}
        if self.schema is not None:
            kwargs["options"] = f'-c search_path="{self.schema}"'
        await io.reach(self.dsn, kwargs, self.timeout_s, repr(self))
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self.dsn,
            min_size=self.pool_min,
            max_size=self.pool_max,
            kwargs=kwargs,
            configure=io.autocommit,
            timeout=self.timeout_s,
            open=False,
            name=f"engine-{self.schema or 'default'}",
        )
        try:
            async with self._translated():
                await pool.open(wait=self.pool_min > 0, timeout=self.timeout_s)
                await io.migrate(pool, self.schema, repr(self))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await pool.close()
            raise
        return pool

    async def _read(self, statement: sql.Statement) -> io.Rows:
        pool = await self.open()
        async with self._translated(), pool.connection() as conn:
            with anyio.fail_after(self.timeout_s):
                cursor = await conn.execute(*statement)
                rows: io.Rows = await cursor.fetchall()
                return rows

    def _translated(self) -> AbstractAsyncContextManager[None]:
        return io.translated(repr(self), self.timeout_s)
