"""A killed ``engine run``: the rerun accounts for every line, ``engine recover`` takes over."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_support import (
    CLEAN,
    engine_process,
    process_env,
    stored_statuses,
    ticket,
    write_jsonl,
)

TICKETS = 40
ROW = re.compile(r"│ (\S[^│]*?)\s*│\s*(\d+) │")


def rows(output: str) -> dict[str, int]:
    found = {m.group(1): int(m.group(2)) for m in ROW.finditer(output)}
    return {k: v for k, v in found.items() if not k.startswith("of them")}


def test_a_killed_run_is_accounted_for_and_recovered(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [ticket(n) for n in range(1, TICKETS + 1)])
    store = tmp_path / "runs.db"
    args = ["run", "ticket_routing", "-i", str(path), "-c", "4", "--store", str(store)]
    slow = "simulated:seed=2,latency=0.2"
    child = subprocess.Popen(
        [sys.executable, "-m", "engine", *args, "--model", slow, "--lease", "1"],
        cwd=tmp_path,
        env=process_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not (store.exists() and len(stored_statuses(store)) >= 8) and time.monotonic() < deadline:
        time.sleep(0.1)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    left = stored_statuses(store)
    dead = sorted(r for r, s in left.items() if s == "running")
    assert dead, "the child had no run in flight when it was killed"
    assert len(left) < TICKETS, "the child finished before it was killed"
    time.sleep(1.2)  # the dead process's leases (1 s) run out

    rerun = engine_process(*args, "--model", CLEAN, cwd=tmp_path)
    assert rerun.returncode == 1, rerun.stderr  # not every line's run completed yet
    counted = rows(rerun.stdout)
    assert counted.pop("total") == TICKETS
    assert sum(counted.values()) == TICKETS, counted
    assert counted["its process died: `engine recover`"] == len(dead)
    assert counted["already in the store"] == len(left) - len(dead)
    assert counted["completed"] == TICKETS - len(left)
    assert "engine recover" in rerun.stdout.split("next:")[1]
    assert {r: s for r, s in stored_statuses(store).items() if r in dead} == dict.fromkeys(
        dead, "running"
    )  # left for recover, not taken over behind the user's back

    recovered = engine_process(
        "recover", "--model", CLEAN, "--lease", "5", "--store", str(store), cwd=tmp_path
    )
    assert recovered.returncode == 0, recovered.stderr
    assert rows(recovered.stdout)["completed"] == len(dead)
    assert stored_statuses(store) == {f"T-{n}": "completed" for n in range(1, TICKETS + 1)}

    again = engine_process("recover", "--store", str(store), "--model", CLEAN, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "no runs to recover" in again.stdout
    final = engine_process(*args, "--model", CLEAN, cwd=tmp_path)
    assert final.returncode == 0, final.stderr
    assert rows(final.stdout)["already in the store"] == TICKETS
