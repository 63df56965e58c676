"""OpenAIModel through the real openai SDK, against a local server speaking its protocol."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import openai
import pytest
from provider_server import ProviderServer, Reply

from engine import (
    AuthenticationError,
    BadRequestError,
    DeadlineExceeded,
    DecisionError,
    ModelError,
    ProviderUnavailableError,
    RateLimitError,
    RetryableModelError,
    Runtime,
    decision,
    transport_policy,
)
from engine.decision import DECISION_FINISH_INSTRUCTION
from engine.models import ImageBlock, Message, OpenAIModel, Request, TextBlock


def completion(
    content: str | None = "hello",
    *,
    finish: str = "stop",
    tool_calls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def error(status: int, message: str, **headers: str) -> Reply:
    return Reply({"error": {"message": message, "type": "x", "code": None}}, status, headers)


class Sleeps:
    """An injected transport sleep: records each wait, never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer().start()
    yield srv
    srv.close()


@pytest.fixture
async def model(server: ProviderServer) -> AsyncIterator[OpenAIModel]:
    async with OpenAIModel("gpt-test", base_url=f"{server.url}/v1", api_key="sk-test") as m:
        yield m


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def runtime(model: OpenAIModel, sleeps: Sleeps) -> Runtime:
    return Runtime(model, system="Be brief.", transport=transport_policy(sleep=sleeps))


async def test_openai_plain_reply(server: ProviderServer, model: OpenAIModel) -> None:
    server.queue(Reply(completion("Hi there.")))
    request = Request(messages=[Message.of("system", "Be brief."), Message.of("user", "Hello")])

    response = await model.complete(request)

    assert response.text == "Hi there."
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 3)
    assert response.model == "gpt-test"
    assert response.latency_s is not None
    assert response.latency_s > 0
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
    ]
    assert "tools" not in sent.body
    assert "response_format" not in sent.body


async def test_openai_images_and_max_tokens_on_the_wire(
    server: ProviderServer, model: OpenAIModel
) -> None:
    server.queue(Reply(completion("A cat.")))
    blocks = [TextBlock(text="What is it?"), ImageBlock(data="AAAA", media_type="image/jpeg")]
    request = Request(messages=[Message(role="user", content=blocks)], max_tokens=50)

    await model.complete(request)

    body = server.requests[0].body
    assert body["max_tokens"] == 50  # a local server: max_tokens, not max_completion_tokens
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "What is it?"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
    ]


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "status": "shipped"}


async def test_openai_tool_call_round_trip(server: ProviderServer, runtime: Runtime) -> None:
    server.queue(
        Reply(
            completion(
                None,
                finish="tool_calls",
                tool_calls=[tool_call("call_1", "lookup", {"order_id": 7})],
            )
        ),
        Reply(completion("It shipped.")),
    )

    text = await runtime.exec("Where is order 7?", tools=[lookup])

    assert text == "It shipped."
    first, second = (r.body for r in server.requests)
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look an order up.",
                "parameters": {
                    "type": "object",
                    "properties": {"order_id": {"type": "integer"}},
                    "required": ["order_id"],
                    "additionalProperties": False,
                },
            },
        }
    ]
    assistant, result = second["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [tool_call("call_1", "lookup", {"order_id": 7})]
    assert result == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"order_id":7,"status":"shipped"}',
    }


async def refund(amount: float, note: str | None = None) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


async def test_openai_json_schema_enforced_pick(server: ProviderServer, sleeps: Sleeps) -> None:
    pick = {"pick": {"call": "refund", "args": {"amount": 12.5, "note": None}}}
    server.queue(Reply(completion(json.dumps(pick))))
    options = {"refund": refund, "close": ("Close it.", {"why": str})}

    async with OpenAIModel("gpt-test", base_url=f"{server.url}/v1", api_key="k", enforce=True) as m:
        runtime = Runtime(m, transport=transport_policy(sleep=sleeps))
        result = await decision.make("Pick one.", options, runtime=runtime)

    assert result == "refunded 12.5"
    fmt = server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "pick"
    assert fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["pick"]
    assert [b["properties"]["call"]["enum"] for b in schema["properties"]["pick"]["anyOf"]] == [
        ["refund"],
        ["close"],
    ]
    [node] = runtime.trace.find("decision")
    assert node.data["enforcement"] == "json_schema"


