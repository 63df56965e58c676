"""Tickets per second through 1, 2 and 4 ``engine worker`` processes on PostgreSQL.

Each ticket is a run of three decisions answered by a scripted model with 50 ms of latency.
The same tickets also run in one process on a MemoryStore at the same total concurrency;
the difference, per journaled transition, is what the database and the queue cost.

    python bench/workers.py [--tickets 5000] [--concurrency 50] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import anyio
import psycopg

from engine import Engine, Runtime, agentic_function, decision
from engine.distributed import submit, worker
from engine.models import Request, ScriptedModel
from engine.store import MemoryStore, PostgresStore

LATENCY = 0.05
TRANSITIONS = 3  # journaled picks per ticket


@agentic_function
async def bench_ticket(ticket: str, runtime: Runtime | None = None) -> str:
    """Three decisions, as a routing flow makes them."""
    kind = await decision.make(f"Classify {ticket}.", ["billing", "other"])
    act = await decision.make(f"Act on {ticket} ({kind}).", ["refund", "skip"])
    await decision.make(f"Close {ticket}.", ["close"])
    return f"{ticket}:{act}"


async def slow_model(request: Request) -> str:
    """Reply with the first option after ``LATENCY`` seconds."""
    await anyio.sleep(LATENCY)
    text = request.messages[0].text
    pick = (
        "billing"
        if text.startswith("Classify")
        else "refund"
        if text.startswith("Act")
        else "close"
    )
    return json.dumps({"call": pick})


async def _worker(dsn: str, schema: str, concurrency: int) -> None:
    async with PostgresStore(dsn, schema=schema, pool_max=8) as store:
        engine = Engine(model=ScriptedModel(slow_model), store=store, lease_s=30)
        await worker(engine, concurrency=concurrency, heartbeat_s=2, poll_s=0.5)


async def _completed(store: PostgresStore, schema: str) -> int:
    async with store.transaction() as conn:
        cursor = await conn.execute("SELECT count(*) FROM engine_runs WHERE status = 'completed'")
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def _distributed(dsn: str, tickets: list[str], workers: int, concurrency: int) -> float:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), *sys.path])}
    async with PostgresStore(dsn, schema=schema) as store:
        # By its module's name, not __main__'s, so that the workers can import it.
        from workers import bench_ticket as importable

        await submit(store, importable, tickets, run_id=lambda t: t)
        args = [sys.executable, __file__, "--worker", dsn, schema, str(concurrency)]
        procs = [subprocess.Popen(args, env=env) for _ in range(workers)]  # noqa: ASYNC220
        start = time.perf_counter()
        try:
            done = 0
            while done < len(tickets):
                await anyio.sleep(0.05)
                done = await _completed(store, schema)
            elapsed = time.perf_counter() - start
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(timeout=30)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return elapsed


async def _in_memory(tickets: list[str], concurrency: int) -> float:
    engine = Engine(model=ScriptedModel(slow_model), store=MemoryStore())
    start = time.perf_counter()
    await engine.run_many(bench_ticket, tickets, concurrency=concurrency, run_id=lambda t: t)
    return time.perf_counter() - start


async def main(dsn: str, count: int, concurrency: int) -> None:
    tickets = [f"t{i:05d}" for i in range(count)]
    print(f"{count} tickets, {TRANSITIONS} decisions each, {LATENCY * 1000:.0f} ms per model call")
    print(f"{'workers':>8} {'tickets/s':>10} {'memory t/s':>11} {'µs/transition':>14}")
    for workers in (1, 2, 4):
        pg = await _distributed(dsn, tickets, workers, concurrency)
        mem = await _in_memory(tickets, workers * concurrency)
        overhead = (pg - mem) / (count * TRANSITIONS) * 1e6
        print(f"{workers:>8} {count / pg:>10.0f} {count / mem:>11.0f} {overhead:>14.0f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        anyio.run(_worker, sys.argv[2], sys.argv[3], int(sys.argv[4]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=50, help="runs in flight per worker")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("ENGINE_TEST_PG_DSN", "postgresql://postgres@127.0.0.1/test"),
    )
    options = parser.parse_args()
    anyio.run(main, options.dsn, options.tickets, options.concurrency)
