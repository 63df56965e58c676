"""Pages of runs, newest first, by keys: what a list of many runs reads one screen at a time.

A page is read after a key, ``(created_at, run_id)`` of the last run of the page before it,
never after an offset: every page costs the same on an index of ``(status, created_at,
run_id)``, however deep it is. The SQL stores build their statements here; the memory
store filters and sorts in place.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from engine._base import RunStatus
from engine.store._types import Run

__all__ = [
    "POSTGRES_COUNTS",
    "PageKey",
    "check_page",
    "counts_of",
    "page_in_memory",
    "page_sql",
    "postgres_page",
    "sqlite_counts",
    "sqlite_page",
]

#: The key a page is read after: the ``(created_at, run_id)`` of the last run before it.
PageKey = tuple[float, str]

#: The most runs one page holds.
MAX_PAGE = 1000

#: Greater than any character a run id holds: the upper end of a prefix's range.
_TOP = "\U0010ffff"


def check_page(after: PageKey | None, limit: int) -> None:
    """Refuse a page size or a key that cannot be read.

    Raises:
        ValueError: ``limit`` is not an integer from 1 to 1000, or ``after`` is not a
            ``(created_at, run_id)`` pair.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit= takes an integer from 1 to {MAX_PAGE}, got {limit!r}")
    if after is not None and (
        len(after) != 2
        or isinstance(after[0], bool)
        or not isinstance(after[0], int | float)
        or not isinstance(after[1], str)
    ):
        raise ValueError(
            f"after= takes the (created_at, run_id) of the last run of a page, got {after!r}"
        )


def page_sql(
    status: RunStatus | None,
    flow: str | None,
    search: str | None,
    after: PageKey | None,
    *,
    mark: str,
) -> tuple[str, dict[str, object]]:
    """Return the ``WHERE`` clause of a page and its named arguments.

    ``mark`` writes a named parameter: ``":{}"`` for SQLite, ``"%({})s"`` for psycopg.
    """
    terms: list[str] = []
    args: dict[str, object] = {}
    m = mark.format
    if status is not None:
        terms.append(f"status = {m('status')}")
        args["status"] = status
    if flow is not None:
        terms.append(f"flow = {m('flow')}")
        args["flow"] = flow
    if search:
        terms.append(f"run_id >= {m('low')} AND run_id < {m('high')}")
        args |= {"low": search, "high": search + _TOP}
    if after is not None:
        terms.append(f"(created_at, run_id) < ({m('at')}, {m('id')})")
        args |= {"at": after[0], "id": after[1]}
    return (f"WHERE {' AND '.join(terms)}" if terms else ""), args


def page_in_memory(
    runs: Iterable[Run],
    status: RunStatus | None,
    flow: str | None,
    search: str | None,
    after: PageKey | None,
    limit: int,
) -> list[Run]:
    """Return a page of ``runs`` as the SQL stores read it: newest first, after ``after``."""
    chosen = [
        r
        for r in runs
        if (status is None or r.status == status)
        and (flow is None or r.flow == flow)
        and (not search or r.run_id.startswith(search))
        and (after is None or (r.created_at, r.run_id) < after)
    ]
    chosen.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
    return [r.model_copy(deep=True) for r in chosen[:limit]]


def counts_of(rows: Sequence[Sequence[Any]]) -> dict[str, int]:
    """Return ``(status, count)`` rows as a dict."""
    return {str(status): int(count) for status, count in rows}


def sqlite_page(
    where: str, args: dict[str, object], limit: int, conn: sqlite3.Connection
) -> list[Run]:
    """Read a page of the SQLite store's runs (``where`` from :func:`page_sql`)."""
    found = conn.execute(
        f"SELECT body FROM runs {where} ORDER BY created_at DESC, run_id DESC LIMIT :limit",
        {**args, "limit": limit},
    ).fetchall()
    return [Run.model_validate_json(body) for (body,) in found]


def sqlite_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Count the SQLite store's runs by status (read on its status index)."""
    return counts_of(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())


def postgres_page(
    status: RunStatus | None,
    flow: str | None,
    search: str | None,
    after: PageKey | None,
    limit: int,
) -> tuple[str, dict[str, Any]]:
    """The PostgreSQL store's statement for a page of runs."""
    where, args = page_sql(status, flow, search, after, mark="%({})s")
    sql = (
        f"SELECT body::text FROM engine_runs {where} "
        "ORDER BY created_at DESC, run_id DESC LIMIT %(limit)s"
    )
    return sql, {**args, "limit": limit}


#: The PostgreSQL store's statement that counts its runs by status.
POSTGRES_COUNTS: tuple[str, dict[str, Any]] = (
    "SELECT status, COUNT(*) FROM engine_runs GROUP BY status",
    {},
)
