"""Emulations of the real OpenAI-compatible servers the enforcement modes are made for.

Each answers as the server it is named after answers a chat completion (as measured by
../shared/realserver/check.py against llama-cpp-python 0.3.36 and its llama.cpp):

- :class:`LlamaCppPython`: refuses ``response_format`` ``json_schema`` with an HTTP 500
  holding its pydantic validation error, and an assistant turn whose content is null;
  honours ``{"type": "json_object", "schema": ...}`` and a named ``tool_choice``.
- :class:`LlamaServer`: honours ``json_schema`` (and ``json_object``); ignores a named
  ``tool_choice`` (it answers as it likes: here, the pick as plain text).

Both answer a constrained request with ``pick`` (what a grammar-constrained model would
write), and anything else with ``text``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from provider_server import Recorded, Reply

__all__ = ["LlamaCppPython", "LlamaServer", "completion"]

_JSON_SCHEMA_REFUSAL = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should "
    "be 'text' or 'json_object' [type=literal_error, input_value='json_schema', "
    "input_type=str]"
)
_NULL_CONTENT_REFUSAL = (
    "1 validation error for CreateChatCompletionRequest\nmessages.2.content\n  Input should "
    "be a valid string [type=string_type, input_value=None, input_type=NoneType]"
)


def completion(
    content: str | None, *, finish: str = "stop", tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Return a chat completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "tiny",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    }


def _internal_error(message: str) -> Reply:
    body = {"error": {"message": message, "type": "internal_server_error", "param": None}}
    return Reply(body, 500)


def _tool_name(body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = choice.get("function", {}).get("name")
        return name if isinstance(name, str) else None
    return None


@dataclass
class LlamaCppPython:
    """llama-cpp-python's server: json_object with a schema, named tools; json_schema is a 500."""

    pick: dict[str, Any]
    text: str = "not a pick"
    modes: list[str] = field(default_factory=list)

    def __call__(self, recorded: Recorded) -> Reply:
        body = recorded.body
        fmt = body.get("response_format") or {}
        if fmt and fmt.get("type") not in ("text", "json_object"):
            self.modes.append("refused")
            return _internal_error(_JSON_SCHEMA_REFUSAL)
        if any(m.get("content", "") is None for m in body.get("messages", [])):
            self.modes.append("refused")
            return _internal_error(_NULL_CONTENT_REFUSAL)
        named = _tool_name(body)
        if named is not None:
            self.modes.append("tool")
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": named, "arguments": json.dumps({"pick": self.pick})},
            }
            return Reply(completion(None, finish="tool_calls", tool_calls=[call]))
        if fmt.get("type") == "json_object" and "schema" in fmt:
            self.modes.append("json_object")
            return Reply(completion(json.dumps({"pick": self.pick})))
        self.modes.append("text")
        return Reply(completion(self.text))


@dataclass
class LlamaServer:
    """llama.cpp's llama-server: json_schema and json_object; a named tool_choice ignored."""

    pick: dict[str, Any]
    text: str = "not a pick"
    modes: list[str] = field(default_factory=list)

    def __call__(self, recorded: Recorded) -> Reply:
        body = recorded.body
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema" or (
            fmt.get("type") == "json_object" and "schema" in fmt
        ):
            self.modes.append(fmt["type"])
            return Reply(completion(json.dumps({"pick": self.pick})))
        if _tool_name(body) is not None:
            # Ignored, as "auto": the model answers as it likes.
            self.modes.append("tool ignored")
            return Reply(completion(json.dumps(self.pick)))
        self.modes.append("text")
        return Reply(completion(self.text))
