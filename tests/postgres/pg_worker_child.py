"""A worker process of the multi-process test: ``python pg_worker_child.py DSN SCHEMA``.

Prints ``owner TOKEN`` (the token its engine claims runs with), then executes jobs until
SIGTERM.
"""

from __future__ import annotations

import sys

import anyio
import pg_flows

from engine import Engine
from engine.distributed import worker
from engine.models import ScriptedModel
from engine.store import PostgresStore


async def main(dsn: str, schema: str) -> None:
    pg_flows.configure(dsn, schema)
    store = PostgresStore(dsn, schema=schema, pool_max=6)
    engine = Engine(model=ScriptedModel(pg_flows.latency_model), store=store, lease_s=1.0)
    print("owner", engine.owner, flush=True)  # the test watches this worker's runs
    try:
        await worker(engine, concurrency=10, stalled_after_s=1.5, heartbeat_s=0.25, poll_s=0.25)
    finally:
        await pg_flows.close()
        await store.close()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:3])
