"""Helpers of the real-server tests: the servers ``make test-servers`` names, and checks of
what the engine made of a random reply."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from engine import DecisionError, Runtime
from engine.store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]

#: The two servers, in the order ``make test-servers`` starts them.
SERVERS = ("llama-cpp-python", "llama-server")

#: The enforcement mode each server takes (tools/realserver/README.md, what check.py found):
#: llama-cpp-python refuses ``json_schema`` and takes ``json_object`` with a schema;
#: llama-server honours ``json_schema``.
OWN_MODE = {"llama-cpp-python": "json_object", "llama-server": "json_schema"}

#: The kinds a decision error may have (docs/decisions.md).
DECISION_KINDS = frozenset(
    {
        "no_action",
        "unknown_call",
        "bad_args",
        "missing_required",
        "type_mismatch",
        "enum_violation",
        "truncated",
    }
)


@dataclass(frozen=True)
class RealServer:
    """One running server: its name, its ``/v1`` URL, and the other server's."""

    name: str
    url: str
    other_name: str
    other_url: str

    @property
    def mode(self) -> str:
        """The enforcement mode this server takes."""
        return OWN_MODE[self.name]

    @property
    def other_mode(self) -> str:
        """The enforcement mode the other server takes."""
        return OWN_MODE[self.other_name]


def server_urls() -> dict[str, str]:
    """Return ``REALSERVER_URLS`` as ``{name: url}`` (empty when it is unset)."""
    urls: dict[str, str] = {}
    for item in filter(None, os.environ.get("REALSERVER_URLS", "").split(",")):
        name, sep, url = item.partition("=")
        if not sep or name not in SERVERS:
            raise pytest.UsageError(f"REALSERVER_URLS item {item!r} is not {SERVERS[0]}=URL")
        urls[name] = url
    return urls


def check_decision_error(exc: DecisionError) -> None:
    """Assert that a decision error is one the reply explains: a known kind, its replies kept."""
    assert exc.kind in DECISION_KINDS, exc
    assert exc.replies, exc
    assert exc.message.startswith("decision failed after "), exc


def decision_nodes(runtime: Runtime) -> list[dict[str, Any]]:
    """Return the exported decision nodes of a runtime's trace."""
    return [n for n in runtime.trace.to_dict()["nodes"] if n["kind"] == "decision"]


def model_calls(runtime: Runtime) -> list[dict[str, Any]]:
    """Return the exported nodes of a runtime's model calls: first calls and re-picks."""
    return [n for n in runtime.trace.to_dict()["nodes"] if n["kind"] in ("model_call", "repick")]


def engine(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``python -m engine ARGS`` as a user would, without provider keys."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(ROOT), COLUMNS="200")
    env.pop("ENGINE_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def stored_runs(db: Path) -> list[Any]:
    """Return every run of the SQLite store at ``db``."""

    async def read() -> list[Any]:
        async with SQLiteStore(db) as store:
            return list(await store.list_runs())

    return anyio.run(read)


def stored_traces(db: Path, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Return the stored trace of each of ``run_ids`` in the SQLite store at ``db``."""

    async def read() -> dict[str, dict[str, Any]]:
        async with SQLiteStore(db) as store:
            return {r: await store.load_trace(r) or {} for r in run_ids}

    return anyio.run(read)
