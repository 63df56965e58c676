"""Enforced picks in each server's own form, through the official openai SDK.

``OpenAIModel(enforce=...)`` picks the form: ``json_schema``, ``json_object`` (with a
schema), ``tool`` (a forced named tool), ``text``, or ``auto``, which moves on at a
server's first refusal of a mode and remembers what it accepts. The servers are
emulations of llama-cpp-python's and llama.cpp's (``real_servers.py``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from provider_server import ProviderServer, Recorded, Reply
from real_servers import LlamaCppPython, LlamaServer, completion

from engine import BadRequestError, DecisionError, Runtime, decision, transport_policy
from engine.models import OpenAIModel, Request, model_from_string

PICK = {"call": "refund", "args": {"amount": 12.5}}


async def refund(amount: float) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


OPTIONS = {"refund": refund, "close": "CLOSED"}


class Sleeps:
    """An injected transport sleep: records each wait, never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def cpp() -> Iterator[tuple[ProviderServer, LlamaCppPython]]:
    emulation = LlamaCppPython(PICK)
    server = ProviderServer(emulation).start()
    yield server, emulation
    server.close()


@pytest.fixture
def llama() -> Iterator[tuple[ProviderServer, LlamaServer]]:
    emulation = LlamaServer(PICK)
    server = ProviderServer(emulation).start()
    yield server, emulation
    server.close()


@pytest.fixture
async def closing() -> AsyncIterator[list[OpenAIModel]]:
    models: list[OpenAIModel] = []
    yield models
    for model in models:
        await model.aclose()


def make(server: ProviderServer, models: list[OpenAIModel], **kw: Any) -> OpenAIModel:
    # A name of its own per test: what auto learns is kept per URL and name for the process,
    # and a port may serve another test's server later.
    name = kw.pop("name", None) or f"tiny-{uuid.uuid4().hex[:8]}"
    model = OpenAIModel(name, base_url=f"{server.url}/v1", **kw)
    models.append(model)
    return model


async def pick_on(model: OpenAIModel, sleeps: Sleeps) -> tuple[object, dict[str, Any]]:
    runtime = Runtime(model, transport=transport_policy(sleep=sleeps))
    result = await decision.make("Refund or close?", OPTIONS, runtime=runtime)
    return result, runtime.trace.to_dict()["nodes"][0]["data"]


def sent(server: ProviderServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests]


# -- one mode, as set ------------------------------------------------------------------------


