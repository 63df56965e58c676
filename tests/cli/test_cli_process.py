"""The command line as a real process: ``python -m engine``, the ``engine`` script, Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
from cli_support import (
    CLEAN,
    engine_process,
    process_env,
    stored_statuses,
    ticket,
    write_jsonl,
)

from engine.store import SQLiteStore

SCRIPT = Path(sys.executable).parent / "engine"


def cancel_kinds(path: Path) -> set[str]:
    async def read() -> set[str]:
        async with SQLiteStore(path) as store:
            runs = await store.list_runs(status="cancelled")
            return {r.error.kind if r.error else "" for r in runs}

    return anyio.run(read)


def test_python_dash_m_engine_shows_every_command(tmp_path: Path) -> None:
    result = engine_process("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for command in ("run", "runs", "show", "resume", "graph", "prune"):
        assert command in result.stdout


def test_the_engine_script_runs_a_file_into_the_default_store(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [ticket(n) for n in range(1, 4)])
    result = subprocess.run(
        [str(SCRIPT), "run", "ticket_routing", "--input", str(path), "--model", CLEAN],
        cwd=tmp_path,
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert stored_statuses(tmp_path / "engine.db") == {f"T-{n}": "completed" for n in range(1, 4)}
    shown = engine_process("show", "T-1", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "classify()" in shown.stdout


def test_ctrl_c_mid_batch_leaves_every_run_resumable(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [ticket(n) for n in range(1, 41)])
    store = tmp_path / "runs.db"
    args = ["run", "ticket_routing", "-i", str(path), "-c", "4", "--store", str(store)]
    slow = "simulated:seed=2,latency=0.2"
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", *args, "--model", slow],
        cwd=tmp_path,
        env=process_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (store.exists() and len(stored_statuses(store)) >= 6) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "engine resume --all-cancelled" in stdout
    assert "start the records that never started" in stdout
    after = stored_statuses(store)
    assert 0 < len(after) < 40
    assert set(after.values()) <= {"completed", "cancelled"}
    assert "cancelled" in after.values()
    assert cancel_kinds(store) == {"shutdown"}  # the engine's graceful shutdown stopped them

    resumed = engine_process(
        "resume", "--all-cancelled", "--model", CLEAN, "--store", str(store), cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    rest = engine_process(*args, "--model", CLEAN, cwd=tmp_path)
    assert rest.returncode == 0, rest.stderr
    assert stored_statuses(store) == {f"T-{n}": "completed" for n in range(1, 41)}
