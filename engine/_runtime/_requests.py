"""Requests as the runtime builds them: content blocks, the menu as choices, one turn's request.

Kept apart from the runtime so the runtime reads as the control flow of a turn; this is the
data it sends.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from engine._decision import PICK_KEY, Menu, Option, choice_schema, pick_schemas
from engine.models import (
    DECISION_MAX_TOKENS,
    ChoiceSpec,
    ContentBlock,
    ImageBlock,
    Message,
    ModelSettings,
    PickSchema,
    Request,
    TextBlock,
    ToolSpec,
)

__all__ = [
    "Content",
    "blocks_of",
    "build_request",
    "choice_specs",
    "menu_block",
    "message",
    "pick_schema",
]

Content = str | Sequence[ContentBlock]


def build_request(
    system: str | None,
    blocks: list[ContentBlock],
    *,
    response_format: object = None,
    menu: Menu | None = None,
    tools: list[ToolSpec] | None = None,
    settings: ModelSettings | None = None,
) -> Request:
    """Build the request of one turn: the system prompt, then one user message of ``blocks``.

    With a ``menu``, its options travel beside the text as the request's ``choices``, and
    the reply is bounded to :data:`~engine.models.DECISION_MAX_TOKENS` tokens unless a
    settings level (the model's, or ``settings``: the runtime's and the call's) sets one.
    """
    # The hot path of every decision: the parts are validated already (blocks by blocks_of or
    # built here, choices and tools by the menu and toolset), so they are not checked again.
    if response_format is not None and not isinstance(response_format, dict):
        raise TypeError(
            f"response_format must be a dict (a JSON Schema format), got {response_format!r}"
        )
    user = Message.trusted("user", blocks)
    messages = [message("system", system), user] if system else [user]
    if menu is None:
        return Request.trusted(
            messages, tools=tools, response_format=response_format, settings=settings
        )
    specs = menu.memo.get("choices")
    return Request.trusted(
        messages,
        tools=tools,
        response_format=response_format,
        choices=specs if specs is not None else choice_specs(menu),
        max_tokens=DECISION_MAX_TOKENS,
        settings=settings,
    )


def menu_block(head: str, menu: Menu) -> TextBlock:
    """Return the text block ``head``, a blank line, then the menu (shared: blocks are frozen).

    A decision asked again with the same prompt over the same menu gets the same block; a
    menu remembers the blocks of a few prompts.
    """
    blocks: dict[str, TextBlock] | None = menu.memo.get("blocks")
    if blocks is None:
        blocks = menu.memo["blocks"] = {}
    kept = type(head) is str and len(head) <= _KEPT_PROMPT_CHARS
    block = blocks.get(head) if kept else None
    if block is None:
        block = TextBlock.trusted(f"{head}\n\n{menu.text}")  # an f-string is always a str
        if kept and len(blocks) < _BLOCKS_PER_MENU:
            blocks[head] = block
    return block


# Prompts usually are a few short constants per menu; one that holds its case's data is new
# on every call: it is never remembered when long, and a menu remembers only the first few.
_BLOCKS_PER_MENU = 8
_KEPT_PROMPT_CHARS = 512


def message(role: Literal["system", "user", "assistant"], text: str) -> Message:
    return Message.trusted(role, [TextBlock.trusted(text)])


def choice_specs(menu: Menu) -> list[ChoiceSpec]:
    """Return the menu as the ``choices`` of a request (read-only: specs may be shared)."""
    specs: list[ChoiceSpec] | None = menu.memo.get("choices")
    if specs is None:
        specs = [_function_choice(o) if o.kind == "function" else _choice(o) for o in menu.options]
        menu.memo["choices"] = specs
    return specs


def _choice(option: Option) -> ChoiceSpec:
    # Not validated: validation would deep-copy the JSON Schema we just built.
    return ChoiceSpec.model_construct(**choice_schema(option))


# Function options are themselves cached by the option normaliser, so caching their specs
# retains nothing new; value options are rebuilt per call and would only churn a cache.
_function_choice = functools.lru_cache(maxsize=2048)(_choice)


def blocks_of(content: Content) -> list[ContentBlock]:
    if isinstance(content, str):
        # A str is a valid text; a subclass of str is left to pydantic to make one of.
        return [TextBlock.trusted(content) if type(content) is str else TextBlock(text=content)]
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        return [_block(b) for b in content]
    raise TypeError(f"content must be a string or a list of content blocks, got {content!r}")


_BLOCK: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)


def _block(block: object) -> ContentBlock:
    if isinstance(block, TextBlock | ImageBlock):
        return block
    if isinstance(block, str):
        return TextBlock(text=block)
    try:
        # The dict form ({"type": "text", "text": ...}) is validated, never passed on raw.
        return _BLOCK.validate_python(block)
    except ValidationError as exc:
        raise TypeError(
            "content blocks must be strings, TextBlock/ImageBlock or their dict form, "
            f"got {block!r}"
        ) from exc


def pick_schema(menu: Menu) -> PickSchema:
    """Return the menu as the pick schema an enforcing provider constrains its reply to."""
    schema: PickSchema | None = menu.memo.get("pick_schema")
    if schema is None:
        json_schema, strict = pick_schemas(menu)
        schema = PickSchema(key=PICK_KEY, json_schema=json_schema, strict_schema=strict)
        menu.memo["pick_schema"] = schema
    return schema
