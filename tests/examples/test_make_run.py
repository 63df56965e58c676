"""``make run``, the main job: it finishes well under a minute and its summaries match the store."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import anyio
import pytest

from engine.store import SQLiteStore

ROOT = Path(__file__).parents[2]
TICKETS = sum(1 for line in (ROOT / "examples/data/tickets.jsonl").read_text().splitlines() if line)


def outcome(text: str, status: str) -> list[int]:
    return [int(n) for n in re.findall(rf"│ {status}\s*│\s*(\d+) │", text)]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_routes_every_ticket_resumes_the_suspended_and_holds_big_refunds(
    tmp_path: Path,
) -> None:
    store = tmp_path / "engine.db"
    started = time.monotonic()
    # -o: treat the installed stamp as up to date, so the test never reinstalls the venv.
    result = subprocess.run(
        ["make", "--no-print-directory", "-o", ".venv/.installed", "run", f"STORE={store}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert took < 60
    run_done, resume_done = outcome(result.stdout, "completed")
    [suspended, left] = outcome(result.stdout, "suspended")
    # A refund above the limit waits for a person's approval, in either command.
    [run_waiting, resume_waiting] = outcome(result.stdout, "waiting")
    assert suspended > 0  # the faults make some decisions fail
    assert run_waiting > 0
    assert run_done + suspended + run_waiting == TICKETS
    assert resume_done + resume_waiting == suspended
    assert left == 0

    async def statuses() -> Counter[str]:
        async with SQLiteStore(store) as opened:
            return Counter(r.status for r in await opened.list_runs())

    assert anyio.run(statuses) == {
        "completed": run_done + resume_done,
        "waiting": run_waiting + resume_waiting,
    }
    assert f"{run_waiting} waiting for a person (engine answer RUN_ID" in result.stdout
    assert "engine runs --status waiting" in result.stdout
    assert "engine graph ticket_routing" in result.stdout
    assert "engine show " in result.stdout
