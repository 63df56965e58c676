"""OpenAIModel against llama-cpp-python's server and llama-server: the plain protocol."""

from __future__ import annotations

from realserver_support import RealServer

from engine.models import Message, OpenAIModel, Request


async def test_a_bounded_plain_reply_ends_at_its_bound(server: RealServer) -> None:
    async with OpenAIModel("tiny", base_url=server.url) as model:
        reply = await model.complete(
            Request(messages=[Message.of("user", "Say something.")], max_tokens=8)
        )

    # The tiny model seldom stops on its own: the bound ends the reply.
    assert reply.finish_reason == "length"
    assert reply.text
    assert reply.usage.input_tokens > 0
    assert 0 < reply.usage.output_tokens <= 8
    assert reply.tool_calls == []
