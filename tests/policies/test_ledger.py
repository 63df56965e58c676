"""The retry ledger: every attempt at every layer of a run, with its cause, once."""

from __future__ import annotations

import json

import anyio

from engine import (
    Engine,
    RateLimitError,
    RetryEvent,
    Runtime,
    agentic_function,
    decision,
    decision_policy,
    step_policy,
    transport_policy,
)
from engine.models import Request, Response, ScriptedModel
from engine.store import MemoryStore

TRIES = {"charge": 0}


async def no_wait(seconds: float) -> None:
    await anyio.lowlevel.checkpoint()


class RateLimitedOnce(ScriptedModel):
    """A scripted model that answers its first call with a 429."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.limited = False

    async def complete(self, request: Request) -> Response:
        if not self.limited:
            self.limited = True
            raise RateLimitError("429 from the test", retry_after=0.0, provider="test")
        return await super().complete(request)


@agentic_function(retry=step_policy(attempts=2, sleep=no_wait))
async def charge(amount: int) -> str:
    """Charge the customer (the gateway times out once)."""
    TRIES["charge"] += 1
    if TRIES["charge"] == 1:
        raise TimeoutError("gateway timed out")
    return f"charged {amount}"


@agentic_function
async def checkout(order: str, runtime: Runtime | None = None) -> str:
    """One decision whose option is a retryable step."""
    result: str = await decision.make(f"Settle {order}.", [charge])
    return result


async def test_ledger_holds_every_layer_once_and_the_engine_hears_each_attempt() -> None:
    TRIES["charge"] = 0
    good = json.dumps({"call": "charge", "args": {"amount": 5}})
    first = RateLimitedOnce(["no pick", "no pick either"])
    fallback = ScriptedModel([good])
    events: list[RetryEvent] = []
    eng = Engine(
        runtime=Runtime(model=first, transport=transport_policy(sleep=no_wait)),
        store=MemoryStore(),
        decision_policy=decision_policy(fallback=[fallback]),
        on_retry=events.append,
    )

    run = await eng.run(checkout, "o1", run_id="r1")

    assert run.status == "completed"
    assert run.retries == {"transport": 1, "parse": 1, "decision": 1, "step": 1}
    ledger = await eng.retries("r1")
    assert [(e["layer"], e["kind"]) for e in ledger] == [
        ("transport", "RateLimitError"),
        ("parse", "no_action"),
        ("decision", "no_action"),
        ("step", "TimeoutError"),
    ]
    assert all(e["key"].startswith("run/checkout:0/") for e in ledger)
    assert [e.layer for e in events] == ["transport", "parse", "decision", "step"]
    trace = await eng.trace("r1")
    assert trace is not None
    traced = [n["data"].get("layer") for n in trace["nodes"] if n["kind"] in ("retry", "repick")]
    assert traced == ["transport", "parse", "decision", "step"]
