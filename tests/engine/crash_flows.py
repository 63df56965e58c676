"""The flow and model of the crash test, importable by the child and the recovering process.

Side effects land in their own SQLite file (``EFFECTS_DB``): every live model call and
every step execution is one committed row, so the test can count what really ran.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

import anyio

from engine import Runtime, agentic_function, decision, idempotency_key
from engine.models import Request

EFFECTS_DB = os.environ.get("ENGINE_CRASH_EFFECTS", "effects.db")


def _effect(kind: str, ticket: str, what: str, key: str | None = None) -> None:
    with sqlite3.connect(EFFECTS_DB, timeout=30) as db:
        db.execute(
            "INSERT INTO attempts(kind, ticket, what) VALUES (?, ?, ?)", (kind, ticket, what)
        )
        if key is not None:  # the effect itself, keyed so that a second attempt lands nowhere
            db.execute(
                "INSERT INTO effects(key, ticket) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
                (key, ticket),
            )
    db.close()


def init_effects(path: str) -> None:
    """Create the side-effect tables: every attempt, and the keyed effects."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS attempts(kind TEXT, ticket TEXT, what TEXT)")
        db.execute("CREATE TABLE IF NOT EXISTS effects(key TEXT PRIMARY KEY, ticket TEXT)")
    db.close()


async def refund(ticket: str, amount: float) -> str:
    """Refund (a side effect that must land once)."""
    _effect("step", ticket, "refund", key=idempotency_key())
    return f"refunded {amount} for {ticket}"


@agentic_function
async def crash_flow(ticket: str, runtime: Runtime | None = None) -> str:
    """Classify the ticket, then act on it (a side-effecting step), then close."""
    kind = await decision.make(f"Classify {ticket}.", ["billing", "other"])
    action = await decision.make(f"Act on {ticket} ({kind}).", {"refund": refund, "skip": "SKIP"})
    await decision.make(f"Close {ticket}.", ["close"])
    return f"{ticket}:{action}"


async def latency_model(request: Request) -> str:
    """A scripted model with latency that records every live call as a side effect."""
    text = request.messages[0].text
    ticket = re.search(r"t\d+", text).group()  # type: ignore[union-attr]
    await anyio.sleep(0.05)
    if text.startswith("Classify"):
        reply = {"call": "billing"}
    elif text.startswith("Act"):
        reply = {"call": "refund", "args": {"ticket": ticket, "amount": 5.0}}
    else:
        reply = {"call": "close"}
    _effect("model", ticket, text.split()[0])
    return json.dumps(reply)
