"""docs/decisions.md §8: re-pick in the same conversation, and DecisionError."""

from __future__ import annotations

import json
import pickle
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from engine import DecisionError, EngineError, RetryEvent, Runtime, decision
from engine.models import Request, Response, ScriptedModel, TextBlock, Usage

Entry = Callable[..., Awaitable[Any]]

OPTIONS: dict[str, object] = {"approve": "APPROVED", "reject": "REJECTED"}
MENU = decision.render_options(OPTIONS)


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def via_make(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await decision.make("Pick one.", options, runtime=runtime, **kwargs)


async def via_exec(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await runtime.exec("Review the change.", choices=options, **kwargs)


ENTRIES = [pytest.param(via_make, id="make"), pytest.param(via_exec, id="exec")]


class CutOffModel:
    """A model whose replies come with a finish reason, to report truncation."""

    name = "cut-off"

    def __init__(self, replies: list[tuple[str, str]]) -> None:
        self.replies = replies
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Response:
        self.requests.append(request)
        text, reason = self.replies[len(self.requests) - 1]
        return Response(text=text, finish_reason=reason, usage=Usage(), model=self.name)


# The conversation ---------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
async def test_repick_continues_the_same_conversation(entry: Entry) -> None:
    model = ScriptedModel(['{"call": "merge"}', pick("approve")])

    assert await entry(Runtime(model), OPTIONS) == "APPROVED"

    first, second = model.requests
    assert second.messages[: len(first.messages)] == first.messages
    failed, turn = second.messages[len(first.messages) :]
    assert (failed.role, failed.text) == ("assistant", '{"call": "merge"}')
    assert turn.role == "user"
    assert "'merge' is not an option" in turn.text
    assert "approve, reject" in turn.text
    assert MENU in turn.text
    assert "JSON only" in turn.text
    assert "Call:" in turn.text


async def test_repick_keeps_the_original_request_blocks() -> None:
    model = ScriptedModel(["hmm", pick("reject")])

    await Runtime(model).exec([TextBlock(text="a"), TextBlock(text="b")], choices=OPTIONS)

    assert model.requests[1].messages[0] == model.requests[0].messages[0]
    assert len(model.requests[1].messages[0].content) == 3


async def test_repick_conversation_grows_with_each_attempt() -> None:
    model = ScriptedModel(["one", "two", pick("approve")])

    await decision.make("Pick one.", OPTIONS, runtime=Runtime(model), max_retries=2)

    roles = [m.role for m in model.requests[2].messages]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert [m.text for m in model.requests[2].messages if m.role == "assistant"] == ["one", "two"]


async def test_repick_not_asked_when_first_pick_is_valid() -> None:
    events: list[RetryEvent] = []
    model = ScriptedModel([pick("approve")])

    await decision.make("Pick one.", OPTIONS, runtime=Runtime(model), on_retry=events.append)

    assert (model.calls, events) == (1, [])


# on_retry -----------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
async def test_repick_fires_on_retry_per_repick_with_the_kind(entry: Entry) -> None:
    events: list[RetryEvent] = []
    model = ScriptedModel(["prose", '{"call": "merge"}', pick("approve")])

    result = await entry(Runtime(model), OPTIONS, max_retries=2, on_retry=events.append)

    assert result == "APPROVED"
    assert [(e.layer, e.attempt, e.kind) for e in events] == [
        ("parse", 1, "no_action"),
        ("parse", 2, "unknown_call"),
    ]
    assert "approve, reject" in events[1].message


async def test_repick_awaits_an_async_on_retry() -> None:
    kinds: list[str] = []

    async def on_retry(event: RetryEvent) -> None:
        kinds.append(event.kind)

    model = ScriptedModel(["prose", pick("approve")])

    await decision.make("Pick one.", OPTIONS, runtime=Runtime(model), on_retry=on_retry)

    assert kinds == ["no_action"]


async def test_repick_on_retry_not_fired_after_the_last_attempt() -> None:
    events: list[RetryEvent] = []
    model = ScriptedModel(["a", "b"])

    with pytest.raises(DecisionError):
        await decision.make("Pick one.", OPTIONS, runtime=Runtime(model), on_retry=events.append)

    assert len(events) == 1


# DecisionError ------------------------------------------------------------------------------


async def fail(replies: list[str], *, options: object = OPTIONS, retries: int = 1) -> DecisionError:
    model = ScriptedModel(replies)
    with pytest.raises(DecisionError) as info:
        await decision.make("Pick one.", options, runtime=Runtime(model), max_retries=retries)
    return info.value


async def test_decision_error_is_a_value_error_and_an_engine_error() -> None:
    err = await fail(["a", "b"])

    assert isinstance(err, ValueError)
    assert isinstance(err, EngineError)
    assert decision.DecisionError is DecisionError


@pytest.mark.parametrize(("retries", "attempts"), [(0, 1), (1, 2), (2, 3)], ids=["0", "1", "2"])
async def test_decision_error_message_starts_with_the_attempt_count(
    retries: int, attempts: int
) -> None:
    err = await fail(["prose"] * attempts, retries=retries)

    assert err.attempts == attempts
    assert str(err).startswith(f"decision failed after {attempts} attempt(s)")
    assert err.message.startswith(f"decision failed after {attempts} attempt(s)")


async def test_decision_error_names_the_last_kind_and_its_message() -> None:
    err = await fail(["prose", '{"call": "merge"}'])

    assert err.kind == "unknown_call"
    assert "unknown_call" in err.message
    assert "approve, reject" in err.message


async def test_decision_error_names_the_field_path() -> None:
    options = {"plan": ("Plan.", {"steps": [{"action": str}]})}

    err = await fail([pick("plan", steps=[{"action": 1}])], options=options, retries=0)

    assert err.kind == "type_mismatch"
    assert "steps[0].action" in str(err)


async def test_decision_error_keeps_every_raw_reply_and_the_head_of_the_last() -> None:
    last = "I cannot decide. " + "x" * 5000
    err = await fail(["first", last])

    assert err.replies == ["first", last]
    assert last.startswith(err.reply)
    assert 0 < len(err.reply) < len(last)
    assert err.reply in err.message
    assert last not in err.message


async def test_decision_error_carries_the_offered_options() -> None:
    err = await fail(["a", "b"])

    assert err.options == ["approve", "reject"]


# Exceptions from a picked function ----------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "exc",
    [ValueError("bad input"), KeyError("k"), DecisionError("no_action", "inner")],
    ids=["value-error", "key-error", "decision-error"],
)
async def test_repick_picked_function_exception_propagates_unchanged(
    entry: Entry, exc: Exception
) -> None:
    events: list[RetryEvent] = []

    async def explode() -> None:
        raise exc

    model = ScriptedModel([pick("explode"), pick("explode")])

    with pytest.raises(type(exc)) as info:
        await entry(Runtime(model), [explode], on_retry=events.append)

    assert info.value is exc
    assert (model.calls, events) == (1, [])


async def test_repick_sync_picked_function_exception_propagates_unchanged() -> None:
    exc = RuntimeError("disk full")

    def save() -> None:
        raise exc

    model = ScriptedModel([pick("save")])

    with pytest.raises(RuntimeError) as info:
        await decision.make("Pick one.", [save], runtime=Runtime(model))

    assert info.value is exc


# Truncated replies --------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["length", "max_tokens"])
async def test_repick_truncated_reply_is_kind_truncated(reason: str) -> None:
    model = CutOffModel([('{"call": "approve", "ar', reason)])

    with pytest.raises(DecisionError) as info:
        await decision.make("Pick one.", OPTIONS, runtime=Runtime(model), max_retries=0)

    assert info.value.kind == "truncated"
    assert "truncated" in str(info.value)


async def test_repick_after_truncation_says_the_reply_was_cut_off() -> None:
    events: list[RetryEvent] = []
    model = CutOffModel([('{"call": "approve", "ar', "length"), (pick("reject"), "stop")])

    result = await Runtime(model).exec("Review.", choices=OPTIONS, on_retry=events.append)

    assert result == "REJECTED"
    assert [e.kind for e in events] == ["truncated"]
    assert "cut off" in model.requests[1].messages[-1].text
    assert MENU in model.requests[1].messages[-1].text


async def test_repick_truncated_reply_never_uses_an_earlier_mentioned_pick() -> None:
    reply = 'Not {"call": "reject"}, I pick {"call": "approve", "args": {"no'
    model = CutOffModel([(reply, "length")])

    with pytest.raises(DecisionError) as info:
        await decision.make("Pick one.", OPTIONS, runtime=Runtime(model), max_retries=0)

    assert info.value.kind == "truncated"


async def test_decision_error_survives_pickling() -> None:
    err = await fail(["prose", '{"call": "merge"}'])

    copy = pickle.loads(pickle.dumps(err))

    assert (type(copy), str(copy), copy.kind, copy.replies, copy.attempts, copy.reply) == (
        DecisionError,
        str(err),
        "unknown_call",
        err.replies,
        2,
        err.reply,
    )
