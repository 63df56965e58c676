"""A menu described for a person: each option with its arguments, and a pick that is valid.

:func:`describe_menu` turns a menu into JSON data a store keeps beside a run that stopped at
a decision (or waits at one), so that whoever settles it later, from another process, reads
what they may pick without the flow's code: each option's name, kind and description, and
each argument's readable type, whether it is required, its default, allowed values, bounds
and description. Only what a pick may fill is listed: a function's runtime and hidden
parameters are the flow's, never a person's. :func:`example_pick` reads one option's
description back into a pick that validates against the menu.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic_core import to_jsonable_python

from engine._base import json_safe
from engine._decision._check import FieldError, check
from engine._decision._menu import build_menu
from engine._decision._models import literal, model_view
from engine._decision._options import Option
from engine._decision._params import Param
from engine._decision._prompts import DECISION_FINISH_INSTRUCTION
from engine._decision._spec import Spec

__all__ = ["PROMPT_CHARS", "asked_prompt", "describe_menu", "example_pick", "type_text"]

#: The most characters of a decision's prompt kept with a run for a person to read.
PROMPT_CHARS = 2000


def describe_menu(options: object) -> list[dict[str, Any]]:
    """Describe a menu (a :class:`Menu` or any option container) for a person, as JSON data.

    Each option is ``{"name", "kind", "description", "args"}``; ``kind`` is ``function``,
    ``value``, ``text`` or ``schema``, ``description`` may be ``None``. Each argument is
    ``{"name", "type", "required", "description", "example"}`` plus, where they apply,
    ``"default"`` (its JSON), ``"enum"`` (the allowed values), ``"bounds"`` (JSON Schema's
    ``minimum``, ``maxLength``, ``pattern``... of a pydantic-validated type), ``"fields"``
    (a nested object's fields, described alike) and ``"items"`` (a list's item). ``type``
    reads as Python does: ``int``, ``list[str]``, ``'low' | 'high'``, ``{title: str}``;
    ``example`` is a valid value for it, which :func:`example_pick` uses.

    Raises:
        TypeError: ``options`` is no option container, or an option is malformed.
        ValueError: ``options`` is empty, or names an option twice.
    """
    menu = build_menu(options)
    # Kept with the menu as JSON text: a menu offered again is described once, and every
    # caller gets data of its own to change.
    text = menu.memo.get("described")
    if text is None:
        described = [_option(option) for option in menu.options]
        text = menu.memo["described"] = json.dumps(json_safe(described), ensure_ascii=False)
    safe: list[dict[str, Any]] = json.loads(text)
    return safe


#: The keys of a described argument, in the order they are written.
_KEYS = ("name", "type", "required", "default", "enum", "bounds", "description", "fields", "items")


def example_pick(option: Mapping[str, Any]) -> dict[str, Any]:
    """Return a pick of the described ``option`` (one item of :func:`describe_menu`) that is valid.

    Its required arguments are filled with valid values (the first allowed value, else a value
    of its type: ``"text"``, ``0``, ``false``, ``[]``, a nested object filled alike); optional
    ones are left to their defaults. ``{"call": name}`` when the option needs no arguments.
    """
    args = {
        str(arg["name"]): _example_of(arg)
        for arg in option.get("args") or ()
        if isinstance(arg, Mapping) and arg.get("required")
    }
    pick: dict[str, Any] = {"call": option.get("name")}
    if args:
        pick["args"] = args
    return pick


class _Message(Protocol):
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...


def asked_prompt(messages: Sequence[_Message], options: object) -> str:
    """Return the question a decision asked: its last user message without the menu, capped.

    ``decision.make`` sends the prompt and the menu; ``runtime.exec`` the content, the finish
    instruction and the menu. Both come back as the text before them, at most
    :data:`PROMPT_CHARS` characters (``…`` marks a cut).
    """
    text = next((m.text for m in reversed(messages) if m.role == "user"), "")
    menu = build_menu(options)
    for tail in (menu.text, DECISION_FINISH_INSTRUCTION):
        text = text.rstrip()
        if text.endswith(tail.rstrip()):
            text = text[: len(text) - len(tail.rstrip())]
    text = text.strip()
    if len(text) > PROMPT_CHARS:
        text = text[: PROMPT_CHARS - 1] + "…"
    safe: str = json_safe(text)
    return safe


# -- options and arguments --------------------------------------------------------------------


def _option(option: Option) -> dict[str, Any]:
    return {
        "name": option.name,
        "kind": option.kind,
        "description": option.description,
        "args": [_argument(p, p.name in option.required) for p in option.fields],
    }


def _argument(param: Param, required: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": param.name, **_value(param.spec), "required": required}
    if param.has_default:
        out["default"] = _jsonable(param.default)
    return {**_ordered(out), "example": _example(param.spec, param.name)}


def _ordered(described: dict[str, Any]) -> dict[str, Any]:
    """Return a described value with its keys in :data:`_KEYS` order, nested ones too.

    Only a top-level argument keeps an ``example``: :func:`example_pick` builds nested
    values from that.
    """
    out = {key: described[key] for key in _KEYS if key in described}
    if "fields" in out:
        out["fields"] = [_ordered(f) for f in out["fields"]]
    if "items" in out:
        out["items"] = _ordered(out["items"])
    return out


def _value(spec: Spec) -> dict[str, Any]:
    """Describe one value's spec: its type, description, and what restricts it."""
    if spec.kind == "model":
        view = model_view(spec.annotation, spec.label, spec.description, spec.enum)
        if spec.nullable and not view["type"].endswith(" | None"):
            view["type"] += " | None"
        return view
    out: dict[str, Any] = {"type": type_text(spec), "description": spec.description}
    if spec.enum is not None:
        out["enum"] = [_jsonable(v) for v in spec.enum]
    if spec.kind == "object":
        out["fields"] = [
            {"name": name, **_value(sub), "required": True} for name, sub in spec.fields
        ]
    elif spec.kind == "list" and spec.items is not None:
        out["items"] = _value(spec.items)
    return out


