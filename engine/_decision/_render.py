"""One option's block of the menu text (docs/decisions.md §5)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from engine._decision._params import Param

__all__ = ["render_block"]


def render_block(name: str, description: str | None, fields: Sequence[Param]) -> str:
    """Render the signature line, description, field lines and ``Call:`` line of one option."""
    lines = [f"{name}({_signature(fields)})"]
    if description and description.strip():
        lines.append("    " + _indented(description, "    "))
    for p in fields:
        line = f"    {p.name}"
        if p.spec.description and p.spec.description.strip():
            line += ": " + _indented(p.spec.description, "        ")
        if p.spec.enum is not None:
            line += " (options: " + ", ".join(_json(v) for v in p.spec.enum) + ")"
        lines.append(line)
    call: dict[str, Any] = {"call": name}
    if fields:
        call["args"] = {p.name: p.spec.placeholder() for p in fields}
    lines.append(f"    Call: {_json(call)}")
    return "\n".join(lines)


def _signature(fields: Sequence[Param]) -> str:
    parts = []
    for p in fields:
        text = f"{p.name}: {p.spec.label}"
        if p.has_default:
            text += f" = {_json(p.default)}"
        parts.append(text)
    return ", ".join(parts)


def _indented(text: str, indent: str) -> str:
    """Keep a multi-line description inside its block.

    Unindented continuation lines would read as new options, and a blank line as the gap
    between two options.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return f"\n{indent}".join(lines)


def _json(value: object) -> str:
    try:
        return _dumps(value)
    except (TypeError, ValueError):
        return _converted(value)


def _converted(value: object) -> str:
    try:
        # An Enum member, a model, a date, a set: the JSON pydantic would write for it.
        return _dumps(to_jsonable_python(value))
    except (TypeError, ValueError):
        # Not JSON (an object default, NaN): show its repr as a string, still valid JSON.
        return json.dumps(repr(value), ensure_ascii=False)


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
