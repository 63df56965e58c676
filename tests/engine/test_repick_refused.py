"""A re-pick the provider refuses (a context it cannot hold) suspends the run; it never fails it."""

from __future__ import annotations

import json
from pathlib import Path

from engine import BadRequestError, Engine, Runtime, agentic_function, decision
from engine.models import Request, ScriptedModel
from engine.store import MemoryStore, SQLiteStore


@agentic_function
async def route(ticket: str, runtime: Runtime | None = None) -> str:
    return await decision.make(f"Route {ticket}.", ["billing", "tech"])


def refusing_repicks(request: Request) -> str:
    if len(request.messages) > 1:  # the re-pick: the conversation grew past the context
        raise BadRequestError("request (4404 tokens) exceeds the available context size")
    return "I am not sure where this goes."


async def test_a_refused_repick_suspends_with_the_replys_failure(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        eng = Engine(ScriptedModel(refusing_repicks), store=store)
        run = await eng.run(route, "T-1", run_id="r1")

        assert run.status == "suspended"
        assert run.error is not None
        assert run.error.kind == "no_action"
        assert "asking again was refused by the provider" in run.error.message
        assert "exceeds the available context size" in run.error.message
        assert run.error.replies == ["I am not sure where this goes."]

        good = ScriptedModel([json.dumps({"call": "tech"})])
        done = await eng.resume("r1", model=good)
        assert (done.status, done.result) == ("completed", "tech")
        assert len(good.requests[0].messages) == 1  # asked afresh: the original request alone
    finally:
        await store.close()


async def test_a_refused_first_ask_is_the_providers_error() -> None:
    def refuse(request: Request) -> str:
        raise BadRequestError("bad request")

    eng = Engine(ScriptedModel(refuse), store=MemoryStore())
    run = await eng.run(route, "T-2")
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "BadRequestError"
