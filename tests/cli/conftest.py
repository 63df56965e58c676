"""Shared fixtures of the command-line tests: a runner, a small input file, a store."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
from typer.testing import CliRunner, Result

from engine.cli import app
from engine.cli._common import err, out

#: An offline model that suspends some tickets: one reply fault in five.
FAULTY = "simulated:seed=3,faults=0.5"
#: An offline model with no faults, for resumes.
CLEAN = "simulated:seed=11"


def ticket(n: int, **extra: Any) -> dict[str, Any]:
    """Return one small support ticket."""
    return {
        "id": f"T-{n}",
        "customer_id": f"C-{n}",
        "subject": "Broken mug",
        "body": f"Order A-1000{n} arrived broken.",
        "order_id": f"A-1000{n}",
        "line_items": [{"sku": "MUG-1", "name": "mug", "price": 12.0}],
        **extra,
    }


def write_jsonl(path: Path, records: list[Any], *, raw: list[tuple[int, str]] = ()) -> Path:
    """Write records one a line; ``raw`` inserts literal lines at given indexes."""
    lines = [json.dumps(r) for r in records]
    for index, text in raw:
        lines.insert(index, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass
class Cli:
    """Invoke the ``engine`` app in-process against one store."""

    store: str
    runner: CliRunner

    def __call__(self, *args: str, store: bool = True, env: dict[str, str] | None = None) -> Result:
        argv = [*args, "--store", self.store] if store else list(args)
        base = {"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None, "ENGINE_STORE": None}
        return self.runner.invoke(app, argv, env={**base, **(env or {})})


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


@pytest.fixture
def tickets(tmp_path: Path) -> Path:
    """Six tickets, one a line."""
    return write_jsonl(tmp_path / "tickets.jsonl", [ticket(n) for n in range(1, 7)])
