"""Helpers of the command-line tests: offline models, input files, an in-process runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from typer.testing import CliRunner, Result

from engine.cli import app
from engine.store import SQLiteStore

ROOT = Path(__file__).parents[2]

#: An offline model that suspends some tickets: half its replies are bad.
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


def process_env() -> dict[str, str]:
    """The environment of an ``engine`` child process: no provider keys, no ENGINE_STORE."""
    clean = {
        k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "ENGINE_STORE"
    }
    return {**clean, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}


def engine_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m engine ARGS`` in a child process and wait for it (60 s at most)."""
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        cwd=cwd,
        env=process_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def stored_statuses(path: Path) -> dict[str, str]:
    """Return the status of every run in the SQLite store at ``path``, by run id."""

    async def read() -> dict[str, str]:
        async with SQLiteStore(path) as store:
            return {r.run_id: r.status for r in await store.list_runs()}

    return anyio.run(read)
