"""The same commands on a PostgreSQL store (skipped where no server answers)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_support import CLEAN, FAULTY, Cli


def test_run_show_resume_graph_on_postgres(
    cli: Cli, tickets: Path, pg_dsn: str, pg_schema: str
) -> None:
    store = f"{pg_dsn}?schema={pg_schema}"
    args = ["--store", store]
    ran = cli("run", "ticket_routing", "-i", str(tickets), "-m", FAULTY, *args, store=False)
    assert ran.exit_code == 0, ran.output
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
