"""A worker that stalls past a takeover and then writes again is turned away by the store."""

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

from engine import Engine
from engine.models import ScriptedModel
from engine.store import PostgresStore

HERE = Path(__file__).parent
RUN = "t007"


async def _attempts(conn: psycopg.AsyncConnection[Any]) -> Counter[tuple[str, str]]:
    cursor = await conn.execute("SELECT kind, what FROM attempts")
    return Counter((kind, what) for kind, what in await cursor.fetchall())


async def test_stalled_worker_is_fenced_off_after_a_takeover(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    pg_flows.create_tables(pg_dsn, pg_schema)
    pg_flows.configure(pg_dsn, pg_schema)
    conn = await psycopg.AsyncConnection.connect(
        pg_dsn, autocommit=True, options=f"-c search_path={pg_schema}"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    log = tmp_path / "stalled.log"
    with log.open("wb") as out:
        child = await anyio.open_process(
            [sys.executable, str(HERE / "pg_stall_child.py"), pg_dsn, pg_schema, RUN],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    store = PostgresStore(pg_dsn, schema=pg_schema)
    try:
        with anyio.fail_after(30):  # the child is inside its slow step: stall it there
            while not (await _attempts(conn))[("step", "started")]:
                assert child.returncode is None, await anyio.Path(log).read_text()
                await anyio.sleep(0.02)
        child.send_signal(signal.SIGSTOP)
        stalled = await store.get_run(RUN)
        assert stalled is not None
        await anyio.sleep(max(0.0, (stalled.lease_expires_at or 0) - stalled.updated_at) + 0.2)

        # Another worker takes the run over and finishes it, replaying what was journaled.
        rescuer = Engine(model=ScriptedModel(pg_flows.latency_model), store=store, lease_s=5)
        with anyio.fail_after(20):
            done = await rescuer.resume(RUN, flow=pg_flows.stall_flow)
        assert (done.status, done.result) == ("completed", f"{RUN}:refunded 5.0 for {RUN}")
        journal = await store.load_journal(RUN)

        child.send_signal(signal.SIGCONT)
        with anyio.fail_after(20):
            code = await child.wait()
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        await child.aclose()

    output = await anyio.Path(log).read_text()
    assert code == 3, output  # its late write raised RunConflictError
    assert "is now owned by None, not" in output or "taken over" in output, output
    # The stalled worker wrote nothing: the journal and the run are as the rescuer left them.
    assert await store.load_journal(RUN) == journal
    assert await store.get_run(RUN) == done
    keys = [(r.kind, r.key) for r in journal]
    assert len(keys) == len(set(keys))
    attempts = await _attempts(conn)
    # The interrupted step ran twice (at least once), its keyed effect landed once, and the
    # model was asked once per decision: the rescuer replayed the journaled reply.
    assert attempts[("step", "started")] == 2
    assert attempts[("model", "Classify")] == 1
    cursor = await conn.execute("SELECT count(*) FROM effects WHERE ticket = %s", [RUN])
    assert await cursor.fetchone() == (1,)
    await pg_flows.close()
    await conn.close()
    await store.close()
