"""The SQL of :class:`~engine.store.PostgresStore`: its versioned schema and its statements.

Every write is one statement whose parameters are plain values (JSON travels as text), so
the store can pipeline a whole batch of them into one transaction. A write that must not
happen (a lost compare-and-set, a fenced-off append) is a statement that changes nothing
and says why in the row it returns: no write raises on the server, so one write's failure
never aborts the others in its batch.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, cast

from engine.store._checks import check_fence, record_json, run_json
from engine.store._types import JournalRecord, Run

__all__ = [
    "META_TABLE",
    "MIGRATIONS",
    "Statement",
    "append",
    "create_run",
    "create_runs",
    "delete_runs",
    "fenced",
    "finish_run",
    "prune",
    "read_dispatch",
    "read_journal",
    "read_run",
    "read_runs",
    "read_trace",
    "run_params",
    "save_dispatch",
    "save_trace",
    "trace_of",
    "update_run",
]

#: A statement and its named parameters.
Statement = tuple[str, dict[str, Any]]

META_TABLE = "CREATE TABLE IF NOT EXISTS engine_meta (key text PRIMARY KEY, value text NOT NULL)"

#: The schema, one entry per version: the store applies those above the stored version, in
#: order, in one transaction. Append new versions; never edit a released one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE engine_runs (
            run_id text PRIMARY KEY, status text NOT NULL, flow text NOT NULL,
            version bigint NOT NULL, owner text, created_at double precision NOT NULL,
            updated_at double precision NOT NULL, finished_at double precision,
            body json NOT NULL)""",
        "CREATE INDEX engine_runs_by_status ON engine_runs (status, created_at, run_id)",
        "CREATE INDEX engine_runs_by_flow ON engine_runs (flow, created_at, run_id)",
        "CREATE INDEX engine_runs_by_age ON engine_runs (created_at, run_id)",
        """CREATE TABLE engine_journal (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run_id text NOT NULL,
            key text NOT NULL, kind text NOT NULL, fingerprint text NOT NULL, actor text,
            data json NOT NULL, created_at double precision NOT NULL)""",
        "CREATE INDEX engine_journal_by_run ON engine_journal (run_id, id)",
        """CREATE TABLE engine_traces (
            run_id text PRIMARY KEY, body json NOT NULL, updated_at double precision NOT NULL)""",
        # How a submitted run was queued, so that a resume requested later queues alike.
        """CREATE TABLE engine_dispatch (
            run_id text PRIMARY KEY, queue text NOT NULL, priority integer NOT NULL,
            lock text)""",
    ),
)

_RUN_COLUMNS = "run_id, status, flow, version, owner, created_at, updated_at, finished_at, body"
_RUN_VALUES = (
    "%(run_id)s, %(status)s, %(flow)s, %(version)s, %(owner)s, %(created_at)s, "
    "%(updated_at)s, %(finished_at)s, %(body)s::json"
)
# The journal records of one write, in order: one array per column.
_RECORDS = (
    "unnest(%(keys)s::text[], %(kinds)s::text[], %(fingerprints)s::text[], %(actors)s::text[], "
    "%(data)s::text[], %(created)s::float8[]) WITH ORDINALITY "
    "AS j(key, kind, fingerprint, actor, data, created_at, n)"
)
_INSERT_RECORDS = (
    "INSERT INTO engine_journal (run_id, key, kind, fingerprint, actor, data, created_at) "
    "SELECT {source}, j.key, j.kind, j.fingerprint, j.actor, j.data::json, j.created_at "
    "FROM {tables} {where} ORDER BY j.n"
)
# Deletes what the ``doomed`` CTE names, everywhere, and counts the runs.
_DELETE_DOOMED = """,
    dj AS (DELETE FROM engine_journal WHERE run_id IN (SELECT run_id FROM doomed)),
    dt AS (DELETE FROM engine_traces WHERE run_id IN (SELECT run_id FROM doomed)),
    dd AS (DELETE FROM engine_dispatch WHERE run_id IN (SELECT run_id FROM doomed)),
    dr AS (DELETE FROM engine_runs WHERE run_id IN (SELECT run_id FROM doomed) RETURNING 1)
    SELECT count(*) FROM dr"""


# -- writes ------------------------------------------------------------------------------------


def create_run(run: Run) -> Statement:
    """Insert the run unless its id exists; the row says whether it did, and what was there."""
    # The SELECT sees the table as it was before this statement: the old row, if any.
    sql = (
        f"WITH ins AS (INSERT INTO engine_runs ({_RUN_COLUMNS}) VALUES ({_RUN_VALUES}) "
        "ON CONFLICT (run_id) DO NOTHING RETURNING 1) "
        "SELECT EXISTS (SELECT 1 FROM ins), "
        "(SELECT body::text FROM engine_runs WHERE run_id = %(run_id)s)"
    )
    return sql, run_params(run)