def type_text(spec: Spec) -> str:
    """Write a spec's type as a person reads it: ``'low' | 'high'``, ``list[{a: int}]``."""
    if spec.enum is not None:
        text = " | ".join(literal(v) for v in spec.enum)
        return f"{text} | None" if spec.nullable and None not in spec.enum else text
    if spec.kind == "object":
        text = "{" + ", ".join(f"{name}: {type_text(sub)}" for name, sub in spec.fields) + "}"
    elif spec.kind == "list" and spec.items is not None:
        text = f"list[{type_text(spec.items)}]"
    elif spec.kind == "model":
        text = str(model_view(spec.annotation, spec.label, None, None)["type"])
    else:
        return spec.label
    return f"{text} | None" if spec.nullable and not text.endswith(" | None") else text


# -- examples ---------------------------------------------------------------------------------


def _example(spec: Spec, path: str) -> object:
    """Return a value ``spec`` takes: the plain one by its type, else the menu's placeholder."""
    plain = _plain(spec)
    for candidate in (plain, spec.placeholder()):
        try:
            check(spec, candidate, path)
        except FieldError:
            continue
        return _jsonable(candidate)
    return _jsonable(plain)  # a pattern no plain value meets: the best there is


_PLAIN: dict[str, object] = {"str": "text", "int": 0, "float": 0.0, "bool": False, "any": "text"}


def _plain(spec: Spec) -> object:
    if spec.enum:
        return spec.enum[0]
    if spec.kind in _PLAIN:
        return _PLAIN[spec.kind]
    if spec.kind == "object":
        return {name: _plain(sub) for name, sub in spec.fields}
    if spec.kind == "list":
        return []
    if spec.kind == "dict":
        return {}
    return model_view(spec.annotation, spec.label, None, None).get("example", "text")


def _example_of(arg: Mapping[str, Any]) -> object:
    """Return the example of a described argument, or build one from its description."""
    if "example" in arg:
        return arg["example"]
    if arg.get("enum"):
        return arg["enum"][0]
    if "default" in arg:
        return arg["default"]
    if isinstance(arg.get("fields"), list):
        return {
            str(f["name"]): _example_of(f)
            for f in arg["fields"]
            if isinstance(f, Mapping) and f.get("required", True)
        }
    head = str(arg.get("type", "str")).split("[", 1)[0].split(" ", 1)[0]
    return {"int": 0, "float": 0.0, "bool": False, "list": [], "dict": {}}.get(head, "text")


def _jsonable(value: object) -> Any:
    """Return ``value`` as JSON data; what JSON cannot carry as its ``repr``."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        try:
            text = json.dumps(to_jsonable_python(value), allow_nan=False)
        except (TypeError, ValueError):
            return repr(value)
    return json.loads(text)
