"""A damaged or read-only store file: every command says so in one line, and leaves it as it was.

Run as root, file permissions stop no write; a file whose write permission is off counts as
read-only all the same, so these tests hold for root too.
"""

from __future__ import annotations

import contextlib
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from cli_support import CLEAN, Cli, ticket, write_jsonl
from typer.testing import CliRunner

from engine.cli import app
from engine.store import Run, SQLiteStore

FLOW = "flows.ticket_routing:route_ticket"
PAGE = 4096


async def _fill(path: Path) -> None:
    async with SQLiteStore(path) as store:
        for n in range(300):
            run = Run.model_validate(
                {
                    "run_id": f"r-{n:03}",
                    "flow": FLOW,
                    "status": "completed",
                    "input": {"ticket": {"id": f"r-{n:03}", "body": "x" * 900}},
                    "finished_at": 1.0,
                }
            )
            await store.create_run(run)


def _head(data: bytes) -> bytes:
    return b"not a database, not at all!" * 4 + data[108:]


def _middle(data: bytes) -> bytes:
    # Two whole pages in the middle of the runs table, as a bad disk sector would leave them.
    start = len(data) // 2 // PAGE * PAGE
    return data[:start] + b"\xde\xad\xbe\xef" * (2 * PAGE // 4) + data[start + 2 * PAGE :]


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 3]


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "head": _head,
    "middle": _middle,
    "truncated": _truncated,
}

# Each command, reading or writing, given what it needs; ``nope`` is no run's id, so `show`
# and `resume` look through every run for one it starts.
COMMANDS = {
    "runs": ["runs"],
    "show": ["show", "nope"],
    "graph": ["graph"],
    "prune": ["prune", "--keep-last", "1"],
    "run": ["run", "ticket_routing", "-i", "tickets.jsonl", "-m", CLEAN],
    "resume": ["resume", "r-001", "-m", CLEAN],
}
READING = ("runs", "show", "graph")


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a store of three runs of the flow and 300 more runs, every commit in the
    file itself."""
    folder = tmp_path_factory.mktemp("store")
    path = folder / "runs.db"
    tickets = write_jsonl(folder / "tickets.jsonl", [ticket(n) for n in range(1, 4)])
    ran = CliRunner().invoke(
        app, ["run", "ticket_routing", "-i", str(tickets), "-m", CLEAN, "--store", str(path)]
    )
    assert ran.exit_code == 0, ran.output
    anyio.run(_fill, path)
    assert not path.with_name("runs.db-wal").exists()
    return path.read_bytes()


@pytest.fixture
def db(cli: Cli, tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "tickets.jsonl", [ticket(1), ticket(2)])
    return tmp_path / "runs.db"


def _one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_damaged_store_is_one_line_and_exit_status_4(
    cli: Cli, db: Path, healthy: bytes, damage: str, command: str
) -> None:
    damaged = DAMAGE[damage](healthy)
    db.write_bytes(damaged)
    result = cli(*COMMANDS[command])
    assert "Traceback" not in result.output
    assert result.exit_code == 4, result.output
    line = _one_error_line(result.stderr)
    assert str(db) in line
    assert "is damaged" in line or "cannot be read" in line
    assert "integrity_check" in line  # what to do
    assert db.read_bytes() == damaged


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_read_only_store_is_read_and_never_written(
    cli: Cli, db: Path, healthy: bytes, command: str
) -> None:
    db.write_bytes(healthy)
    db.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    try:
        result = cli(*COMMANDS[command])
    finally:
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert "Traceback" not in result.output
    if command in READING:
        assert result.exit_code == (2 if command == "show" else 0), result.output  # show: no run
        assert "read-only" not in result.output
    else:
        assert result.exit_code == 4, result.output
        line = _one_error_line(result.stderr)
        assert f"the store {cli.store!r} is read-only (its write permission is off)" in line
        assert "nothing was done" in line
    assert db.read_bytes() == healthy


def test_reading_commands_read_a_read_only_store(cli: Cli, db: Path, healthy: bytes) -> None:
    db.write_bytes(healthy)
    db.chmod(stat.S_IRUSR)
    try:
        listed = cli("runs", "--limit", "400")
        shown = cli("show", "r-150")
        drawn = cli("graph", FLOW)
    finally:
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert listed.exit_code == 0, listed.output
    assert "303 run(s): 303 completed" in listed.stdout
    assert shown.exit_code == 0, shown.output
    assert "run r-150" in shown.stdout
    assert drawn.exit_code == 0, drawn.output
    assert "flowchart" in drawn.stdout
    assert db.read_bytes() == healthy


def test_a_row_the_store_cannot_decode_is_one_line(cli: Cli, db: Path, healthy: bytes) -> None:
    db.write_bytes(healthy)
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE runs SET body = '{not json' WHERE run_id = 'r-007'")
    result = cli("runs")
    assert result.exit_code == 4, result.output
    line = _one_error_line(result.stderr)
    assert "holds a row that cannot be read" in line
