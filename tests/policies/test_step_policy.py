"""Layer 3: a function option that raised runs again only when it is declared retryable."""

from __future__ import annotations

import json

import anyio
import pytest

from engine import (
    Engine,
    RetryEvent,
    Runtime,
    agentic_function,
    decision,
    idempotency_key,
    step_policy,
)
from engine._decision._params import AGENTIC_ATTR
from engine.models import ScriptedModel
from engine.store import MemoryStore

CALLS: dict[str, int] = {}


async def no_wait(seconds: float) -> None:
    await anyio.lowlevel.checkpoint()


@agentic_function(retry=step_policy(attempts=3, sleep=no_wait))
async def flaky_refund(order_id: str) -> str:
    """Refund an order (the payment gateway fails twice first)."""
    CALLS["flaky_refund"] = CALLS.get("flaky_refund", 0) + 1
    if CALLS["flaky_refund"] < 3:
        raise ConnectionError("gateway reset the connection")
    return f"refunded {order_id}"


@agentic_function
async def send_email(order_id: str) -> str:
    """Email the customer (not declared retryable: it must not run twice)."""
    CALLS["send_email"] = CALLS.get("send_email", 0) + 1
    raise ConnectionError("smtp down")


@agentic_function(retry=step_policy(attempts=5, sleep=no_wait))
async def always_down(order_id: str) -> str:
    """A retryable step that never works."""
    CALLS["always_down"] = CALLS.get("always_down", 0) + 1
    raise TimeoutError("still down")


@agentic_function(retry=step_policy(attempts=5, sleep=no_wait))
async def nested_decision(order_id: str, runtime: Runtime | None = None) -> str:
    """A retryable step whose own decision fails: the decision's error is not retried."""
    CALLS["nested_decision"] = CALLS.get("nested_decision", 0) + 1
    picked: str = await decision.make("Which?", ["x", "y"])
    return picked


@agentic_function
async def act(order_id: str, runtime: Runtime | None = None) -> str:
    """Pick one action for an order."""
    result: str = await decision.make(
        f"Act on {order_id}.", [flaky_refund, send_email, always_down, nested_decision]
    )
    return result


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def pick(call: str) -> str:
    return json.dumps({"call": call, "args": {"order_id": "A-1"}})


def test_agentic_function_retry_forms_build_a_step_policy() -> None:
    @agentic_function(retry=True)
    async def default(x: int) -> int:
        return x

    @agentic_function(retry=4)
    async def four(x: int) -> int:
        return x

    @agentic_function
    async def plain(x: int) -> int:
        return x

    assert getattr(default, AGENTIC_ATTR)["retry"].stop.stops[0].max_attempt_number == 3
    assert getattr(four, AGENTIC_ATTR)["retry"].stop.stops[0].max_attempt_number == 4
    assert getattr(plain, AGENTIC_ATTR)["retry"] is None


@pytest.mark.parametrize(
    ("retry", "error"),
    [("x", TypeError), (1.5, TypeError), (0, ValueError), (-2, ValueError)],
    ids=["text", "float", "zero", "negative"],
)
def test_agentic_function_retry_that_is_no_policy_is_refused_at_decoration(
    retry: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=r"retry=|attempts"):

        @agentic_function(retry=retry)  # type: ignore[arg-type]
        async def step(x: int) -> int:
            return x


async def test_a_retryable_step_runs_again_until_it_succeeds() -> None:
    store = MemoryStore()
    eng = Engine(model=ScriptedModel([pick("flaky_refund")]), store=store)

    run = await eng.run(act, "A-1", run_id="r1")

    assert run.status == "completed"
    assert run.result == "refunded A-1"
    assert CALLS == {"flaky_refund": 3}
    assert run.retries == {"step": 2}
    ledger = await eng.retries("r1")
    assert [(e["layer"], e["attempt"], e["kind"]) for e in ledger] == [
        ("step", 2, "ConnectionError"),
        ("step", 3, "ConnectionError"),
    ]
    trace = await eng.trace("r1")
    assert trace is not None
    retries = [n for n in trace["nodes"] if n["kind"] == "retry"]
    assert [(n["data"]["layer"], n["status"]) for n in retries] == [
        ("step", "error"),
        ("step", "ok"),
    ]


async def test_a_non_retryable_step_is_never_retried() -> None:
    eng = Engine(model=ScriptedModel([pick("send_email")]), store=MemoryStore())

    run = await eng.run(act, "A-1", run_id="r1")

    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "ConnectionError"
    assert CALLS == {"send_email": 1}
    assert run.retries == {}


async def test_a_step_policy_that_runs_out_fails_the_run_with_the_last_error() -> None:
    eng = Engine(model=ScriptedModel([pick("always_down")]), store=MemoryStore())

    run = await eng.run(act, "A-1")

    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "TimeoutError"
    assert CALLS == {"always_down": 5}


async def test_a_step_policy_never_retries_a_decision_error() -> None:
    model = ScriptedModel([pick("nested_decision"), "?", "??"])
    eng = Engine(model=model, store=MemoryStore())

    run = await eng.run(act, "A-1")

    assert run.status == "suspended"
    assert CALLS == {"nested_decision": 1}


async def test_step_retries_fire_on_retry_without_an_engine() -> None:
    events: list[RetryEvent] = []
    runtime = Runtime(model=ScriptedModel([pick("flaky_refund")]))

    result = await runtime.exec("Act.", choices=[flaky_refund], on_retry=events.append)

    assert result == "refunded A-1"
    assert [(e.layer, e.attempt) for e in events] == [("step", 2), ("step", 3)]


async def test_resume_of_a_failed_run_does_not_redo_a_step_that_succeeded_on_retry() -> None:
    store = MemoryStore()
    model = ScriptedModel([pick("flaky_refund"), pick("send_email")])

    @agentic_function
    async def refund_then_email(order_id: str, runtime: Runtime | None = None) -> list[str]:
        first: str = await decision.make("Refund?", [flaky_refund])
        second: str = await decision.make("Email?", [send_email])
        return [first, second]

    eng = Engine(model=model, store=store)
    run = await eng.run(refund_then_email, "A-1", run_id="r1")
    assert run.status == "failed"

    resumed = await Engine(model=ScriptedModel([]), store=store).resume(
        "r1", flow=refund_then_email
    )

    assert resumed.status == "failed"  # send_email still fails, and runs once more
    assert CALLS == {"flaky_refund": 3, "send_email": 2}
    assert resumed.retries == {"step": 2}


async def test_idempotency_key_is_the_same_on_every_attempt_of_a_step() -> None:
    keys: list[str] = []

    @agentic_function(retry=step_policy(attempts=3, sleep=no_wait))
    async def charge(amount: float) -> str:
        """Charge the card."""
        keys.append(idempotency_key())
        if len(keys) < 3:
            raise ConnectionError("the payment provider dropped the connection")
        return "charged"

    @agentic_function
    async def pay(ticket: str, runtime: Runtime | None = None) -> str:
        result: str = await decision.make("Pay?", [charge])
        return result

    model = ScriptedModel([json.dumps({"call": "charge", "args": {"amount": 5.0}})])
    run = await Engine(model=model, store=MemoryStore()).run(pay, "t", run_id="k1")

    assert run.status == "completed"
    assert len(keys) == 3
    assert len(set(keys)) == 1  # one key: the side effect of a retried step lands once
    assert keys[0].startswith("k1:")
