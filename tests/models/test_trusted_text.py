"""Text blocks the engine builds without validating them again equal validated ones."""

from __future__ import annotations

from engine.models import Message, TextBlock


def test_a_trusted_text_block_equals_a_validated_one() -> None:
    trusted = TextBlock.trusted("Pick one.")
    validated = TextBlock(text="Pick one.")
    assert trusted == validated
    assert trusted.model_dump() == validated.model_dump()
    assert trusted.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert trusted.model_fields_set == validated.model_fields_set
    assert hash(trusted) == hash(validated)  # frozen, hence hashable alike
    assert TextBlock.model_validate(trusted.model_dump()) == validated


def test_message_of_holds_one_trusted_text_block() -> None:
    message = Message.of("user", "Pick one.")
    validated = Message(role="user", content=[TextBlock(text="Pick one.")])
    assert message == validated
    assert message.model_dump_json() == validated.model_dump_json()
