"""Connections of :class:`~engine.store.PostgresStore`: the DSN, migrations, pipelined batches.

psycopg is imported inside the functions that need it, so the package imports without it.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio

from engine._base import JournalError
from engine.store import _postgres_sql as sql

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = [
    "Op",
    "Rows",
    "autocommit",
    "commit",
    "is_driver_error",
    "lock_key",
    "masked",
    "migrate",
    "pipelined",
    "reach",
    "split_schema",
    "translated",
]

Rows = list[tuple[Any, ...]]
#: The longest a first connection waits for a host that does not answer, in seconds.
_CONNECT_S = 10.0


async def migrate(pool: AsyncConnectionPool[Any], schema: str | None, where: str) -> None:
    """Create the schema and apply the migrations it lacks, one process at a time."""
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", [lock_key(schema)])
        if schema is not None:
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await conn.execute(sql.META_TABLE)
        cursor = await conn.execute("SELECT value FROM engine_meta WHERE key = 'schema_version'")
        found = await cursor.fetchone()
        version = int(found[0]) if found else 0
        if version > len(sql.MIGRATIONS):
            raise JournalError(
                f"{where} has schema version {version}, newer than this engine's "
                f"{len(sql.MIGRATIONS)}; upgrade the engine to open it"
            )
        for statements in sql.MIGRATIONS[version:]:
            for statement in statements:
                await conn.execute(statement)
        await conn.execute(
            "INSERT INTO engine_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [str(len(sql.MIGRATIONS))],
        )


async def reach(dsn: str, kwargs: dict[str, Any], timeout_s: float, where: str) -> None:
    """Connect once, directly, and close: a bad DSN fails now, with its cause.

    A pool retries a failing connection in the background until its own timeout, and tells
    only that it timed out; one direct attempt says why (a refused port, a missing database,
    an unknown host) at once.

    Raises:
        JournalError: The server cannot be reached, or refuses this DSN.
    """
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        given = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise JournalError(f"{where} has a bad DSN: {_one_line(exc, dsn)}") from None
    # libpq counts whole seconds per host tried; a host that never answers costs this much.
    wait = given.get("connect_timeout") or max(2, math.ceil(min(timeout_s, _CONNECT_S)))
    try:
        with anyio.fail_after(timeout_s):
            conn = await psycopg.AsyncConnection.connect(dsn, connect_timeout=wait, **kwargs)
    except TimeoutError as exc:
        raise JournalError(f"{where} did not answer within timeout_s={timeout_s}") from exc
    except psycopg.Error as exc:
        raise JournalError(f"{where} cannot connect: {_one_line(exc, dsn)}") from exc
    await conn.close()


def _one_line(error: BaseException, dsn: str) -> str:
    """The driver's message on one line, without the DSN's password."""
    text = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
    password = _password(dsn)
    return text.replace(password, "***") if password else text


def _password(dsn: str) -> str | None:
    if "://" in dsn:
        return urlsplit(dsn).password
    found = re.search(r"password\s*=\s*(\S+)", dsn)
    return found.group(1) if found else None


async def autocommit(conn: AsyncConnection[Any]) -> None:
    """Configure a new pooled connection: each statement commits unless in a transaction."""
    await conn.set_autocommit(True)


@dataclass(slots=True, eq=False)
class Op:
    """One queued write and, once its batch committed, its rows or its error."""

    statement: sql.Statement
    rows: Rows = field(default_factory=list)
    error: BaseException | None = None
    done: bool = False


async def commit(pool: AsyncConnectionPool[Any], batch: list[Op]) -> None:
    """Run ``batch`` as one pipelined transaction; on a server error, each write alone."""
    import psycopg

    async with pool.connection() as conn:
        try:
            results = await pipelined(conn, [op.statement for op in batch])
        except psycopg.Error as exc:
            if exc.sqlstate is None or conn.broken:
                raise  # the connection failed: whether the batch committed is unknown
            # The server rejected the batch and rolled it back: retry each write alone, so
            # that a bad write (or a deadlock's victim) fails by itself.
            for op in batch:
                try:
                    (op.rows,) = await pipelined(conn, [op.statement])
                except psycopg.Error as alone:
                    if alone.sqlstate is None or conn.broken:
                        raise
                    op.error = alone
                op.done = True
            return
    for op, rows in zip(batch, results, strict=True):
        op.rows = rows


async def pipelined(conn: AsyncConnection[Any], statements: list[sql.Statement]) -> list[Rows]:
    """Send the statements and their transaction in one round trip; return each one's rows."""
    cursors = []
    async with conn.pipeline(), conn.transaction():
        for statement in statements:
            cursor = conn.cursor()
            await cursor.execute(*statement)
            cursors.append(cursor)
    return [await c.fetchall() if c.description is not None else [] for c in cursors]


@asynccontextmanager
async def translated(where: str, timeout_s: float) -> AsyncIterator[None]:
    """Turn driver and pool errors (and timeouts) into :class:`~engine.JournalError`."""
    try:
        yield
    except TimeoutError as exc:
        raise JournalError(f"{where} did not answer within timeout_s={timeout_s}") from exc
    except Exception as exc:
        if is_driver_error(exc):
            raise JournalError(f"{where} failed: {exc}") from exc
        raise


def is_driver_error(error: BaseException) -> bool:
    module = type(error).__module__
    return module.startswith(("psycopg", "psycopg_pool"))


def lock_key(name: str | None) -> int:
    """An advisory-lock key for ``name`` (a schema, or a lock of the queue): 64 bits of a hash."""
    digest = hashlib.blake2b(f"engine-schema:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def split_schema(dsn: str) -> tuple[str, str | None]:
    """Take a ``schema`` query parameter out of a URL DSN (libpq does not know it)."""
    if dsn.startswith("postgresql+psycopg://"):
        dsn = "postgresql://" + dsn[len("postgresql+psycopg://") :]
    if "://" not in dsn:
        return dsn, None
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in query if key == "schema"), None)
    rest = urlencode([(key, value) for key, value in query if key != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


def masked(dsn: str) -> str:
    """The DSN without its password, for messages and logs."""
    if "://" in dsn:
        parts = urlsplit(dsn)
        if parts.password is not None:
            host = parts.netloc.rpartition("@")[2]
            return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))
        return dsn
    return re.sub(r"(password\s*=\s*)(\S+)", r"\1***", dsn)
