"""Run the crash test's tickets until killed: ``python crash_child.py DB EFFECTS N``."""

from __future__ import annotations

import sys

import anyio
import crash_flows

from engine import Engine
from engine.models import ScriptedModel
from engine.store import SQLiteStore


async def main(db: str, count: int) -> None:
    store = SQLiteStore(db)
    eng = Engine(model=ScriptedModel(crash_flows.latency_model), store=store, lease_s=1.0)
    tickets = [f"t{i:03d}" for i in range(count)]
    await eng.run_many(crash_flows.crash_flow, tickets, concurrency=25, run_id=lambda t: t)
    await store.close()


if __name__ == "__main__":
    crash_flows.EFFECTS_DB = sys.argv[2]
    anyio.run(main, sys.argv[1], int(sys.argv[3]))
