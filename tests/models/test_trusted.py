"""Requests, messages and replies the engine builds without validating them again.

They must be indistinguishable from validated ones: equal, dumped, copied and revalidated
alike. (They rely on how pydantic lays out a model instance; these tests catch a pydantic
release that lays it out differently.)
"""

from __future__ import annotations

from engine.models import (
    ChoiceSpec,
    Message,
    ModelSettings,
    Request,
    Response,
    TextBlock,
    ToolCall,
    Usage,
)
from engine.models._types import trusted_message, trusted_request, trusted_response


def test_a_trusted_message_equals_a_validated_one() -> None:
    blocks = [TextBlock(text="Pick one.")]
    trusted = trusted_message("user", blocks)
    validated = Message(role="user", content=blocks)
    assert trusted == validated
    assert trusted.text == "Pick one."
    assert trusted.model_dump() == validated.model_dump()
    assert trusted.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert Message.model_validate(trusted.model_dump()) == validated


def test_a_trusted_request_equals_a_validated_one_and_copies_alike() -> None:
    messages = [Message(role="system", content=[TextBlock(text="Be brief.")])]
    choices = [ChoiceSpec(name="close", description="Close it.")]
    trusted = trusted_request(messages, choices=choices)
    validated = Request(messages=messages, choices=choices)
    assert trusted == validated
    assert trusted.model_dump_json() == validated.model_dump_json()
    copy = trusted.model_copy(update={"max_tokens": 5})
    assert copy.max_tokens == 5
    assert copy.messages == validated.messages
    assert trusted.max_tokens is None  # the copy did not touch the original


def test_a_trusted_reply_equals_a_validated_one() -> None:
    trusted = trusted_response(
        "done", finish_reason="stop", input_tokens=3, output_tokens=1, model="m", latency_s=0.0
    )
    validated = Response(
        text="done",
        finish_reason="stop",
        usage=Usage(input_tokens=3, output_tokens=1),
        model="m",
        latency_s=0.0,
    )
    assert trusted == validated
    assert trusted.usage.total_tokens == 4
    assert trusted.model_dump() == validated.model_dump()
    # The fields it marks as given are a validated one's, in a set of its own.
    assert trusted.model_fields_set == validated.model_fields_set
    trusted.enforcement = None
    assert (
        "enforcement"
        not in trusted_response(
            "", finish_reason=None, input_tokens=0, output_tokens=0, model=None, latency_s=None
        ).model_fields_set
    )


def test_trusted_replies_share_no_list() -> None:
    def reply() -> Response:
        return trusted_response(
            "",
            finish_reason="tool_calls",
            input_tokens=0,
            output_tokens=0,
            model=None,
            latency_s=None,
        )

    first, second = reply(), reply()
    first.tool_calls.append(ToolCall(id="c1", name="lookup"))
    assert second.tool_calls == []


def test_trusted_requests_mark_the_fields_a_validated_one_would() -> None:
    messages = [Message(role="user", content=[TextBlock(text="Pick.")])]
    settings = ModelSettings(temperature=0.0)
    for given in (
        {},
        {"max_tokens": 5},
        {"settings": settings},
        {"max_tokens": 5, "settings": settings},
    ):
        trusted = trusted_request(messages, tools=None, response_format=None, choices=None, **given)
        validated = Request(
            messages=messages, tools=None, response_format=None, choices=None, **given
        )
        assert trusted.model_fields_set == validated.model_fields_set
        assert trusted.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
        # Each has a set of its own: setting a field marks that request only.
        other = trusted_request(messages, tools=None, response_format=None, choices=None, **given)
        trusted.model = "m"
        assert "model" in trusted.model_fields_set
        assert "model" not in other.model_fields_set