def create_runs(runs: Sequence[Run]) -> Statement:
    """Insert many runs, skipping ids that exist; the rows name the runs inserted."""
    params = [run_params(run) for run in runs]
    columns = _RUN_COLUMNS.split(", ")
    types = ["text", "text", "text", "int8", "text", "float8", "float8", "float8", "text"]
    arrays = ", ".join(f"%({c})s::{t}[]" for c, t in zip(columns, types, strict=True))
    sql = (
        f"INSERT INTO engine_runs ({_RUN_COLUMNS}) "
        f"SELECT r.run_id, r.status, r.flow, r.version, r.owner, r.created_at, r.updated_at, "
        f"r.finished_at, r.body::json FROM unnest({arrays}) AS r({_RUN_COLUMNS}) "
        "ON CONFLICT (run_id) DO NOTHING RETURNING run_id"
    )
    return sql, {column: [p[column] for p in params] for column in columns}


def save_dispatch(
    run_ids: Sequence[str], queue: str, priority: int, locks: Sequence[str | None]
) -> Statement:
    """Record how submitted runs were queued (their queue, priority and lock)."""
    sql = (
        "INSERT INTO engine_dispatch (run_id, queue, priority, lock) "
        "SELECT d.run_id, %(queue)s, %(priority)s, d.lock "
        "FROM unnest(%(ids)s::text[], %(locks)s::text[]) AS d(run_id, lock) "
        "ON CONFLICT (run_id) DO NOTHING"
    )
    return sql, {"ids": list(run_ids), "queue": queue, "priority": priority, "locks": list(locks)}


def read_dispatch(run_id: str) -> Statement:
    """Select how a submitted run was queued."""
    sql = "SELECT queue, priority, lock FROM engine_dispatch WHERE run_id = %(run_id)s"
    return sql, {"run_id": run_id}


def update_run(run: Run, expected_version: int) -> Statement:
    """Replace the run if it is still at ``expected_version``; a row comes back if it was."""
    sql = (
        "UPDATE engine_runs SET status = %(status)s, flow = %(flow)s, version = %(version)s, "
        "owner = %(owner)s, created_at = %(created_at)s, updated_at = %(updated_at)s, "
        "finished_at = %(finished_at)s, body = %(body)s::json "
        "WHERE run_id = %(run_id)s AND version = %(expected)s RETURNING 1"
    )
    return sql, {**run_params(run), "expected": expected_version}


def finish_run(
    run: Run, expected_version: int, records: Sequence[JournalRecord], trace: str | None
) -> Statement:
    """Compare-and-set the run and, only if that wins, append ``records`` and store ``trace``."""
    insert = _INSERT_RECORDS.format(source="upd.run_id", tables=f"upd, {_RECORDS}", where="")
    sql = (
        "WITH upd AS (UPDATE engine_runs SET status = %(status)s, flow = %(flow)s, "
        "version = %(version)s, owner = %(owner)s, created_at = %(created_at)s, "
        "updated_at = %(updated_at)s, finished_at = %(finished_at)s, body = %(body)s::json "
        "WHERE run_id = %(run_id)s AND version = %(expected)s RETURNING run_id), "
        f"ins AS ({insert}), "
        "tr AS (INSERT INTO engine_traces (run_id, body, updated_at) "
        "SELECT upd.run_id, %(trace)s::json, %(now)s FROM upd WHERE %(trace)s::text IS NOT NULL "
        "ON CONFLICT (run_id) DO UPDATE SET body = excluded.body, "
        "updated_at = excluded.updated_at) SELECT count(*) FROM upd"
    )
    params = {
        **run_params(run),
        **_record_params(run.run_id, records),
        "expected": expected_version,
        "trace": trace,
        "now": time.time(),
    }
    return sql, params


def append(run_id: str, records: Sequence[JournalRecord], owner: str | None) -> Statement:
    """Append ``records`` only while ``owner`` (when given) holds the run.

    The run's row is locked (``FOR SHARE``) for the rest of the transaction, so a takeover
    (an update of that row) waits for the records to commit and then reads them, or wins
    first and fences them off: a journal never gains records its new owner did not see.
    The row returned holds whether the run exists and who holds it.
    """
    fence = "WHERE EXISTS (SELECT 1 FROM run WHERE %(fence)s::text IS NULL OR owner = %(fence)s)"
    insert = _INSERT_RECORDS.format(source="%(run_id)s", tables=_RECORDS, where=fence)
    sql = (
        "WITH run AS (SELECT owner FROM engine_runs WHERE run_id = %(run_id)s FOR SHARE), "
        f"ins AS ({insert}) "
        "SELECT EXISTS (SELECT 1 FROM run), (SELECT owner FROM run)"
    )
    return sql, {**_record_params(run_id, records), "fence": owner}


