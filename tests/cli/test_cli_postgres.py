"""The same commands on a PostgreSQL store (skipped where no server answers)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import anyio
import pytest
from cli_support import CLEAN, FAULTY, Cli

from engine.store import PostgresStore, Run


def test_run_show_resume_graph_on_postgres(
    cli: Cli, tickets: Path, pg_dsn: str, pg_schema: str
) -> None:
    store = f"{pg_dsn}?schema={pg_schema}"
    args = ["--store", store]
    ran = cli("run", "ticket_routing", "-i", str(tickets), "-m", FAULTY, *args, store=False)
    assert ran.exit_code == 1, ran.output  # some runs stopped (suspended)
    listed = cli("runs", "--json", *args, store=False)
    runs = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(r["run_id"] for r in runs) == [f"T-{n}" for n in range(1, 7)]
    shown = cli("show", "T-1", *args, store=False)
    assert "classify()" in shown.stdout
    resumed = cli("resume", "--all-suspended", "-m", CLEAN, *args, store=False)
    assert resumed.exit_code == 0, resumed.output
    graph = cli("graph", "ticket_routing", *args, store=False)
    assert re.search(r'\{\{"classify<br/>\d+ visit\(s\)"\}\}', graph.stdout)
    statuses = {
        json.loads(line)["status"]
        for line in cli("runs", "--json", *args, store=False).stdout.splitlines()
    }
    assert statuses == {"completed"}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["submit", "ticket_routing", "-i", "tickets.jsonl"], id="submit"),
        pytest.param(["submit", "--resume", "T-1"], id="submit-resume"),
        pytest.param(["worker", "--one-shot"], id="worker"),
        pytest.param(["resume", "T-1", "--on-worker"], id="resume-on-worker"),
    ],
)
def test_queue_commands_without_procrastinate_say_how_to_install_it(
    cli: Cli,
    tickets: Path,
    pg_dsn: str,
    pg_schema: str,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    store = f"{pg_dsn}?schema={pg_schema}"
    anyio.run(_a_failed_run, store)
    monkeypatch.setitem(sys.modules, "procrastinate", None)  # import procrastinate fails
    result = cli(*args, "--store", store, store=False)
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr
    assert 'pip install -e ".[postgres]"' in " ".join(result.stderr.split())
    assert result.exception is None or isinstance(result.exception, SystemExit)


async def _a_failed_run(url: str) -> None:
    async with PostgresStore(url) as store:
        await store.create_run(Run(run_id="T-1", flow="flows.ticket_routing:x", status="failed"))
