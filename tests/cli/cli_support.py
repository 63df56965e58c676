"""Helpers of the command-line tests: offline models, input files, an in-process runner."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from engine.cli import app

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
