"""A running run's page shows what its journal holds so far, before any trace is stored."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from ui_support import Server

from engine.store import JournalRecord, Run, SQLiteStore


def running(path: Path, run_id: str, records: list[JournalRecord]) -> None:
    async def body() -> None:
        async with SQLiteStore(path) as store:
            now = time.time()
            run = Run(
                run_id=run_id,
                flow="ui_flows:route",
                status="running",
                owner="w1",
                lease_expires_at=now + 600,
                started_at=now,
            )
            await store.create_run(run)
            await store.append(run_id, records, owner="w1")

    anyio.run(body)


def test_a_running_run_shows_its_journal_so_far_and_escapes_it(server: Server) -> None:
    running(
        server.path,
        "live1",
        [
            JournalRecord(
                key="run/route:0/decision:0/model_call:0",
                kind="model",
                data={"text": "<script>alert(1)</script>", "usage": {"input_tokens": 9}},
            ),
            JournalRecord(
                key="run/route:0/decision:0",
                kind="pick",
                actor="model",
                data={"call": "ship", "args": {"weight": 3}, "attempts": 1},
            ),
        ],
    )

    code, page = server.get("/runs/live1")

    assert code == 200
    assert "So far (live, from the run's journal)" in page
    assert "<code>run/route:0/decision:0</code>" in page
    assert "→ ship {&#34;weight&#34;: 3} in 1 attempt(s)" in page
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    code, fragment = server.get("/runs/live1/live")  # what the page refreshes itself with
    assert code == 200
    assert 'hx-trigger="every 1s"' in fragment
    assert "<code>run/route:0/decision:0</code>" in fragment


def test_a_running_run_with_nothing_journaled_says_so(server: Server) -> None:
    running(server.path, "live2", [])
    code, page = server.get("/runs/live2")
    assert code == 200
    assert "no trace stored yet" in page
