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
