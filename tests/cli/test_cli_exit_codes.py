"""Exit statuses by the README's table, and a summary whose rows add up to the file's lines."""

from __future__ import annotations

import re
import time
from pathlib import Path

import anyio
from cli_support import CLEAN, FAULTY, Cli, ticket, write_jsonl

from engine.store import SQLiteStore

OK, STOPPED, USAGE, NOTHING_STARTED = 0, 1, 2, 3
ROW = re.compile(r"│ (\S[^│]*?)\s*│\s*(\d+) │")


def rows(output: str) -> dict[str, int]:
    """Read the summary table: row label -> count (the total and the timed-out part aside)."""
    found = {m.group(1): int(m.group(2)) for m in ROW.finditer(output)}
    return {k: v for k, v in found.items() if not k.startswith("of them")}


def adds_up(output: str, lines: int) -> None:
    """The rows account for every line once, and the total says so."""
    counted = rows(output)
    total = counted.pop("total")
    assert total == lines
    assert sum(counted.values()) == lines, counted


def hold(db: Path, status: str, *, lease_s: float) -> list[str]:
    """Mark the runs in ``status`` as running under another owner, its lease ``lease_s`` away."""

    async def move() -> list[str]:
        async with SQLiteStore(db) as store:
            moved = []
            for run in await store.list_runs(status=status):  # type: ignore[arg-type]
                held = run.model_copy(
                    update={
                        "status": "running",
                        "owner": "elsewhere",
                        "lease_expires_at": time.time() + lease_s,
                        "finished_at": None,
                    }
                )
                assert await store.update_run(held, expected_version=run.version) is not None
                moved.append(run.run_id)
            return moved

    return anyio.run(move)


def test_every_run_completed_exits_0_and_a_rerun_counts_them_stored(
    cli: Cli, tickets: Path
) -> None:
    first = cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN)
    assert first.exit_code == OK, first.output
    adds_up(first.stdout, 6)
    again = cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN)
    assert again.exit_code == OK, again.output
    assert rows(again.stdout)["already in the store"] == 6
    assert rows(again.stdout)["completed"] == 0  # nothing ran twice
    adds_up(again.stdout, 6)


def test_some_runs_stopped_exits_1_and_a_rerun_still_says_so(cli: Cli, tickets: Path) -> None:
    first = cli("run", "ticket_routing", "-i", str(tickets), "-m", FAULTY)
    assert first.exit_code == STOPPED, first.output
    assert rows(first.stdout)["suspended"] > 0
    again = cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN)
    assert again.exit_code == STOPPED  # the file's suspended runs are still suspended
    assert re.search(r"already in the store: .*\d+ suspended", again.stdout)
    assert "0 model calls" in again.stdout  # nothing ran again
    adds_up(again.stdout, 6)
    resumed = cli("resume", "--all-suspended", "-m", CLEAN)
    assert resumed.exit_code == OK, resumed.output
    assert cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN).exit_code == OK


def test_every_line_bad_exits_3(cli: Cli, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [], raw=[(0, "{nope"), (1, "[1, 2]")])
    result = cli("run", "ticket_routing", "-i", str(path), "-m", CLEAN)
    assert result.exit_code == NOTHING_STARTED, result.output
    assert rows(result.stdout)["input lines skipped"] == 2
    adds_up(result.stdout, 2)


def test_a_duplicate_id_is_a_row_of_its_own(cli: Cli, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "dup.jsonl", [ticket(1), ticket(2), ticket(1), ticket(3)])
    result = cli("run", "ticket_routing", "-i", str(path), "-m", CLEAN)
    assert result.exit_code == STOPPED, result.output
    assert rows(result.stdout)["duplicate id in the file"] == 1
    assert "lines 3: a run id an earlier line gave" in result.stdout
    assert rows(result.stdout)["completed"] == 3
    adds_up(result.stdout, 4)