def fenced(run_id: str, owner: str | None, row: tuple[Any, ...]) -> None:
    """Raise what an append's returned row says went wrong; return when the records landed.

    Raises:
        RunNotFoundError: The run does not exist (a ``KeyError``).
        RunConflictError: ``owner`` no longer holds the run.
    """
    exists, holder = row
    check_fence(run_id, owner, exists=bool(exists), holder=holder)


def save_trace(run_id: str, body: str) -> Statement:
    """Store the run's trace, replacing an earlier one."""
    sql = (
        "INSERT INTO engine_traces (run_id, body, updated_at) "
        "VALUES (%(run_id)s, %(body)s::json, %(now)s) ON CONFLICT (run_id) "
        "DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at"
    )
    return sql, {"run_id": run_id, "body": body, "now": time.time()}


def delete_runs(run_ids: Sequence[str]) -> Statement:
    """Delete runs with their journals, traces and dispatch rows; count the runs."""
    sql = "WITH doomed AS (SELECT DISTINCT unnest(%(ids)s::text[]) AS run_id)" + _DELETE_DOOMED
    return sql, {"ids": list(run_ids)}


def prune(
    statuses: Sequence[str],
    older_than_s: float | None,
    keep_last: int | None,
    *,
    dry_run: bool = False,
) -> Statement:
    """Delete (or with ``dry_run`` count) what ``prune`` picks among runs in ``statuses``.

    The stores' one rule (``prune_victims``): a run goes when every rule given holds, so
    the newest ``keep_last`` stay whatever their age.
    """
    sql = (
        "WITH done AS (SELECT run_id, COALESCE(finished_at, updated_at) AS finished, "
        "row_number() OVER (ORDER BY COALESCE(finished_at, updated_at) DESC, run_id DESC) - 1 "
        "AS newer FROM engine_runs WHERE status = ANY(%(statuses)s::text[])), "
        "doomed AS (SELECT run_id FROM done "
        "WHERE (%(older)s::float8 IS NULL OR %(now)s - finished > %(older)s) "
        "AND (%(keep)s::int8 IS NULL OR newer >= %(keep)s))"
    ) + (" SELECT count(*) FROM doomed" if dry_run else _DELETE_DOOMED)
    return sql, {
        "statuses": list(statuses),
        "older": older_than_s,
        "keep": keep_last,
        "now": time.time(),
    }


# -- reads -------------------------------------------------------------------------------------


def read_runs(status: str | None, flow: str | None, limit: int | None) -> Statement:
    """Select run bodies, oldest first, optionally filtered; ``limit`` ``None`` means all."""
    sql = (
        "SELECT body::text FROM engine_runs "
        "WHERE (%(status)s::text IS NULL OR status = %(status)s) "
        "AND (%(flow)s::text IS NULL OR flow = %(flow)s) "
        "ORDER BY created_at, run_id LIMIT %(limit)s"
    )
    return sql, {"status": status, "flow": flow, "limit": limit}


def read_run(run_id: str) -> Statement:
    """Select one run's body."""
    return "SELECT body::text FROM engine_runs WHERE run_id = %(run_id)s", {"run_id": run_id}


def read_journal(run_id: str) -> Statement:
    """Select the run's journal in append order."""
    sql = (
        "SELECT key, kind, fingerprint, actor, data::text, created_at FROM engine_journal "
        "WHERE run_id = %(run_id)s ORDER BY id"
    )
    return sql, {"run_id": run_id}


def read_trace(run_id: str) -> Statement:
    """Select the run's trace."""
    return "SELECT body::text FROM engine_traces WHERE run_id = %(run_id)s", {"run_id": run_id}


def trace_of(rows: Sequence[tuple[Any, ...]]) -> dict[str, Any] | None:
    """Return the trace of :func:`read_trace`'s rows, or ``None``."""
    return cast(dict[str, Any], json.loads(rows[0][0])) if rows else None


# -- parameters --------------------------------------------------------------------------------


def run_params(run: Run) -> dict[str, Any]:
    """Return the run's parameters: its indexed columns and its JSON body.

    Raises:
        JournalError: The run holds a value that is not JSON.
    """
    body = run_json(run)
    return {
        "run_id": run.run_id,
        "status": run.status,
        "flow": run.flow,
        "version": run.version,
        "owner": run.owner,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "finished_at": run.finished_at,
        "body": body,
    }


def _record_params(run_id: str, records: Sequence[JournalRecord]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "keys": [r.key for r in records],
        "kinds": [r.kind for r in records],
        "fingerprints": [r.fingerprint for r in records],
        "actors": [r.actor for r in records],
        "data": [record_json(run_id, r) for r in records],
        "created": [r.created_at for r in records],
    }
