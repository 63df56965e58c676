"""Three worker processes share 300 tickets; one is killed; the others finish its runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pg_flows
import psycopg
from anyio.abc import Process

from engine.distributed import submit
from engine.store import JournalRecord, PostgresStore

HERE = Path(__file__).parent
TICKETS = 300
WORKERS = 3


async def _start(dsn: str, schema: str, tmp: Path, n: int) -> Process:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    args = [str(HERE / "pg_worker_child.py"), dsn, schema]
    with (tmp / f"worker{n}.log").open("wb") as log:
        return await anyio.open_process(
            [sys.executable, *args], env=env, stdout=log, stderr=subprocess.STDOUT
        )


async def _counts(conn: psycopg.AsyncConnection[Any], owner: str) -> tuple[int, int]:
    """Completed runs, and runs running under ``owner``."""
    cursor = await conn.execute(
        "SELECT count(*) FILTER (WHERE status = 'completed'), "
        "count(*) FILTER (WHERE status = 'running' AND owner = %s) FROM engine_runs",
        [owner],
    )
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def _owner(log: Path) -> str:
    """The owner token a worker printed first."""
    with anyio.fail_after(30):
        while True:
            text = await anyio.Path(log).read_text()
            if text.startswith("owner "):
                return text.split()[1]
            await anyio.sleep(0.02)


async def _stop(workers: list[Process]) -> None:
    for proc in workers:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)  # procrastinate stops gracefully
    for proc in workers:
        with anyio.move_on_after(15):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await proc.aclose()


def _logs(tmp: Path) -> str:
    return "\n".join((tmp / f"worker{n}.log").read_text()[-2000:] for n in range(WORKERS))


async def test_killed_workers_runs_are_finished_by_the_others_exactly_once(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    pg_flows.create_tables(pg_dsn, pg_schema)
    store = PostgresStore(pg_dsn, schema=pg_schema)
    tickets = [f"t{i:03d}" for i in range(TICKETS)]
    await submit(store, pg_flows.ticket_flow, tickets, run_id=lambda t: t)
    conn = await psycopg.AsyncConnection.connect(
        pg_dsn, autocommit=True, options=f"-c search_path={pg_schema}"
    )
    workers = [await _start(pg_dsn, pg_schema, tmp_path, n) for n in range(WORKERS)]
    try:
        victim = await _owner(tmp_path / "worker0.log")
        with anyio.fail_after(40):  # the victim holds runs, and a fifth of the tickets are done
            while (counts := await _counts(conn, victim))[0] < TICKETS // 5 or not counts[1]:
                assert all(p.returncode is None for p in workers), _logs(tmp_path)
                await anyio.sleep(0.01)
        workers[0].kill()
        await workers[0].wait()
        runs = await store.list_runs()
        journaled = {r.run_id: await store.load_journal(r.run_id) for r in runs}
        taken = {r.run_id for r in runs if r.status == "running" and r.owner == victim}
        assert taken, "the victim held no run when killed"
        assert sum(r.status == "completed" for r in runs) < TICKETS, "killed after the end"
        with anyio.fail_after(45):
            while (await _counts(conn, victim))[0] < TICKETS:
                assert all(p.returncode is None for p in workers[1:]), _logs(tmp_path)
                await anyio.sleep(0.1)
    finally:
        await _stop(workers)

    final = {r.run_id: r for r in await store.list_runs()}
    assert [final[t].result for t in tickets] == [f"{t}:refunded 5.0 for {t}" for t in tickets]
    # The others finished the killed worker's runs, by taking them over.
    assert all(final[r].status == "completed" and final[r].resumes >= 1 for r in taken)
    attempts = Counter(await _rows(conn, "SELECT kind, ticket, what FROM attempts"))
    for run_id, records in journaled.items():  # journaled before the kill: never done again
        for record in records:
            if record.kind in ("model", "step"):
                assert attempts[_attempt(run_id, record)] == 1, (run_id, record.key)
    for run_id in tickets:  # no key journaled twice: nobody wrote into a run it had lost
        keys = [(r.kind, r.key) for r in await store.load_journal(run_id)]
        assert len(keys) == len(set(keys)), run_id
    # Each refund landed once: a step cut off by the kill ran again under the same key.
    landed = Counter(ticket for (ticket,) in await _rows(conn, "SELECT ticket FROM effects"))
    assert landed == Counter(tickets)
    await conn.close()
    await store.close()


async def _rows(conn: psycopg.AsyncConnection[Any], query: str) -> list[tuple[Any, ...]]:
    cursor = await conn.execute(query)
    return [tuple(row) for row in await cursor.fetchall()]


def _attempt(run_id: str, record: JournalRecord) -> tuple[str, str, str]:
    """The attempts row that a journaled model call or step came from."""
    if record.kind == "step":
        return ("step", run_id, "refund")
    index = int(record.key.split("decision:")[1].split("/")[0])
    return ("model", run_id, ["Classify", "Act", "Close"][index])