async def test_openai_free_form_menu_is_enforced_non_strict(server: ProviderServer) -> None:
    async def store(payload: dict[str, Any]) -> str:
        """Store anything."""
        return "stored"

    server.queue(
        Reply(completion(json.dumps({"pick": {"call": "store", "args": {"payload": {}}}})))
    )

    async with OpenAIModel("gpt-test", base_url=f"{server.url}/v1", api_key="k", enforce=True) as m:
        assert await decision.make("Pick.", [store], runtime=Runtime(m)) == "stored"

    assert server.requests[0].body["response_format"]["json_schema"]["strict"] is False


async def test_openai_429_with_retry_after_then_success(
    server: ProviderServer, runtime: Runtime, sleeps: Sleeps
) -> None:
    server.queue(error(429, "Rate limit reached", **{"retry-after": "3"}), Reply(completion("ok")))

    assert await runtime.exec("Hi") == "ok"
    assert len(server.requests) == 2  # the SDK's own retries are off
    assert len(sleeps.waits) == 1
    assert sleeps.waits[0] >= 3.0
    [retry] = runtime.trace.find("retry")
    assert retry.data["after"] == "RateLimitError"


async def test_openai_500_then_success(
    server: ProviderServer, runtime: Runtime, sleeps: Sleeps
) -> None:
    server.queue(error(500, "Internal error"), Reply(completion("ok")))

    assert await runtime.exec("Hi") == "ok"
    assert len(server.requests) == 2
    assert len(sleeps.waits) == 1


async def test_openai_hung_response_is_cut_by_the_deadline(
    server: ProviderServer, runtime: Runtime
) -> None:
    server.queue(Reply(hang=True))

    with anyio.fail_after(5), pytest.raises(DeadlineExceeded):
        await runtime.exec("Hi", timeout_s=0.3)


async def test_openai_truncated_reply(server: ProviderServer, runtime: Runtime) -> None:
    server.queue(Reply(completion('{"call": "refund", "args": {"amo', finish="length")))

    with pytest.raises(DecisionError) as info:
        await decision.make("Pick.", [refund], runtime=runtime, max_retries=0)

    assert info.value.kind == "truncated"


async def test_openai_auth_failure_is_not_retried(
    server: ProviderServer, runtime: Runtime, sleeps: Sleeps
) -> None:
    server.queue(error(401, "Incorrect API key provided"))

    with pytest.raises(AuthenticationError, match="refused the credentials") as info:
        await runtime.exec("Hi")

    assert len(server.requests) == 1
    assert sleeps.waits == []
    assert isinstance(info.value.__cause__, openai.AuthenticationError)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(400, BadRequestError, id="400"),
        pytest.param(422, BadRequestError, id="422"),
        pytest.param(403, AuthenticationError, id="403"),
        pytest.param(503, ProviderUnavailableError, id="503"),
        pytest.param(429, RateLimitError, id="429"),
    ],
)
async def test_openai_statuses_become_engine_errors(
    server: ProviderServer, model: OpenAIModel, status: int, expected: type[Exception]
) -> None:
    server.queue(error(status, "nope"))

    with pytest.raises(expected):
        await model.complete(Request(messages=[Message.of("user", "Hi")]))


async def test_openai_unreachable_server_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused

        async with OpenAIModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k") as m:
            with pytest.raises(ProviderUnavailableError, match="could not reach openai"):
                await m.complete(Request(messages=[Message.of("user", "Hi")]))


async def test_openai_missing_key_for_openai_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIModel("gpt-4o-mini")

    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        await model.complete(Request(messages=[Message.of("user", "Hi")]))


