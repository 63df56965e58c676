"""``engine run``: a file of records becomes runs, bad lines are reported, errors say the fix."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from cli_support import CLEAN, FAULTY, Cli, ticket, write_jsonl

from engine.store import SQLiteStore


def counts(output: str) -> dict[str, int]:
    """Read the summary table: outcome -> runs."""
    return {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"│ (completed|suspended|failed|cancelled)\s*│\s*(\d+) │", output)
    }


def stored(path: Path) -> dict[str, str]:
    async def read() -> dict[str, str]:
        async with SQLiteStore(path) as store:
            return {r.run_id: r.status for r in await store.list_runs()}

    return anyio.run(read)


def error_kinds(path: Path) -> dict[str, str | None]:
    async def read() -> dict[str, str | None]:
        async with SQLiteStore(path) as store:
            return {r.run_id: r.error.kind if r.error else None for r in await store.list_runs()}

    return anyio.run(read)


def test_run_runs_every_record_and_the_summary_matches_the_store(
    cli: Cli, tickets: Path, tmp_path: Path
) -> None:
    result = cli("run", "ticket_routing", "--input", str(tickets), "--model", FAULTY)
    assert result.exit_code == 1, result.output  # some runs stopped (suspended)
    runs = stored(tmp_path / "runs.db")
    assert sorted(runs) == [f"T-{n}" for n in range(1, 7)]
    summary = counts(result.stdout)
    for status in ("completed", "suspended", "failed"):
        assert summary[status] == sum(1 for s in runs.values() if s == status)
    assert summary["suspended"] > 0  # the faulty model stops some
    assert "engine resume --all-suspended" in result.stdout
    assert "engine graph ticket_routing" in result.stdout


def test_run_by_module_path_and_rerun_runs_nothing_twice(cli: Cli, tickets: Path) -> None:
    first = cli("run", "flows.ticket_routing:route_ticket", "-i", str(tickets), "-m", CLEAN)
    assert first.exit_code == 0, first.output
    assert counts(first.stdout)["completed"] == 6
    again = cli("run", "flows.ticket_routing:route_ticket", "-i", str(tickets), "-m", CLEAN)
    assert re.search(r"already in the store\s*│\s*6", again.stdout)


def test_a_malformed_line_is_reported_with_its_number_and_the_rest_run(
    cli: Cli, tmp_path: Path
) -> None:
    path = write_jsonl(
        tmp_path / "bad.jsonl",
        [ticket(1), ticket(2), {"id": "T-3", "subject": "no body"}],
        raw=[(1, '{"id": "T-x", "subject": '), (2, "")],
    )
    result = cli("run", "ticket_routing", "--input", str(path), "--model", CLEAN)
    assert result.exit_code == 1, result.output  # some lines could not run
    assert counts(result.stdout)["completed"] == 2
    assert "line 2: not valid JSON" in result.stdout
    assert re.search(r"line 5: does not fit ticket: \S*customer_id: Field required", result.stdout)
    assert re.search(r"input lines skipped\s*│\s*2", result.stdout)
    assert stored(tmp_path / "runs.db") == {"T-1": "completed", "T-2": "completed"}


def test_without_model_or_keys_it_refuses_and_says_how_to_choose(cli: Cli, tickets: Path) -> None:
    result = cli("run", "ticket_routing", "--input", str(tickets))
    assert result.exit_code == 2, result.output  # SimulatedModel runs only when named
    assert "no model chosen" in result.stderr
    assert "--model simulated" in result.stderr


def test_the_summary_says_why_runs_failed(
    cli: Cli, tickets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = cli("run", "ticket_routing", "--input", str(tickets), "--model", "openai:gpt-4o")
    assert counts(result.stdout)["failed"] == 6
    assert "failed 6x: AuthenticationError: no OpenAI API key" in result.stdout


def test_incident_triage_runs_from_the_same_command(cli: Cli) -> None:
    data = Path(__file__).parents[2] / "examples" / "data" / "incidents.jsonl"
    small = Path("incidents.jsonl")
    small.write_text("\n".join(data.read_text().splitlines()[:5]) + "\n")
    result = cli("run", "incident_triage", "--input", str(small), "--model", CLEAN)
    assert result.exit_code == 0, result.output
    assert counts(result.stdout)["completed"] == 5


def test_memory_store_runs_without_a_file(cli: Cli, tickets: Path, tmp_path: Path) -> None:
    args = ["run", "ticket_routing", "-i", str(tickets), "-m", CLEAN, "--store", "memory://"]
    result = cli(*args, store=False)
    assert result.exit_code == 0, result.output
    assert counts(result.stdout)["completed"] == 6
    assert list(tmp_path.glob("*.db")) == []
    assert "for this command only" in result.stderr


def test_timeout_cancels_slow_runs_and_leaves_them_resumable(
    cli: Cli, tickets: Path, tmp_path: Path
) -> None:
    slow = "simulated:seed=1,latency=5"
    result = cli("run", "ticket_routing", "-i", str(tickets), "-m", slow, "--timeout", "0.2")
    assert result.exit_code == 1, result.output  # every run stopped (cancelled)
    assert counts(result.stdout)["cancelled"] == 6
    assert re.search(r"timed out \(cancelled\)\s*│\s*6", result.stdout)
    assert set(stored(tmp_path / "runs.db").values()) == {"cancelled"}
    # The same kind as run_many(timeout_s=) and Engine(timeout_s=) store.
    assert set(error_kinds(tmp_path / "runs.db").values()) == {"timeout"}
    resumed = cli("resume", "--all-cancelled", "--model", CLEAN)
    assert resumed.exit_code == 0, resumed.output
    assert set(stored(tmp_path / "runs.db").values()) == {"completed"}


def test_a_record_whose_run_cannot_start_is_reported_and_the_rest_run(
    cli: Cli, tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path / "ids.jsonl", [ticket(1), ticket(2, id=""), ticket(3)])
    result = cli("run", "ticket_routing", "--input", str(path), "--model", CLEAN)
    assert result.exit_code == 1, result.output  # one line could not run
    assert counts(result.stdout)["completed"] == 2
    assert re.search(r"could not start\s*│\s*1", result.stdout)
    assert "a run id must be a non-empty string" in result.stdout
    assert stored(tmp_path / "runs.db") == {"T-1": "completed", "T-3": "completed"}
