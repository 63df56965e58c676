"""The worker that stalls, in the fencing test: ``python pg_stall_child.py DSN SCHEMA RUN_ID``.

Runs ``stall_flow`` with a slow step and a short lease. Exits 3 when the store turned its
writes away (``RunConflictError``), 0 when the run completed here, 1 otherwise.
"""

from __future__ import annotations

import sys

import anyio
import pg_flows

from engine import Engine, RunConflictError
from engine.models import ScriptedModel
from engine.store import PostgresStore


async def main(dsn: str, schema: str, run_id: str) -> int:
    pg_flows.configure(dsn, schema)
    pg_flows.STEP_S = 3.0
    store = PostgresStore(dsn, schema=schema, pool_max=2)
    engine = Engine(model=ScriptedModel(pg_flows.latency_model), store=store, lease_s=0.5)
    try:
        run = await engine.run(pg_flows.stall_flow, run_id, run_id=run_id)
    except RunConflictError as exc:
        print("conflict:", exc, flush=True)
        return 3
    finally:
        await pg_flows.close()
        await store.close()
    print("finished:", run.status, flush=True)
    return 0 if run.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main, *sys.argv[1:4]))