def test_runs_another_process_holds_are_left_alone(cli: Cli, tickets: Path, tmp_path: Path) -> None:
    assert cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN).exit_code == OK
    held = hold(tmp_path / "runs.db", "completed", lease_s=600)
    result = cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN)
    assert result.exit_code == NOTHING_STARTED, result.output  # every run is held elsewhere
    assert rows(result.stdout)["held by another process: left alone"] == len(held) == 6
    adds_up(result.stdout, 6)
    one = cli("resume", held[0], "-m", CLEAN)
    assert one.exit_code == NOTHING_STARTED
    assert "error: " in one.stderr
    assert "Traceback" not in one.output
    recovered = cli("recover", "-m", CLEAN)  # a live lease is never displaced
    assert recovered.exit_code == OK, recovered.output
    assert "6 running run(s) hold a live lease" in recovered.stderr


def test_runs_whose_process_died_point_to_engine_recover(
    cli: Cli, tickets: Path, tmp_path: Path
) -> None:
    assert cli("run", "ticket_routing", "-i", str(tickets), "-m", FAULTY).exit_code == STOPPED
    dead = hold(tmp_path / "runs.db", "suspended", lease_s=-1)
    assert dead
    result = cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN)
    assert result.exit_code == STOPPED, result.output
    assert rows(result.stdout)["its process died: `engine recover`"] == len(dead)
    assert "engine recover" in result.stdout.split("next:")[1]
    adds_up(result.stdout, 6)
    recovered = cli("recover", "-m", CLEAN, "--lease", "5")
    assert recovered.exit_code == OK, recovered.output
    assert rows(recovered.stdout)["completed"] == len(dead)
    assert cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN).exit_code == OK


def test_resume_of_one_run_says_how_it_ended(cli: Cli, tickets: Path, tmp_path: Path) -> None:
    cli("run", "ticket_routing", "-i", str(tickets), "-m", FAULTY)
    listed = cli("runs", "--status", "suspended", "--json").stdout.splitlines()
    run_id = re.search(r'"run_id": "([^"]+)"', listed[0])
    assert run_id is not None
    again = cli("resume", run_id.group(1), "-m", FAULTY, "--max-retries", "0")
    assert again.exit_code in (OK, STOPPED)
    status = "completed" if again.exit_code == OK else "suspended"
    assert status in again.stdout
    done = cli("resume", run_id.group(1), "-m", CLEAN)
    assert done.exit_code == OK, done.output
    assert cli("resume", run_id.group(1), "-m", CLEAN).exit_code == OK  # already completed


def test_usage_errors_exit_2_in_one_line(cli: Cli, tickets: Path) -> None:
    for args in (
        ["run", "ticket_routing", "-i", str(tickets), "--concurrency", "0"],
        ["run", "no_such_flow", "-i", str(tickets)],
        ["recover", "--lease", "0"],
        ["prune"],
    ):
        result = cli(*args)
        assert result.exit_code == USAGE, (args, result.output)
        assert "Traceback" not in result.output


def test_submit_exits_by_the_same_table(
    cli: Cli, tmp_path: Path, pg_dsn: str, pg_schema: str
) -> None:
    store = ["--store", f"{pg_dsn}?schema={pg_schema}"]
    good = write_jsonl(tmp_path / "good.jsonl", [ticket(1), ticket(2)])
    some = write_jsonl(tmp_path / "some.jsonl", [ticket(3)], raw=[(0, "{nope")])
    bad = write_jsonl(tmp_path / "bad.jsonl", [], raw=[(0, "{nope")])
    first = cli("submit", "ticket_routing", "-i", str(good), *store, store=False)
    assert first.exit_code == OK, first.output
    again = cli("submit", "ticket_routing", "-i", str(good), *store, store=False)
    assert again.exit_code == OK, again.output  # stored before: nothing to do
    assert (
        cli("submit", "ticket_routing", "-i", str(some), *store, store=False).exit_code == STOPPED
    )
    none = cli("submit", "ticket_routing", "-i", str(bad), *store, store=False)
    assert none.exit_code == NOTHING_STARTED, none.output
