"""Decisions against llama-cpp-python's server and llama-server: enforced and text picks.

The tiny model's picks are random; what is asserted is the engine's part: every decision
ends with a valid pick or a :class:`~engine.DecisionError` of a true kind, never with a
provider error the engine's request caused, and the trace says how the pick was asked for.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from realserver_support import (
    RealServer,
    check_decision_error,
    decision_nodes,
    model_calls,
)

from engine import BadRequestError, DecisionError, Runtime, decision
from engine.models import Message, ModelSettings, OpenAIModel, Request

#: The modes each server takes (tools/realserver/README.md): its own first.
TAKES = {
    "llama-cpp-python": ("json_object", "tool"),
    "llama-server": ("json_schema", "json_object"),
}
PROMPT = "A parcel arrived broken; the customer paid 40 EUR. Pick the next step."
TRIES = 8


def menu(done: list[dict[str, Any]]) -> dict[str, Any]:
    """A menu of three options whose handlers record the arguments they ran with."""

    async def refund(amount: float, reason: str) -> str:
        """Refund the customer."""
        done.append({"call": "refund", "amount": amount, "reason": reason})
        return "refund"

    async def escalate(summary: str, urgent: bool = False) -> str:
        """Hand the ticket to a human."""
        done.append({"call": "escalate", "summary": summary, "urgent": urgent})
        return "escalate"

    return {"refund": refund, "escalate": escalate, "close": "CLOSE"}


async def decide_many(runtime: Runtime, **kwargs: Any) -> tuple[list[str], list[DecisionError]]:
    """Make :data:`TRIES` decisions; return the picks made and the decision errors met."""
    picks: list[str] = []
    errors: list[DecisionError] = []
    done: list[dict[str, Any]] = []
    for n in range(TRIES):
        try:
            picks.append(
                await decision.make(f"Ticket {n}. {PROMPT}", menu(done), runtime=runtime, **kwargs)
            )
        except DecisionError as exc:
            check_decision_error(exc)
            errors.append(exc)
    # A pick of a function option ran it, with arguments of the declared types.
    assert len(done) == sum(p != "CLOSE" for p in picks)
    for call in done:
        if call["call"] == "refund":
            assert isinstance(call["amount"], float)
            assert isinstance(call["reason"], str)
    return picks, errors


@pytest.mark.parametrize("which", [0, 1])
async def test_enforced_picks_in_each_mode_the_server_takes(server: RealServer, which: int) -> None:
    mode = TAKES[server.name][which]
    model = OpenAIModel("tiny", base_url=server.url, enforce=mode)
    async with model:
        runtime = Runtime(model)
        picks, errors = await decide_many(runtime)

    # The server's grammar holds the reply to the menu: picks are made.
    assert picks, [e.message for e in errors]
    assert {n["data"]["enforcement"] for n in decision_nodes(runtime)} == {mode}
    assert len(picks) + len(errors) == TRIES


async def test_a_mode_the_server_refuses_is_a_bad_request_at_once(
    llama_cpp_python: RealServer,
) -> None:
    # llama-cpp-python answers json_schema with an HTTP 500 holding its validation error:
    # a request the server will never take, so no transport retry (they took 8.5 s).
    model = OpenAIModel("tiny", base_url=llama_cpp_python.url, enforce="json_schema")
    async with model:
        # The SDK's import and client first, so the time below is the decision's own.
        await model.complete(Request(messages=[Message.of("user", "Hi.")], max_tokens=1))
        started = time.monotonic()
        with pytest.raises(BadRequestError) as caught:
            await decision.make(PROMPT, menu([]), runtime=Runtime(model))
        elapsed = time.monotonic() - started

    assert elapsed < 3, elapsed  # transport retries would back off for seconds more
    assert "enforce='auto'" in str(caught.value)


async def test_auto_finds_each_servers_mode_at_its_first_refusal(server: RealServer) -> None:
    model = OpenAIModel("tiny", base_url=server.url, enforce="auto")
    async with model:
        runtime = Runtime(model)
        started = time.monotonic()
        picks, errors = await decide_many(runtime)
        elapsed = time.monotonic() - started

    assert picks, [e.message for e in errors]
    # llama-cpp-python's refusal of json_schema (an HTTP 500 that is a validation error) is
    # no transport failure: it is not retried, and the next mode is asked at once.
    assert elapsed < 30
    modes = [n["data"]["enforcement"] for n in decision_nodes(runtime)]
    assert modes == [server.mode] * TRIES
    assert all(n["status"] == "ok" for n in model_calls(runtime))


async def test_text_picks_with_bounded_replies(server: RealServer) -> None:
    settings = ModelSettings(max_tokens=48, temperature=1.0)
    async with OpenAIModel("tiny", base_url=server.url, enforce="text") as model:
        runtime = Runtime(model, settings=settings)
        picks, errors = await decide_many(runtime)

    assert len(picks) + len(errors) == TRIES
    assert {n["data"]["enforcement"] for n in decision_nodes(runtime)} == {"text"}
    calls = model_calls(runtime)
    assert calls
    for call in calls:
        assert call["data"]["settings"] == {"max_tokens": 48, "temperature": 1.0}
        assert call["usage"]["output_tokens"] <= 48


async def test_a_long_bad_reply_never_overflows_its_repick(llama_server: RealServer) -> None:
    # The case: a reply that ran to 3,600 tokens, sent back whole with the menu,
    # overflowed the 4,096-token context (an HTTP 400, the run failed). A re-pick sends
    # its head and its tail (1,500 characters, one token each here) instead.
    async with OpenAIModel("tiny", base_url=llama_server.url, enforce="text") as model:
        runtime = Runtime(model, settings=ModelSettings(max_tokens=3600, temperature=0.0, seed=1))
        with pytest.raises(DecisionError) as caught:
            await decision.make(PROMPT, menu([]), runtime=runtime)

    check_decision_error(caught.value)
    first, repick = model_calls(runtime)
    assert (first["status"], repick["status"]) == ("ok", "ok")
    assert first["usage"]["output_tokens"] > 3000
    resent = repick["usage"]["input_tokens"] - first["usage"]["input_tokens"]
    assert resent < 2500, (first["usage"], repick["usage"])


async def test_per_call_settings_override_the_models(server: RealServer) -> None:
    model = OpenAIModel(
        "tiny", base_url=server.url, enforce="text", settings=ModelSettings(max_tokens=200)
    )
    async with model:
        runtime = Runtime(model, settings=ModelSettings(temperature=0.0, seed=7))
        replies = []
        for _ in range(2):
            try:
                await decision.make(
                    PROMPT,
                    menu([]),
                    runtime=runtime,
                    max_retries=0,
                    settings=ModelSettings(max_tokens=12),
                )
            except DecisionError as exc:
                check_decision_error(exc)
                replies.append(exc.replies[0])

    calls = model_calls(runtime)
    assert [c["data"]["settings"] for c in calls] == [
        {"max_tokens": 12, "temperature": 0.0, "seed": 7}
    ] * 2
    assert all(c["usage"]["output_tokens"] <= 12 for c in calls)
    # Temperature 0 and a seed reached the server: the same request, the same reply.
    if len(replies) == 2:
        assert replies[0] == replies[1]
