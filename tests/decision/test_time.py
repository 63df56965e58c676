"""docs/decisions.md §10: ``timeout_s`` is one deadline over the turn and every re-pick."""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from engine import DeadlineExceeded, DecisionError, EngineError, Runtime, decision
from engine.models import Request, ScriptedModel

Entry = Callable[..., Awaitable[Any]]

OPTIONS: dict[str, object] = {"approve": "APPROVED", "reject": "REJECTED"}
APPROVE = json.dumps({"call": "approve"})


async def via_make(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await decision.make("Pick one.", options, runtime=runtime, **kwargs)


async def via_exec(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await runtime.exec("Work, then pick.", choices=options, **kwargs)


ENTRIES = [pytest.param(via_make, id="make"), pytest.param(via_exec, id="exec")]


class SlowModel:
    """Answer each call after ``delay`` seconds, noting calls that were cancelled."""

    def __init__(self, delay: float, reply: str) -> None:
        self.delay = delay
        self.reply = reply
        self.cancelled = 0

    async def __call__(self, request: Request) -> str:
        try:
            await anyio.sleep(self.delay)
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        return self.reply


@pytest.mark.parametrize("entry", ENTRIES)
async def test_time_slow_model_raises_deadline_exceeded_within_timeout(entry: Entry) -> None:
    slow = SlowModel(30, APPROVE)
    model = ScriptedModel(slow)

    started = time.perf_counter()
    with anyio.fail_after(5), pytest.raises(DeadlineExceeded, match=r"timeout_s=0\.05"):
        await entry(Runtime(model), OPTIONS, timeout_s=0.05)

    assert time.perf_counter() - started < 1
    assert slow.cancelled == 1


async def test_time_deadline_exceeded_is_a_timeout_error() -> None:
    assert issubclass(DeadlineExceeded, TimeoutError)
    assert issubclass(DeadlineExceeded, EngineError)


@pytest.mark.parametrize("entry", ENTRIES)
async def test_time_one_deadline_spans_every_repick(entry: Entry) -> None:
    # Each reply alone is well inside the budget; together they are not. A fresh window per
    # re-pick would end in a DecisionError after all six attempts instead.
    model = ScriptedModel(SlowModel(0.06, "no pick here"))

    started = time.perf_counter()
    with anyio.fail_after(5), pytest.raises(DeadlineExceeded):
        await entry(Runtime(model), OPTIONS, timeout_s=0.15, max_retries=5)

    assert time.perf_counter() - started < 0.5
    assert 2 <= model.calls <= 3


@pytest.mark.parametrize("entry", ENTRIES)
async def test_time_reply_in_time_is_used(entry: Entry) -> None:
    model = ScriptedModel(SlowModel(0.01, APPROVE))

    with anyio.fail_after(5):
        assert await entry(Runtime(model), OPTIONS, timeout_s=2) == "APPROVED"


@pytest.mark.parametrize("entry", ENTRIES)
async def test_time_repick_in_time_is_used(entry: Entry) -> None:
    replies = iter(["no pick", APPROVE])

    async def reply(request: Request) -> str:
        await anyio.sleep(0.01)
        return next(replies)

    with anyio.fail_after(5):
        assert await entry(Runtime(ScriptedModel(reply)), OPTIONS, timeout_s=2) == "APPROVED"


async def test_time_decision_error_wins_when_attempts_end_in_time() -> None:
    model = ScriptedModel(SlowModel(0.001, "no pick"))

    with anyio.fail_after(5), pytest.raises(DecisionError):
        await decision.make("Pick.", OPTIONS, runtime=Runtime(model), timeout_s=2)


async def test_time_exec_text_turn_has_the_same_deadline() -> None:
    slow = SlowModel(30, "text")

    with anyio.fail_after(5), pytest.raises(DeadlineExceeded):
        await Runtime(ScriptedModel(slow)).exec("Write.", timeout_s=0.05)

    assert slow.cancelled == 1


async def test_time_exec_text_turn_in_time_returns_the_text() -> None:
    with anyio.fail_after(5):
        text = await Runtime(ScriptedModel(SlowModel(0.01, "done"))).exec("Go.", timeout_s=2)

    assert text == "done"


@pytest.mark.parametrize("entry", ENTRIES)
async def test_time_outer_cancellation_is_not_turned_into_a_timeout(entry: Entry) -> None:
    model = ScriptedModel(SlowModel(30, APPROVE))

    with anyio.fail_after(5), anyio.move_on_after(0.05) as outer:
        await entry(Runtime(model), OPTIONS, timeout_s=10)

    assert outer.cancelled_caught


async def test_time_without_timeout_waits_for_the_model() -> None:
    model = ScriptedModel(SlowModel(0.05, APPROVE))

    with anyio.fail_after(5):
        assert await decision.make("Pick.", OPTIONS, runtime=Runtime(model)) == "APPROVED"


def test_time_deadline_exceeded_survives_pickling() -> None:
    err = DeadlineExceeded(0.5, where="decision")

    copy = pickle.loads(pickle.dumps(err))

    assert (type(copy), str(copy), copy.timeout_s, copy.where) == (
        DeadlineExceeded,
        str(err),
        0.5,
        "decision",
    )