async def test_enforcement_json_object_sends_the_schema_llama_cpp_python_takes(
    cpp: tuple[ProviderServer, LlamaCppPython], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, _ = cpp
    model = make(server, closing, enforce="json_object")

    result, data = await pick_on(model, sleeps)

    assert result == "refunded 12.5"
    [body] = sent(server)
    fmt = body["response_format"]
    assert fmt["type"] == "json_object"
    assert fmt["schema"]["required"] == ["pick"]
    assert "tool_choice" not in body
    assert data["enforcement"] == "json_object"


async def test_enforcement_json_schema_refused_with_a_500_is_not_retried(
    cpp: tuple[ProviderServer, LlamaCppPython], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, _ = cpp
    model = make(server, closing, enforce="json_schema")

    with pytest.raises(BadRequestError) as caught:
        await pick_on(model, sleeps)

    assert len(server.requests) == 1  # a validation error: no transport retry, no SDK retry
    assert sleeps.waits == []
    message = str(caught.value)
    assert "request-validation error" in message
    assert "enforce='auto'" in message


async def test_enforcement_tool_forces_the_named_pick_tool(
    cpp: tuple[ProviderServer, LlamaCppPython], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, _ = cpp
    model = make(server, closing, enforce="tool")

    result, data = await pick_on(model, sleeps)

    assert result == "refunded 12.5"
    [body] = sent(server)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "pick"}}
    assert [t["function"]["name"] for t in body["tools"]] == ["pick"]
    assert "response_format" not in body
    assert data["enforcement"] == "tool"


async def test_enforcement_tool_a_server_that_ignores_the_name_is_read_as_text(
    llama: tuple[ProviderServer, LlamaServer], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, emulation = llama
    model = make(server, closing, enforce="tool")

    result, _ = await pick_on(model, sleeps)

    assert result == "refunded 12.5"
    assert emulation.modes == ["tool ignored"]


@pytest.mark.parametrize("enforce", ["text", False])
async def test_enforcement_text_sends_no_constraint(
    llama: tuple[ProviderServer, LlamaServer],
    closing: list[OpenAIModel],
    sleeps: Sleeps,
    enforce: object,
) -> None:
    server, emulation = llama
    emulation.text = json.dumps(PICK)
    model = make(server, closing, enforce=enforce)

    result, data = await pick_on(model, sleeps)

    assert result == "refunded 12.5"
    [body] = sent(server)
    assert "response_format" not in body
    assert "tool_choice" not in body
    assert data["enforcement"] == "text"
    assert model.enforcement is None


@pytest.mark.parametrize(
    ("enforce", "mode"),
    [(True, "json_schema"), ("json_schema", "json_schema"), ("json_object", "json_object")],
)
def test_enforcement_the_setting_names_the_mode(enforce: object, mode: str) -> None:
    model = OpenAIModel("tiny", base_url="http://127.0.0.1:1/v1", enforce=enforce)  # type: ignore[arg-type]

    assert model.enforcement == mode


def test_enforcement_default_is_json_schema_on_openai_and_text_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    assert OpenAIModel("gpt-4o-mini").enforcement == "json_schema"
    assert OpenAIModel("tiny", base_url="http://127.0.0.1:1/v1").enforcement is None


@pytest.mark.parametrize("bad", ["json", "strict", 1, "on"])
def test_enforcement_an_unknown_mode_is_a_value_error(bad: object) -> None:
    with pytest.raises(ValueError, match="enforce must be 'auto', 'json_schema'"):
        OpenAIModel("tiny", base_url="http://127.0.0.1:1/v1", enforce=bad)  # type: ignore[arg-type]


def test_enforcement_a_model_mode_on_the_runtime_says_where_it_belongs() -> None:
    with pytest.raises(ValueError, match=r"OpenAIModel\(enforce="):
        Runtime(OpenAIModel("tiny", base_url="http://127.0.0.1:1/v1"), enforce="json_object")  # type: ignore[arg-type]


# -- auto ------------------------------------------------------------------------------------


async def test_enforcement_auto_falls_back_at_the_first_refusal_and_remembers_it(
    cpp: tuple[ProviderServer, LlamaCppPython], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, emulation = cpp
    model = make(server, closing, enforce="auto")
    assert model.enforcement == "auto"
    name = model.model

    result, data = await pick_on(model, sleeps)

    assert result == "refunded 12.5"
    assert emulation.modes == ["refused", "json_object"]
    assert data["enforcement"] == "json_object"
    assert sleeps.waits == []
    # Remembered for the process: another model object at the same URL and name goes
    # straight to the mode the server takes.
    again = make(server, closing, enforce="auto", name=name)
    assert again.enforcement == "json_object"
    _, data = await pick_on(again, sleeps)
    assert emulation.modes == ["refused", "json_object", "json_object"]
    assert data["enforcement"] == "json_object"


async def test_enforcement_auto_remembers_per_model_name(
    cpp: tuple[ProviderServer, LlamaCppPython], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, emulation = cpp
    await pick_on(make(server, closing, enforce="auto"), sleeps)

    await pick_on(make(server, closing, enforce="auto"), sleeps)

    assert emulation.modes == ["refused", "json_object", "refused", "json_object"]


async def test_enforcement_auto_takes_json_schema_where_the_server_honours_it(
    llama: tuple[ProviderServer, LlamaServer], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, emulation = llama
    model = make(server, closing, enforce="auto")

    result, data = await pick_on(model, sleeps)

    assert result == "refunded 12.5"
    assert emulation.modes == ["json_schema"]
    assert data["enforcement"] == "json_schema"
    assert model.enforcement == "json_schema"


async def test_enforcement_auto_a_request_refused_in_every_mode_raises_and_remembers_nothing(
    closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    def too_long(recorded: Recorded) -> Reply:
        return Reply({"error": {"message": "the prompt is longer than the context"}}, 400)

    server = ProviderServer(too_long).start()
    try:
        model = make(server, closing, enforce="auto")
        with pytest.raises(BadRequestError, match="longer than the context"):
            await pick_on(model, sleeps)
        modes = [_mode_of(b) for b in sent(server)]
        assert modes == ["json_schema", "json_object", "tool", "text"]
        assert model.enforcement == "auto"  # nothing learnt: the mode was not the problem
    finally:
        server.close()


async def test_enforcement_auto_a_real_5xx_is_still_a_transport_failure(
    closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    replies = iter([Reply({"error": {"message": "overloaded"}}, 503)])

    def flaky(recorded: Recorded) -> Reply:
        return next(replies, Reply(completion(json.dumps({"pick": PICK}))))

    server = ProviderServer(flaky).start()
    try:
        model = make(server, closing, enforce="auto")
        result, data = await pick_on(model, sleeps)
    finally:
        server.close()

    assert result == "refunded 12.5"
    assert len(sleeps.waits) == 1  # retried once, in the same mode
    assert [_mode_of(b) for b in sent(server)] == ["json_schema", "json_schema"]
    assert data["enforcement"] == "json_schema"


def _mode_of(body: dict[str, Any]) -> str:
    if "tool_choice" in body:
        return "tool"
    fmt = body.get("response_format")
    return fmt["type"] if fmt else "text"


# -- exec with tools: enforced only on the closing pick ----------------------------------------


async def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


class ToolTurn:
    """A server that calls ``lookup`` first, then answers ``final``, then (re-pick) ``PICK``."""

    def __init__(self, final: str) -> None:
        self.final = final

    def __call__(self, recorded: Recorded) -> Reply:
        body = recorded.body
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply(completion(json.dumps({"pick": PICK})))
        if not any(m["role"] == "tool" for m in body["messages"]):
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"order_id": "A1"}'},
            }
            return Reply(completion(None, finish="tool_calls", tool_calls=[call]))
        return Reply(completion(self.final))


async def test_enforcement_exec_with_tools_calls_the_tools_then_enforces_the_re_pick(
    closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server = ProviderServer(ToolTurn("It shipped, so no refund is due.")).start()
    try:
        model = make(server, closing, enforce="json_schema")
        runtime = Runtime(model, transport=transport_policy(sleep=sleeps))
        result = await runtime.exec("Handle order A1.", choices=OPTIONS, tools=[lookup])
    finally:
        server.close()

    assert result == "refunded 12.5"
    first, second, repick = sent(server)
    assert "response_format" not in first  # the model is free to call its tools
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup"]
    assert "response_format" not in second
    assert repick["response_format"]["type"] == "json_schema"  # the closing pick
    assert runtime.trace.to_dict()["nodes"][0]["data"]["enforcement"] == "json_schema"


async def test_enforcement_exec_with_tools_a_good_closing_pick_needs_no_enforced_call(
    closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server = ProviderServer(ToolTurn(f"Shipped; refunding.\n{json.dumps(PICK)}")).start()
    try:
        model = make(server, closing, enforce="tool")
        runtime = Runtime(model, transport=transport_policy(sleep=sleeps))
        result = await runtime.exec("Handle order A1.", choices=OPTIONS, tools=[lookup])
    finally:
        server.close()

    assert result == "refunded 12.5"
    assert all("tool_choice" not in body for body in sent(server))
    assert runtime.trace.to_dict()["nodes"][0]["data"]["enforcement"] == "text"


async def test_enforcement_a_decision_failure_in_json_object_mode_reads_the_reply(
    cpp: tuple[ProviderServer, LlamaCppPython], closing: list[OpenAIModel], sleeps: Sleeps
) -> None:
    server, emulation = cpp
    emulation.pick = {"call": "reopen"}
    model = make(server, closing, enforce="json_object")

    with pytest.raises(DecisionError) as caught:
        await pick_on(model, sleeps)

    assert caught.value.kind == "unknown_call"
    assert caught.value.replies == ['{"call": "reopen"}', '{"call": "reopen"}']


async def test_enforcement_a_request_without_enforce_sends_nothing_of_it(
    cpp: tuple[ProviderServer, LlamaCppPython], closing: list[OpenAIModel]
) -> None:
    server, _ = cpp
    model = make(server, closing, enforce="auto")

    response = await model.complete(Request.model_validate({"messages": []}))

    assert response.enforcement is None
    assert "response_format" not in sent(server)[0]


# -- the model string (CLI --model) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "mode"),
    [
        ("enforce=auto", "auto"),
        ("enforce=json_object&max_tokens=64", "json_object"),
        ("max_tokens=64&enforce=tool", "tool"),
        ("enforce=true", "json_schema"),
        ("enforce=false", "text"),
        ("max_tokens=64", "text"),
    ],
)
def test_enforcement_a_model_string_sets_the_mode(query: str, mode: str) -> None:
    model = model_from_string(f"openai:tiny@http://127.0.0.1:8080/v1?{query}")

    assert isinstance(model, OpenAIModel)
    assert model.enforce == mode


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("openai:tiny@http://127.0.0.1:8080/v1?enforce=strict", "enforce must be"),
        ("anthropic:claude-x?enforce=tool", "an option of openai: models only"),
        ("simulated:1?enforce=auto", "an option of openai: models only"),
    ],
)
def test_enforcement_a_model_string_with_a_bad_mode_is_refused(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        model_from_string(spec)
