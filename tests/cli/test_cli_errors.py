"""Mistakes on the command line stop with one line that says what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import CLEAN, Cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "nope", "-i", "tickets.jsonl"], "unknown flow 'nope'"),
        (["run", "no_such_module:fn", "-i", "tickets.jsonl"], "cannot import module"),
        (["run", "flows.ticket_routing:nope", "-i", "tickets.jsonl"], "has no 'nope'"),
        (["run", "ticket_routing", "-i", "missing.jsonl"], "cannot read the input missing.jsonl"),
        (["run", "ticket_routing", "-i", "tickets.jsonl", "-m", "gpt:x"], "unknown model"),
        (
            ["run", "ticket_routing", "-i", "tickets.jsonl", "-m", "simulated:speed=3"],
            "unknown option 'speed'",
        ),
    ],
    ids=["short-name", "module", "function", "input", "model", "simulated-option"],
)
def test_run_errors_name_the_fix(cli: Cli, tickets: Path, args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert "error:" in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("sqlite:///no/such/folder/runs.db", "the folder no/such/folder does not exist"),
        ("redis://localhost", "unknown kind of store"),
        (".", "is a folder"),
    ],
    ids=["missing-folder", "unknown-scheme", "folder"],
)
def test_bad_stores_are_explained(cli: Cli, tickets: Path, store: str, message: str) -> None:
    result = cli(
        "run", "ticket_routing", "-i", str(tickets), "-m", CLEAN, "--store", store, store=False
    )
    assert result.exit_code == 2
    assert message in result.stderr


def test_an_unreadable_store_file_is_unreachable(cli: Cli, tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    result = cli("runs", "--store", str(junk), store=False)
    assert result.exit_code == 4  # the store is unreachable or damaged
    assert "is damaged (file is not a database)" in result.stderr


def test_reading_commands_do_not_create_a_store(cli: Cli, tmp_path: Path) -> None:
    result = cli("runs")
    assert result.exit_code == 2
    assert "no store at" in result.stderr
    assert "engine run" in result.stderr
    assert not (tmp_path / "runs.db").exists()


def test_bad_log_level_is_a_usage_error(cli: Cli) -> None:
    result = cli("--log-level", "loud", "runs", store=False)
    assert result.exit_code == 2
    assert "log level 'loud'" in result.output
