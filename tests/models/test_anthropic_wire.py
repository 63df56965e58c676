"""AnthropicModel through the real anthropic SDK, against a local server speaking its protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import anyio
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
from engine.models import AnthropicModel, Message, Request, TextBlock


def message(
    *blocks: dict[str, Any], stop: str = "end_turn", text: str | None = None
) -> dict[str, Any]:
    content = list(blocks) if blocks else [{"type": "text", "text": text or "hello"}]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }


def tool_use(block_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": block_id, "name": name, "input": arguments}


def error(status: int, message: str, **headers: str) -> Reply:
    body = {"type": "error", "error": {"type": "x_error", "message": message}}
    return Reply(body, status, headers)


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
async def model(server: ProviderServer) -> AsyncIterator[AnthropicModel]:
    async with AnthropicModel("claude-test", api_key="ak-test", base_url=server.url) as m:
        yield m


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def runtime(model: AnthropicModel, sleeps: Sleeps) -> Runtime:
    return Runtime(model, system="Be brief.", transport=transport_policy(sleep=sleeps))


async def test_anthropic_plain_reply(server: ProviderServer, model: AnthropicModel) -> None:
    server.queue(Reply(message(text="Hi there.")))
    request = Request(messages=[Message.of("system", "Be brief."), Message.of("user", "Hello")])

    response = await model.complete(request)

    assert response.text == "Hi there."
    assert response.finish_reason == "end_turn"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 4)
    assert response.model == "claude-test"
    assert response.latency_s is not None
    [sent] = server.requests
    assert sent.path == "/v1/messages"
    # SDK versions send the key as x-api-key or as a bearer token.
    assert "ak-test" in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert sent.body["model"] == "claude-test"
    assert sent.body["system"] == "Be brief."
    assert sent.body["max_tokens"] == 1024
    assert sent.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hello"}]}
    ]
    assert "tools" not in sent.body


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "status": "shipped"}


async def test_anthropic_tool_call_round_trip(server: ProviderServer, runtime: Runtime) -> None:
    server.queue(
        Reply(message(tool_use("toolu_1", "lookup", {"order_id": 7}), stop="tool_use")),
        Reply(message(text="It shipped.")),
    )

    text = await runtime.exec("Where is order 7?", tools=[lookup])

    assert text == "It shipped."
    first, second = (r.body for r in server.requests)
    assert first["tools"] == [
        {
            "name": "lookup",
            "description": "Look an order up.",
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "integer"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
        }
    ]
    assert "tool_choice" not in first
    assistant, result = second["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": [tool_use("toolu_1", "lookup", {"order_id": 7})],
    }
    assert result == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": '{"order_id":7,"status":"shipped"}',
            }
        ],
    }


async def test_anthropic_two_tool_results_share_one_user_turn(
    server: ProviderServer, runtime: Runtime
) -> None:
    server.queue(
        Reply(
            message(
                tool_use("t1", "lookup", {"order_id": 1}),
                tool_use("t2", "lookup", {"order_id": 2}),
                stop="tool_use",
            )
        ),
        Reply(message(text="Both shipped.")),
    )

    assert await runtime.exec("Orders 1 and 2?", tools=[lookup]) == "Both shipped."
    last = server.requests[1].body["messages"][-1]
    assert last["role"] == "user"
    assert [b["tool_use_id"] for b in last["content"]] == ["t1", "t2"]


async def refund(amount: float, note: str | None = None) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


async def test_anthropic_forced_tool_enforced_pick(
    server: ProviderServer, runtime: Runtime
) -> None:
    pick = {"pick": {"call": "refund", "args": {"amount": 12.5}}}
    server.queue(Reply(message(tool_use("toolu_p", "pick", pick), stop="tool_use")))
    options = {"refund": refund, "close": ("Close it.", {"why": str})}

    result = await decision.make("Pick one.", options, runtime=runtime)

    assert result == "refunded 12.5"
    body = server.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "pick"}
    [tool] = body["tools"]
    assert tool["name"] == "pick"
    schema = tool["input_schema"]
    assert schema["type"] == "object"
    assert [b["properties"]["call"]["const"] for b in schema["properties"]["pick"]["anyOf"]] == [
        "refund",
        "close",
    ]
    [node] = runtime.trace.find("decision")
    assert node.data["enforcement"] == "tool"


async def test_anthropic_429_with_retry_after_then_success(
    server: ProviderServer, runtime: Runtime, sleeps: Sleeps
) -> None:
    server.queue(error(429, "rate limited", **{"retry-after": "4"}), Reply(message(text="ok")))

    assert await runtime.exec("Hi") == "ok"
    assert len(server.requests) == 2
    assert len(sleeps.waits) == 1
    assert sleeps.waits[0] >= 4.0


@pytest.mark.parametrize(
    "status", [pytest.param(500, id="500"), pytest.param(529, id="overloaded")]
)
async def test_anthropic_server_error_then_success(
    server: ProviderServer, runtime: Runtime, sleeps: Sleeps, status: int
) -> None:
    server.queue(error(status, "Overloaded"), Reply(message(text="ok")))

    assert await runtime.exec("Hi") == "ok"
    assert len(server.requests) == 2
    assert len(sleeps.waits) == 1


async def test_anthropic_hung_response_is_cut_by_the_deadline(
    server: ProviderServer, runtime: Runtime
) -> None:
    server.queue(Reply(hang=True))

    with anyio.fail_after(5), pytest.raises(DeadlineExceeded):
        await runtime.exec("Hi", timeout_s=0.3)


async def test_anthropic_truncated_reply(server: ProviderServer, runtime: Runtime) -> None:
    server.queue(Reply(message(text='{"call": "refund", "args": {"amo', stop="max_tokens")))

    with pytest.raises(DecisionError) as info:
        await runtime.exec("Pick.", choices=[refund], max_retries=0)

    assert info.value.kind == "truncated"


async def test_anthropic_auth_failure_is_not_retried(
    server: ProviderServer, runtime: Runtime, sleeps: Sleeps
) -> None:
    server.queue(error(401, "invalid x-api-key"))

    with pytest.raises(AuthenticationError) as info:
        await runtime.exec("Hi")

    assert len(server.requests) == 1
    assert sleeps.waits == []
    assert isinstance(info.value.__cause__, anthropic.AuthenticationError)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(400, BadRequestError, id="400"),
        pytest.param(404, BadRequestError, id="404"),
        pytest.param(403, AuthenticationError, id="403"),
        pytest.param(503, ProviderUnavailableError, id="503"),
        pytest.param(429, RateLimitError, id="429"),
    ],
)
async def test_anthropic_statuses_become_engine_errors(
    server: ProviderServer, model: AnthropicModel, status: int, expected: type[Exception]
) -> None:
    server.queue(error(status, "nope"))

    with pytest.raises(expected):
        await model.complete(Request(messages=[Message.of("user", "Hi")]))


async def test_anthropic_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        await AnthropicModel("claude-test").complete(Request(messages=[Message.of("user", "Hi")]))


async def test_anthropic_given_client_has_its_retries_turned_off(server: ProviderServer) -> None:
    server.queue(error(500, "down"))
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="k", max_retries=5)

    try:
        model = AnthropicModel("claude-test", client=client)
        with pytest.raises(ProviderUnavailableError):
            await model.complete(Request(messages=[Message.of("user", "Hi")]))
        await model.aclose()
    finally:
        await client.close()

    assert len(server.requests) == 1


async def test_anthropic_empty_key_is_a_missing_key(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    model = AnthropicModel("claude-test", base_url=server.url)

    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        await model.complete(Request(messages=[Message.of("user", "Hi")]))

    assert server.requests == []


@pytest.mark.parametrize(
    "base_url",
    [
        pytest.param("http://127.0.0.1:99999", id="port-out-of-range"),
        pytest.param("ftp://127.0.0.1", id="not-http"),
    ],
)
def test_anthropic_bad_base_url_is_a_value_error(base_url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        AnthropicModel("claude-test", base_url=base_url, api_key="k")


async def test_anthropic_bad_base_url_from_the_environment_is_a_model_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:99999")

    with pytest.raises(ModelError, match="ANTHROPIC_BASE_URL") as info:
        await AnthropicModel("c", api_key="k").complete(Request(messages=[Message.of("user", "")]))

    assert not isinstance(info.value, RetryableModelError)


async def test_anthropic_system_blocks_are_kept_apart_by_a_blank_line(
    server: ProviderServer, model: AnthropicModel
) -> None:
    server.queue(Reply(message(text="ok")))
    two = [TextBlock(text="Be brief."), TextBlock(text="Be kind.")]
    request = Request(messages=[Message(role="system", content=two), Message.of("user", "Hello")])

    await model.complete(request)

    assert server.requests[0].body["system"] == "Be brief.\n\nBe kind."
