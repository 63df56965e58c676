"""Enforced picks in the runtime: when a decision asks the provider to constrain its reply."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine import DecisionError, Runtime, decision
from engine.models import PickSchema, Request, Response, ScriptedModel


class Enforcing:
    """A model that says it can enforce, and answers from a script."""

    name = "enforcing"

    def __init__(self, replies: list[str], enforcement: str = "json_schema") -> None:
        self.enforcement = enforcement
        self.replies = list(replies)
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Response:
        self.requests.append(request)
        text = self.replies.pop(0)
        finish = "length" if text.endswith("…") else "stop"
        return Response(text=text.rstrip("…"), finish_reason=finish)


async def refund(amount: float, note: str | None = None) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


OPTIONS: dict[str, Any] = {"refund": refund, "close": ("Close it.", {"why": str})}


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


def enforcement(runtime: Runtime) -> list[str]:
    return [n.data["enforcement"] for n in runtime.trace.find("decision")]


async def test_enforced_pick_sends_the_menu_schema_and_records_it() -> None:
    model = Enforcing([pick("refund", amount=3.0)])
    runtime = Runtime(model)

    result = await decision.make("Pick.", OPTIONS, runtime=runtime)

    assert result == "refunded 3.0"
    enforce = model.requests[0].enforce
    assert isinstance(enforce, PickSchema)
    assert enforce.strict_schema is not None
    branches = enforce.json_schema["properties"][enforce.key]["anyOf"]
    assert [b["properties"]["call"]["const"] for b in branches] == ["refund", "close"]
    assert enforcement(runtime) == ["json_schema"]


async def test_enforced_pick_on_exec_with_choices() -> None:
    model = Enforcing([pick("close", why="done")], enforcement="tool")
    runtime = Runtime(model)

    assert await runtime.exec("Work, then pick.", choices=OPTIONS) == {
        "decision": "close",
        "why": "done",
    }
    assert model.requests[0].enforce is not None
    assert enforcement(runtime) == ["tool"]


async def test_enforced_pick_is_text_for_models_that_cannot() -> None:
    model = ScriptedModel([pick("close", why="x")])
    runtime = Runtime(model)

    await decision.make("Pick.", OPTIONS, runtime=runtime)

    assert model.requests[0].enforce is None
    assert enforcement(runtime) == ["text"]


async def test_enforced_pick_off_never_enforces() -> None:
    model = Enforcing([pick("close", why="x")])
    runtime = Runtime(model, enforce="off")

    await decision.make("Pick.", OPTIONS, runtime=runtime)

    assert model.requests[0].enforce is None
    assert enforcement(runtime) == ["text"]


async def test_enforced_pick_on_with_a_model_that_cannot_fails_before_any_call() -> None:
    model = ScriptedModel([])

    with pytest.raises(ValueError, match="cannot constrain its reply"):
        await decision.make("Pick.", OPTIONS, runtime=Runtime(model, enforce="on"))

    assert model.calls == 0


def test_enforced_pick_bad_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="enforce must be"):
        Runtime(ScriptedModel([]), enforce="always")  # type: ignore[arg-type]


async def test_enforced_pick_yields_to_a_callers_response_format() -> None:
    model = Enforcing([pick("close", why="x")])
    fmt = {"type": "json_object"}

    await Runtime(model).exec("Pick.", choices=OPTIONS, response_format=fmt)

    assert model.requests[0].enforce is None
    assert model.requests[0].response_format == fmt


async def test_enforced_pick_forced_tool_mode_stands_aside_when_tools_are_offered() -> None:
    async def lookup(key: str) -> str:
        """Look a key up."""
        return key

    model = Enforcing([pick("close", why="x")], enforcement="tool")
    runtime = Runtime(model)

    await runtime.exec("Go.", choices=OPTIONS, tools=[lookup])

    assert model.requests[0].enforce is None
    assert enforcement(runtime) == ["text"]


async def test_enforced_pick_is_validated_and_repicked_like_any_reply() -> None:
    model = Enforcing([pick("refund", amount="lots"), pick("refund", amount=1.0)])
    events: list[str] = []

    result = await decision.make(
        "Pick.", OPTIONS, runtime=Runtime(model), on_retry=lambda e: events.append(e.kind)
    )

    assert result == "refunded 1.0"
    assert events == ["type_mismatch"]
    assert model.requests[1].enforce is model.requests[0].enforce


async def test_enforced_pick_truncated_reply_is_its_own_failure_kind() -> None:
    model = Enforcing(['{"call": "refund", "args": {"amo…', '{"call": "close", "args": {"w…'])

    with pytest.raises(DecisionError) as info:
        await decision.make("Pick.", OPTIONS, runtime=Runtime(model))

    assert info.value.kind == "truncated"
