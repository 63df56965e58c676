"""Fixtures of the command-line tests: a runner on a fresh store, a small input file."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from cli_support import Cli, ticket, write_jsonl
from typer.testing import CliRunner

from engine.cli._common import err, out


@pytest.fixture(scope="module", autouse=True)
def _no_refund_waits_for_approval() -> Iterator[None]:
    """Route tickets with no refund waiting for a person, in-process and in child processes.

    These tests check the command line on the ticket-routing flow; its approvals are tested
    in tests/flows, and ``engine answer`` in test_answer.py on flows of its own. Module-wide,
    so that a module's own stores are made so too.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TICKET_REFUND_APPROVAL_LIMIT", "inf")
        yield


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    """A CLI bound to a fresh SQLite store in a temporary working directory."""
    monkeypatch.chdir(tmp_path)
    for console in (out, err):
        monkeypatch.setattr(console, "_width", 200)
    yield Cli(f"sqlite:///{tmp_path / 'runs.db'}", CliRunner())
    # The app configures logging for the process; leave the next test the defaults.
    structlog.reset_defaults()
    logging.getLogger("engine").setLevel(logging.NOTSET)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == "engine-structlog"]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)


@pytest.fixture
def tickets(tmp_path: Path) -> Path:
    """Six tickets, one a line."""
    return write_jsonl(tmp_path / "tickets.jsonl", [ticket(n) for n in range(1, 7)])
