"""Errors that say what failed where: a dead port names its URL and stops its runs at once.

A connection failure names the base URL it tried. An endpoint that has never answered in
this process fails the runs waiting on it quickly, with that message, instead of holding
the batch behind transport retries and the circuit breaker; a provider that was up keeps
the breaker's usual behaviour (tests/limits).
"""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

import anyio
import pytest

from engine import (
    Engine,
    ProviderUnavailableError,
    ProviderUnreachableError,
    agentic_function,
    decision,
)
from engine.models import AnthropicModel, Message, OpenAIModel, Request
from engine.store import MemoryStore


def dead_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


HELLO = Request(messages=[Message.of("user", "Hi")])


async def test_errors_a_connection_failure_names_the_base_url() -> None:
    url = f"http://127.0.0.1:{dead_port()}/v1"

    async with OpenAIModel("m", base_url=url) as model:
        with pytest.raises(ProviderUnreachableError) as caught:
            await model.complete(HELLO)

    assert str(caught.value) == f"could not reach openai at {url}: Connection error."
    assert caught.value.url == url
    assert isinstance(caught.value, ProviderUnavailableError)  # still a transport failure


async def test_errors_an_anthropic_connection_failure_names_its_url_too() -> None:
    url = f"http://127.0.0.1:{dead_port()}"

    async with AnthropicModel("claude-x", api_key="k", base_url=url) as model:
        with pytest.raises(ProviderUnreachableError, match=f"could not reach anthropic at {url}"):
            await model.complete(HELLO)


@agentic_function
async def route(ticket: str, runtime: Any = None) -> Any:
    return await decision.make(f"Ticket: {ticket}\nPick a queue.", ["billing", "tech"])


async def test_errors_a_batch_to_a_dead_port_stops_within_seconds_naming_the_url() -> None:
    url = f"http://127.0.0.1:{dead_port()}/v1"
    model = OpenAIModel(f"tiny-{uuid.uuid4().hex[:8]}", base_url=url, enforce="auto")
    engine = Engine(model=model, store=MemoryStore())

    started = time.perf_counter()
    with anyio.fail_after(30):
        runs = await engine.run_many(route, [f"ticket {i}" for i in range(6)], concurrency=3)
    elapsed = time.perf_counter() - started
    await model.aclose()

    assert elapsed < 5, elapsed  # was minutes: transport retries, then the breaker's waits
    assert [r.status for r in runs] == ["suspended"] * 6
    for run in runs:
        assert run.error is not None
        assert run.error.kind == "provider_unavailable"
        assert run.error.message.startswith(f"could not reach openai at {url}: Connection error")
        assert "start the server or fix the URL" in run.error.message
