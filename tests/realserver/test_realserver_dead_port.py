"""A server that is not there: a port where nothing listens fails fast, naming its URL.

These need no running server, so they run in plain ``make test`` too.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from realserver_support import engine, stored_runs

from engine import ProviderUnreachableError, Runtime, decision, transport_policy
from engine.models import OpenAIModel


@pytest.fixture
def dead_url() -> str:
    """The ``/v1`` URL of a port of 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def no_wait(seconds: float) -> None:
    """The transport layer's backoff, skipped: a bare runtime retries a refused connection."""


async def test_a_decision_at_a_dead_port_names_the_url(dead_url: str) -> None:
    async with OpenAIModel("tiny", base_url=dead_url) as model:
        runtime = Runtime(model, transport=transport_policy(sleep=no_wait))
        with pytest.raises(ProviderUnreachableError) as caught:
            await decision.make("Pick one.", ["a", "b"], runtime=runtime)

    assert caught.value.url == dead_url
    assert dead_url in str(caught.value)


def test_a_batch_at_a_dead_port_fails_fast_naming_the_url(dead_url: str, tmp_path: Path) -> None:
    tickets = tmp_path / "tickets.jsonl"
    records = [
        {"id": f"T-{n}", "customer_id": f"C-{n}", "subject": "Late", "body": "Where is it?"}
        for n in range(3)
    ]
    tickets.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    db = tmp_path / "runs.db"
    started = time.monotonic()
    done = engine(
        "run", "ticket_routing", "--input", str(tickets), "--store", f"sqlite:///{db}",
        "--model", f"openai:tiny@{dead_url}?enforce=auto",
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    elapsed = time.monotonic() - started

    assert done.returncode == 1, done.stderr + done.stdout
    # A provider that never answered is not waited for: no retries, no breaker's hold.
    assert elapsed < 30, elapsed
    runs = stored_runs(db)
    assert [r.status for r in runs] == ["suspended"] * 3  # to resume once the server is up
    for run in runs:
        assert run.error is not None
        assert run.error.kind == "provider_unavailable", run.error
        assert dead_url in run.error.message, run.error
