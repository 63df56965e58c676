"""A resume on another model asks that model in its own enforcement mode.

The mode follows the model that answers the live call, not the runtime's: a run suspended on
model A (``json_schema``) and resumed on model B gets B's form (``json_object``, or none for
``text``), and a run that began unenforced is enforced on a resume model that enforces.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from provider_server import ProviderServer, Recorded, Reply
from real_servers import LlamaCppPython, completion

from engine import Engine, agentic_function, decision
from engine.models import OpenAIModel
from engine.store import MemoryStore

PICK = {"call": "tech"}


@agentic_function
async def route(ticket: str, runtime: Any = None) -> Any:
    return await decision.make(f"Ticket: {ticket}\nPick a queue.", ["billing", "tech"])


def gibberish(recorded: Recorded) -> Reply:
    return Reply(completion('{"pick": {"call": "sales"}}'))


def answers(recorded: Recorded) -> Reply:
    return Reply(completion(json.dumps({"pick": PICK})))


@pytest.fixture
def servers() -> Iterator[dict[str, ProviderServer]]:
    made = {
        "bad": ProviderServer(gibberish).start(),
        "cpp": ProviderServer(LlamaCppPython(PICK, text=json.dumps(PICK))).start(),
        "good": ProviderServer(answers).start(),
    }
    yield made
    for server in made.values():
        server.close()


def model(server: ProviderServer, enforce: Any) -> OpenAIModel:
    name = f"tiny-{uuid.uuid4().hex[:8]}"
    return OpenAIModel(name, base_url=f"{server.url}/v1", enforce=enforce)


def formats(server: ProviderServer) -> list[str]:
    out = []
    for recorded in server.requests:
        fmt = recorded.body.get("response_format")
        out.append(fmt["type"] if fmt else "tool" if "tool_choice" in recorded.body else "none")
    return out


@pytest.mark.parametrize(
    ("enforce", "sent", "mode"),
    [
        pytest.param("json_object", ["json_object"], "json_object", id="json_object"),
        pytest.param("auto", ["json_schema", "json_object"], "json_object", id="auto"),
        pytest.param("tool", ["tool"], "tool", id="tool"),
        pytest.param("text", ["none"], "text", id="text"),
    ],
)
async def test_resume_on_another_model_sends_that_models_own_form(
    servers: dict[str, ProviderServer], enforce: str, sent: list[str], mode: str
) -> None:
    first = model(servers["bad"], "json_schema")
    other = model(servers["cpp"], enforce)
    engine = Engine(model=first, store=MemoryStore())
    run = await engine.run(route, "The app crashes.", run_id="r1")
    assert run.status == "suspended"
    assert formats(servers["bad"]) == ["json_schema", "json_schema"]  # the pick and its re-pick

    resumed = await engine.resume("r1", model=other)

    assert resumed.status == "completed"
    assert resumed.result == "tech"
    assert formats(servers["cpp"]) == sent  # never json_schema, which it refuses (auto: once)
    assert formats(servers["bad"]) == ["json_schema", "json_schema"]  # not asked again
    trace = await engine.trace("r1")
    assert trace is not None
    decisions = [n for n in trace["nodes"] if n["kind"] == "decision"]
    assert decisions[-1]["data"]["enforcement"] == mode
    await first.aclose()
    await other.aclose()


async def test_resume_a_run_begun_unenforced_is_enforced_on_a_model_that_enforces(
    servers: dict[str, ProviderServer],
) -> None:
    first = model(servers["bad"], "text")
    other = model(servers["good"], "json_schema")
    engine = Engine(model=first, store=MemoryStore())
    run = await engine.run(route, "The app crashes.", run_id="r2")
    assert run.status == "suspended"
    assert formats(servers["bad"]) == ["none", "none"]

    resumed = await engine.resume("r2", model=other)

    assert resumed.status == "completed"
    assert formats(servers["good"]) == ["json_schema"]
    await first.aclose()
    await other.aclose()