async def test_openai_key_and_url_from_the_environment(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    server.queue(Reply(completion("from env")))

    async with OpenAIModel("gpt-test") as m:
        response = await m.complete(Request(messages=[Message.of("user", "Hi")]))

    assert response.text == "from env"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"


async def test_openai_given_client_has_its_retries_turned_off(server: ProviderServer) -> None:
    server.queue(error(500, "down"))
    client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=5)

    try:
        model = OpenAIModel("gpt-test", client=client)
        with pytest.raises(ProviderUnavailableError):
            await model.complete(Request(messages=[Message.of("user", "Hi")]))
        await model.aclose()
    finally:
        await client.close()

    assert len(server.requests) == 1


def test_openai_enforcement_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    assert OpenAIModel("gpt-4o-mini").enforcement == "json_schema"
    assert OpenAIModel("llama", base_url="http://localhost:11434/v1").enforcement is None
    assert OpenAIModel("llama", base_url="http://x/v1", enforce=True).enforcement == "json_schema"
    assert OpenAIModel("gpt-4o-mini", enforce=False).enforcement is None


# -- keys, URLs and client set-up ------------------------------------------------------------


async def test_openai_empty_key_is_a_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        await Runtime(OpenAIModel("gpt-4o-mini")).exec("hi")


async def test_openai_empty_key_for_a_local_server_sends_the_placeholder(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    server.queue(Reply(completion("ok")))

    async with OpenAIModel("gpt-test", base_url=f"{server.url}/v1", api_key="") as m:
        response = await m.complete(Request(messages=[Message.of("user", "Hi")]))

    assert response.text == "ok"
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


@pytest.mark.parametrize(
    "base_url",
    [
        pytest.param("http://127.0.0.1:99999/v1", id="port-out-of-range"),
        pytest.param("http://127.0.0.1:port/v1", id="port-not-a-number"),
        pytest.param("ftp://127.0.0.1/v1", id="not-http"),
        pytest.param("localhost:8000/v1", id="no-scheme"),
    ],
)
def test_openai_bad_base_url_is_a_value_error(base_url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIModel("m", base_url=base_url, api_key="k")


async def test_openai_bad_base_url_from_the_environment_is_a_model_error(
    monkeypatch: pytest.MonkeyPatch, sleeps: Sleeps
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:99999/v1")
    runtime = Runtime(OpenAIModel("m", api_key="k"), transport=transport_policy(sleep=sleeps))

    with pytest.raises(ModelError, match="OPENAI_BASE_URL") as info:
        await runtime.exec("hi")

    assert not isinstance(info.value, RetryableModelError)
    assert sleeps.waits == []


async def test_openai_client_set_up_errors_become_model_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(**settings: Any) -> openai.AsyncOpenAI:
        raise openai.OpenAIError("the client settings are inconsistent")

    monkeypatch.setattr(openai, "AsyncOpenAI", refuse)
    model = OpenAIModel("m", base_url="http://127.0.0.1:8000/v1", api_key="k")

    with pytest.raises(ModelError, match="settings are inconsistent") as info:
        await model.complete(Request(messages=[Message.of("user", "Hi")]))

    assert isinstance(info.value.__cause__, openai.OpenAIError)


# -- content blocks --------------------------------------------------------------------------


async def test_openai_exec_choices_sends_the_instruction_as_its_own_part(
    server: ProviderServer, model: OpenAIModel
) -> None:
    server.queue(Reply(completion('{"call": "a"}')))

    assert await Runtime(model).exec("Route the ticket.", choices=["a", "b"]) == "a"

    [user] = server.requests[0].body["messages"]
    first, second = user["content"]
    assert first == {"type": "text", "text": "Route the ticket."}
    assert second["type"] == "text"
    assert second["text"].startswith(DECISION_FINISH_INSTRUCTION)


async def test_openai_text_blocks_of_other_roles_are_kept_apart_by_a_blank_line(
    server: ProviderServer, model: OpenAIModel
) -> None:
    server.queue(Reply(completion("ok")))
    two = [TextBlock(text="Be brief."), TextBlock(text="Be kind.")]
    request = Request(messages=[Message(role="system", content=two), Message.of("user", "Hello")])

    await model.complete(request)

    assert server.requests[0].body["messages"] == [
        {"role": "system", "content": "Be brief.\n\nBe kind."},
        {"role": "user", "content": "Hello"},
    ]
