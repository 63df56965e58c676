"""Retry policies give way to the engine's own stops: a cancel, a shutdown, a resume by hand."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
from down_provider import Down

from engine import (
    Engine,
    Runtime,
    agentic_function,
    decision,
    run_policy,
    step_policy,
    transport_policy,
)
from engine.models import Request, ScriptedModel
from engine.store import MemoryStore


class Gate:
    """A sleep that waits until the test opens it, and says when someone waits on it."""

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.open = anyio.Event()

    async def sleep(self, seconds: float) -> None:
        self.waiting.set()
        await self.open.wait()


@agentic_function
async def route(ticket: str, runtime: Runtime | None = None) -> str:
    picked: str = await decision.make(f"Route {ticket}.", ["billing", "shipping"])
    return picked


def engine(model: Down, gate: Gate) -> Engine:
    runtime = Runtime(model=model, transport=transport_policy(attempts=1))
    policy = run_policy(5, sleep=gate.sleep)
    return Engine(runtime=runtime, store=MemoryStore(), run_policy=policy, breaker=None)


async def run_while(eng: Engine, gate: Gate, meanwhile: Any) -> Any:
    """Run ``route`` and, once its run policy waits to resume it, call ``meanwhile``."""
    ran: dict[str, Any] = {}

    async def go() -> None:
        ran["run"] = await eng.run(route, "t", run_id="r1")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await gate.waiting.wait()
            await meanwhile()
    return ran["run"]


async def test_run_policy_gives_way_to_a_cancel() -> None:
    model, gate = Down(lambda request: '{"call": "billing"}'), Gate()
    eng = engine(model, gate)

    async def cancel() -> None:
        assert (await eng.cancel("r1")).status == "cancelled"
        model.up = True
        gate.open.set()

    run = await run_while(eng, gate, cancel)

    assert run.status == "cancelled"
    assert model.calls == 1  # not resumed after the cancel


async def test_run_policy_gives_way_to_a_resume_by_hand() -> None:
    model, gate = Down(lambda request: '{"call": "billing"}'), Gate()
    eng = engine(model, gate)

    async def resume() -> None:
        model.up = True
        assert (await eng.resume("r1")).status == "completed"
        gate.open.set()

    run = await run_while(eng, gate, resume)

    assert run.status == "completed"
    assert model.calls == 2  # the failed call and the resume by hand, nothing twice


async def test_a_shutdown_ends_a_run_policy_wait_at_once() -> None:
    model, gate = Down(lambda request: '{"call": "billing"}'), Gate()
    eng = engine(model, gate)

    async def shutdown() -> None:
        await eng.shutdown(grace_s=0.1)  # the gate is never opened

    run = await run_while(eng, gate, shutdown)

    assert run.status == "failed"
    assert model.calls == 1


async def test_a_shutdown_is_not_retried_by_a_step_policy() -> None:
    bodies: list[str] = []
    gate = Gate()

    @agentic_function(retry=step_policy(attempts=4, sleep=lambda s: anyio.lowlevel.checkpoint()))
    async def handle(ticket: str, runtime: Runtime | None = None) -> str:
        """Handle the ticket."""
        bodies.append(ticket)
        await gate.sleep(0)  # the step is under way when the shutdown comes
        closed: str = await decision.make("Close?", ["close", "keep"])
        return closed

    @agentic_function
    async def flow(ticket: str, runtime: Runtime | None = None) -> str:
        result: str = await decision.make("Act.", [handle])
        return result

    async def reply(request: Request) -> str:
        return '{"call": "handle", "args": {"ticket": "t"}}'

    eng = Engine(model=ScriptedModel(reply), store=MemoryStore())
    ran: dict[str, Any] = {}

    async def go() -> None:
        ran["run"] = await eng.run(flow, "t", run_id="s1")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await gate.waiting.wait()
            tg.start_soon(eng.shutdown, 2.0)
            await anyio.sleep(0.05)
            gate.open.set()

    assert ran["run"].status == "cancelled"
    assert ran["run"].error.kind == "shutdown"
    assert bodies == ["t"]  # the step ran once: a stop is not a failure to retry
    assert ran["run"].retries.get("step", 0) == 0
