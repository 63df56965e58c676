"""A process is killed mid-batch; another recovers every run exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
import crash_flows

from engine import Engine
from engine.models import ScriptedModel
from engine.store import JournalRecord, SQLiteStore

HERE = Path(__file__).parent
TICKETS = 200


def _count_completed(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            row = conn.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchone()
        conn.close()
    except sqlite3.Error:
        return 0
    return int(row[0])


def _rows(path: Path, sql: str) -> list[tuple[str, ...]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(sql).fetchall()
    conn.close()
    return [tuple(r) for r in rows]


def _kill_child_mid_way(db: Path, effects: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    child = subprocess.Popen(
        [sys.executable, str(HERE / "crash_child.py"), str(db), str(effects), str(TICKETS)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while _count_completed(db) < TICKETS // 4:
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
        assert time.monotonic() < deadline, "the child made no progress"
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    if child.stderr:
        child.stderr.close()


async def test_killed_process_is_recovered_without_repeating_journaled_work(tmp_path: Path) -> None:
    db, effects = tmp_path / "runs.db", tmp_path / "effects.db"
    crash_flows.init_effects(str(effects))
    crash_flows.EFFECTS_DB = str(effects)
    _kill_child_mid_way(db, effects)

    store = SQLiteStore(db)
    journaled = {r.run_id: await store.load_journal(r.run_id) for r in await store.list_runs()}
    assert _count_completed(db) < TICKETS, "the child finished before it was killed"
    await anyio.sleep(1.1)  # the dead owner's leases run out
    eng = Engine(model=ScriptedModel(crash_flows.latency_model), store=store, lease_s=1.0)
    with anyio.fail_after(120):
        await eng.recover()
        runs = await eng.run_many(
            crash_flows.crash_flow,
            [f"t{i:03d}" for i in range(TICKETS)],
            concurrency=50,
            run_id=lambda t: t,
        )
    assert [r.status for r in runs] == ["completed"] * TICKETS
    assert [r.result for r in runs] == [
        f"t{i:03d}:refunded 5.0 for t{i:03d}" for i in range(TICKETS)
    ]

    attempts = Counter(_rows(effects, "SELECT kind, ticket, what FROM attempts"))
    for run_id, records in journaled.items():
        for record in records:
            if record.kind == "step":  # a step journaled before the kill never ran again
                assert attempts[("step", run_id, "refund")] == 1, run_id
            if record.kind == "model":  # a journaled model call was never repeated
                assert attempts[("model", run_id, _prompt_word(record))] == 1, (run_id, record.key)
    # Each ticket's effect landed exactly once: a step in flight at the kill ran again under
    # the same idempotency key, and its second attempt landed nowhere.
    landed = Counter(ticket for (ticket,) in _rows(effects, "SELECT ticket FROM effects"))
    assert landed == Counter(f"t{i:03d}" for i in range(TICKETS))
    await store.close()


def _prompt_word(record: JournalRecord) -> str:
    key = record.key
    index = int(key.split("decision:")[1].split("/")[0])
    return ["Classify", "Act", "Close"][index]
