"""The flow and model of the PostgreSQL worker tests, importable by the worker processes.

Side effects land in two tables of the test's schema: every live model call and every step
execution is one row of ``attempts``, and each refund's effect one row of ``effects`` keyed
by ``engine.idempotency_key()`` (so a second attempt lands nowhere). Call :func:`configure`
first in each process.
"""

from __future__ import annotations

import json
import re

import anyio
import psycopg

from engine import Runtime, agentic_function, decision, idempotency_key
from engine.models import Request

_where: dict[str, str] = {}
_conn: list[psycopg.AsyncConnection[tuple[object, ...]]] = []
_lock: list[anyio.Lock] = []
#: Seconds each model call takes.
LATENCY = 0.03

_RECORD = (
    "WITH a AS (INSERT INTO attempts (kind, ticket, what) VALUES (%(kind)s, %(ticket)s, %(what)s)) "
    "INSERT INTO effects (key, ticket) SELECT %(key)s, %(ticket)s WHERE %(key)s::text IS NOT NULL "
    "ON CONFLICT (key) DO NOTHING"
)


def configure(dsn: str, schema: str) -> None:
    """Point this process's side effects at ``schema`` of ``dsn``."""
    _where.update(dsn=dsn, schema=schema)


def create_tables(dsn: str, schema: str) -> None:
    """Create the schema and the side-effect tables (synchronously, from the test)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        conn.execute(f"CREATE TABLE {schema}.attempts (kind text, ticket text, what text)")
        conn.execute(f"CREATE TABLE {schema}.effects (key text PRIMARY KEY, ticket text)")


async def close() -> None:
    """Close this process's side-effect connection."""
    while _conn:
        await _conn.pop().close()


async def _effect(kind: str, ticket: str, what: str, key: str | None = None) -> None:
    if not _lock:
        _lock.append(anyio.Lock())
    async with _lock[0]:
        if not _conn:
            _conn.append(
                await psycopg.AsyncConnection.connect(
                    _where["dsn"], autocommit=True, options=f"-c search_path={_where['schema']}"
                )
            )
        params = {"kind": kind, "ticket": ticket, "what": what, "key": key}
        await _conn[0].execute(_RECORD, params)


async def refund(ticket: str, amount: float) -> str:
    """Refund (a side effect that must land once)."""
    await _effect("step", ticket, "refund", key=idempotency_key())
    return f"refunded {amount} for {ticket}"


@agentic_function
async def ticket_flow(ticket: str, runtime: Runtime | None = None) -> str:
    """Classify the ticket, then act on it (a side-effecting step), then close."""
    kind = await decision.make(f"Classify {ticket}.", ["billing", "other"])
    action = await decision.make(f"Act on {ticket} ({kind}).", {"refund": refund, "skip": "SKIP"})
    await decision.make(f"Close {ticket}.", ["close"])
    return f"{ticket}:{action}"


async def latency_model(request: Request) -> str:
    """A scripted model with latency that records every live call as a side effect."""
    text = request.messages[0].text
    ticket = re.search(r"t\d+", text).group()  # type: ignore[union-attr]
    await anyio.sleep(LATENCY)
    if text.startswith("Classify"):
        reply = {"call": "billing"}
    elif text.startswith("Act"):
        reply = {"call": "refund", "args": {"ticket": ticket, "amount": 5.0}}
    else:
        reply = {"call": "close"}
    await _effect("model", ticket, text.split()[0])
    return json.dumps(reply)


#: Seconds the slow step of :func:`stall_flow` takes (long in the process that stalls).
STEP_S = 0.0


async def slow_refund(ticket: str, amount: float) -> str:
    """Refund slowly: the attempt is recorded first, the effect after ``STEP_S`` seconds."""
    key = idempotency_key()
    await _effect("step", ticket, "started")
    await anyio.sleep(STEP_S)
    await _effect("step", ticket, "refund", key=key)
    return f"refunded {amount} for {ticket}"


@agentic_function
async def stall_flow(ticket: str, runtime: Runtime | None = None) -> str:
    """Classify, then refund through a slow step, then close."""
    kind = await decision.make(f"Classify {ticket}.", ["billing", "other"])
    action = await decision.make(
        f"Act on {ticket} ({kind}).", {"refund": slow_refund, "skip": "SKIP"}
    )
    await decision.make(f"Close {ticket}.", ["close"])
    return f"{ticket}:{action}"
