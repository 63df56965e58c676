"""``engine run ticket_routing`` over real tickets against llama-cpp-python's server and
llama-server, with settings from the command line, then a resume on the other server.

The issue this answers: with no way to bound a reply, every ticket ended ``failed`` on a 400
(the re-pick overflowed the context). Now every run must end completed, or suspended on a
decision error of a true kind; none failed, and none on a provider error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from realserver_support import (
    DECISION_KINDS,
    ROOT,
    RealServer,
    engine,
    stored_runs,
    stored_traces,
)

TICKETS = ROOT / "examples" / "data" / "tickets.jsonl"
BATCH = 40


def check_runs(runs: list[Any], expected: int) -> dict[str, int]:
    """Assert every run completed, suspended on a decision error, or waits for a person (a
    refund above the approval limit); none failed. Return the counts by status."""
    assert len(runs) == expected
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
        assert run.status in ("completed", "suspended", "waiting"), (run.run_id, run.error)
        if run.status == "suspended":
            assert run.error is not None
            assert run.error.kind in DECISION_KINDS, run.error
            assert run.error.replies, run.error
        elif run.status == "waiting":
            assert run.error is not None
            assert run.error.kind == "waiting", run.error
    return counts


@pytest.fixture
def tickets(tmp_path: Path) -> Path:
    lines = TICKETS.read_text(encoding="utf-8").splitlines()[:BATCH]
    path = tmp_path / "tickets.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_batch_with_a_max_tokens_setting_has_no_run_failed(
    server: RealServer, tickets: Path, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    store = f"sqlite:///{db}"
    # Both servers answer one request at a time: two runs in flight keep the queue short of
    # the SDK's 60 s timeout on a busy machine.
    done = engine(
        "run", "ticket_routing", "--input", str(tickets), "--store", store,
        "--model", f"openai:tiny@{server.url}?enforce=auto", "--model-setting", "max_tokens=64",
        "--concurrency", "2",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr + done.stdout
    check_runs(stored_runs(db), BATCH)
    suspended = [r.run_id for r in stored_runs(db) if r.status == "suspended"]

    # The suspended ones, asked again on the other server, in the other server's own mode.
    resumed = engine(
        "resume", "--all-suspended", "--store", store,
        "--model", f"openai:tiny@{server.other_url}?enforce=auto",
        "--model-setting", "max_tokens=64", "--concurrency", "2",
        cwd=tmp_path,
    )  # fmt: skip
    assert resumed.returncode in (0, 1), resumed.stderr + resumed.stdout
    check_runs(stored_runs(db), BATCH)
    modes: set[str] = set()
    for trace in stored_traces(db, suspended).values():
        assert trace.get("earlier"), "a resumed run keeps its first execution's trace"
        modes |= {
            n["data"]["enforcement"]
            for n in trace["nodes"]
            if n["kind"] == "decision" and not n["data"].get("replayed")
        }
    # Asked anew on the other server, in its mode (or unenforced, an exec turn's first ask).
    if suspended:
        assert server.other_mode in modes, modes
        assert modes <= {server.other_mode, "text"}, modes
    listed = engine("runs", "--json", "--store", store, "--limit", "1000", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert len([json.loads(line) for line in listed.stdout.splitlines() if line]) == BATCH
