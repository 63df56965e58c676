"""The forms in which an OpenAI-compatible server can be asked to constrain a pick.

A decision that asks for enforcement sends the menu as one neutral schema
(:class:`~engine.models.PickSchema`, the request's ``enforce``); the model adapter decides how
the server gets it. Servers differ in what they take:

==============  ==========================================================================
mode            what is sent
==============  ==========================================================================
``json_schema`` ``response_format={"type": "json_schema", "json_schema": {...}}`` (OpenAI,
                vLLM, llama.cpp's llama-server, recent Ollama)
``json_object`` ``response_format={"type": "json_object", "schema": {...}}``
                (llama-cpp-python's server, which refuses ``json_schema``)
``tool``        one tool ``pick`` whose parameters are the schema, forced with a named
                ``tool_choice`` (llama-cpp-python honours it; llama-server ignores the name)
``text``        nothing: the reply is parsed as free text
==============  ==========================================================================

``auto`` tries them in that order. A refusal of a mode (a :class:`~engine.BadRequestError`:
a 4xx, or a 5xx whose body is a request-validation error) sends the same request in the
next mode at once, never as a transport retry, and the first mode the server answers is
remembered for the process, per base URL and model name, so later calls go straight to it.
A request that is refused even as text was not refused for its mode: its error is raised
and nothing is remembered.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Literal, cast

from engine.models._types import PickSchema, ToolCall
from engine.models._wire import unwrap_pick

__all__ = [
    "ENFORCE_MODES",
    "Enforce",
    "EnforceMode",
    "apply_mode",
    "check_enforce",
    "forget_accepted_modes",
    "modes_to_try",
    "remember_mode",
    "remembered_mode",
    "split_enforce",
    "take_pick",
]

EnforceMode = Literal["json_schema", "json_object", "tool", "text"]
Enforce = Literal["auto", "json_schema", "json_object", "tool", "text"]
#: Every mode, best first: the order ``auto`` tries them in.
ENFORCE_MODES: tuple[EnforceMode, ...] = ("json_schema", "json_object", "tool", "text")

_PICK_TOOL_DESCRIPTION = "Record your decision: pick exactly one of the offered options."
_lock = threading.Lock()
#: The mode each endpoint (base URL, model name) answered in ``auto``, for this process.
_accepted: dict[tuple[str, str], EnforceMode] = {}


def check_enforce(value: object) -> Enforce | None:
    """Return an ``enforce=`` setting as a mode name, or ``None`` for the model's default.

    ``True`` is ``"json_schema"`` and ``False`` is ``"text"``, as they always meant.

    Raises:
        ValueError: Anything else than a mode name, ``"auto"``, a bool or ``None``.
    """
    if value is None:
        return None
    if value is True:
        return "json_schema"
    if value is False:
        return "text"
    if isinstance(value, str) and value in (*ENFORCE_MODES, "auto"):
        return cast(Enforce, value)
    raise ValueError(
        f"enforce must be 'auto', 'json_schema', 'json_object', 'tool', 'text', True, False or "
        f"None, got {value!r}"
    )


def split_enforce(query: str) -> tuple[Enforce | None, str]:
    """Take ``enforce=MODE`` out of a model string's ``key=value&...`` options.

    Returns:
        The mode (``None`` when the options name none) and the other options, as they were.

    Raises:
        ValueError: The mode is not one :func:`check_enforce` takes.
    """
    mode: Enforce | None = None
    rest = []
    for item in query.split("&"):
        key, sep, value = item.partition("=")
        if sep and key.strip() == "enforce":
            mode = check_enforce({"true": True, "false": False}.get(value.strip(), value.strip()))
        elif item:
            rest.append(item)
    return mode, "&".join(rest)


def modes_to_try(setting: Enforce, key: tuple[str, str]) -> tuple[EnforceMode, ...]:
    """Return the modes to send a request in, in order: one, or ``auto``'s chain."""
    if setting != "auto":
        return (setting,)
    known = _accepted.get(key)
    return ENFORCE_MODES[ENFORCE_MODES.index(known) :] if known else ENFORCE_MODES


def remembered_mode(key: tuple[str, str]) -> EnforceMode | None:
    """Return the mode ``auto`` found for an endpoint in this process, if any."""
    return _accepted.get(key)


def remember_mode(key: tuple[str, str], mode: EnforceMode) -> None:
    """Remember that an endpoint answered a request in ``mode``."""
    with _lock:
        _accepted[key] = mode


def forget_accepted_modes() -> None:
    """Forget what ``auto`` found about every endpoint (for tests, or a restarted server)."""
    with _lock:
        _accepted.clear()


def apply_mode(params: dict[str, Any], enforce: PickSchema, mode: EnforceMode) -> None:
    """Add to chat-completions ``params`` what asks the server for ``enforce`` in ``mode``."""
    if mode == "json_schema":
        strict = enforce.strict_schema is not None
        schema = enforce.strict_schema if strict else enforce.json_schema
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": enforce.name, "schema": schema, "strict": strict},
        }
    elif mode == "json_object":
        params["response_format"] = {"type": "json_object", "schema": enforce.json_schema}
    elif mode == "tool":
        tool = {
            "type": "function",
            "function": {
                "name": enforce.name,
                "description": _PICK_TOOL_DESCRIPTION,
                "parameters": enforce.json_schema,
            },
        }
        params["tools"] = [*params.get("tools", ()), tool]
        params["tool_choice"] = {"type": "function", "function": {"name": enforce.name}}


def take_pick(
    text: str, calls: list[ToolCall], enforce: PickSchema, mode: EnforceMode
) -> tuple[str, list[ToolCall]]:
    """Return a reply's text with its enforced pick unwrapped, and the tool calls left.

    In ``tool`` mode the pick is the forced call's arguments, and that call is not one of
    the turn's tool calls. A server that ignored the mode answers as it likes: a reply
    that is not the expected wrapper is passed on as it came, for the decision core to
    read (or reject) like any other.
    """
    if mode == "tool":
        for index, call in enumerate(calls):
            if call.name == enforce.name:
                pick = unwrap_pick(call.arguments, enforce)
                rest = calls[:index] + calls[index + 1 :]
                return (pick if pick is not None else _as_text(call.arguments)), rest
    if text and mode != "text":
        text = unwrap_pick(text, enforce) or text
    return text, calls


def _as_text(arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)
