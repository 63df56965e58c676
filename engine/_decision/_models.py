"""A pydantic-validated type described for a person, read from its JSON Schema.

Types the schema language has no words for (a pydantic model, ``Annotated[int, Field(ge=1)]``,
an Enum, ``dict[str, int]``, a date) are described by what their JSON Schema says: a readable
type, nested fields, allowed values, bounds, and a plain value that fits them.
"""

from __future__ import annotations

from typing import Any

from pydantic.errors import PydanticUserError

from engine._decision._spec import adapter

__all__ = ["BOUNDS", "literal", "model_view"]

#: The JSON Schema keywords kept as an argument's bounds.
BOUNDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
)
_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_FORMATS = {
    "date": "2024-01-31",
    "date-time": "2024-01-31T12:00:00Z",
    "time": "12:00:00",
    "email": "name@example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "uri": "https://example.com",
}


def model_view(
    annotation: object, label: str, description: str | None, enum: tuple[object, ...] | None
) -> dict[str, Any]:
    """Describe a pydantic-validated type: ``type``, ``description``, and what its schema adds.

    ``enum`` (an Enum type's JSON values) and ``description`` (the argument's own) win over
    the schema's. The result has ``example``, a plain value of the type (the caller checks
    it), and, where the schema has them, ``enum``, ``bounds``, ``fields`` and ``items``.
    """
    try:
        schema = adapter(annotation).json_schema()
    except (PydanticUserError, TypeError, ValueError):
        schema = {}  # a type pydantic validates but cannot write a schema for
    view = _View(schema.get("$defs", {})).of(schema, frozenset())
    if enum is not None:
        view["enum"] = list(enum)
        view["example"] = enum[0]
    if not any(key in view for key in ("fields", "items", "enum")):
        view["type"] = label  # a readable name beats the schema's (dict[str, int], date)
    if "enum" in view:
        view["type"] = " | ".join(literal(v) for v in view["enum"])
    view["description"] = description or view.get("description")
    return view


class _View:
    """Walks one JSON Schema, following its ``$ref``s into ``$defs`` (a cycle stops)."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs

    def of(self, schema: dict[str, Any], seen: frozenset[str]) -> dict[str, Any]:
        schema, seen, nullable = self._resolved(schema, seen)
        out: dict[str, Any] = {"description": schema.get("description")}
        values = [schema["const"]] if "const" in schema else schema.get("enum")
        bounds = {k: schema[k] for k in BOUNDS if k in schema}
        if bounds:
            out["bounds"] = bounds
        kind = schema.get("type")
        if values:
            out["enum"] = list(values)
            out["type"] = " | ".join(literal(v) for v in values)
            out["example"] = values[0]
        elif kind == "object" and isinstance(schema.get("properties"), dict):
            self._object(out, schema, seen)
        elif kind == "array" and isinstance(schema.get("items"), dict):
            items = self.of(schema["items"], seen)
            out["items"] = items
            out["type"] = f"list[{items['type']}]"
            out["example"] = [items["example"]] * int(schema.get("minItems", 0))
        else:
            fallback = "list" if kind == "array" else "dict" if kind else "any"
            out["type"] = _TYPES.get(str(kind), fallback)
            out["example"] = _scalar(kind, schema, bounds)
        if nullable:
            out["type"] += " | None"
        return out

    def _resolved(
        self, schema: dict[str, Any], seen: frozenset[str]
    ) -> tuple[dict[str, Any], frozenset[str], bool]:
        nullable = False
        while True:
            ref = schema.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name in seen or name not in self.defs:
                    return {"type": "object"}, seen, nullable  # a recursive model: one level
                schema, seen = {**self.defs[name], **_without(schema, "$ref")}, seen | {name}
                continue
            branches = schema.get("anyOf") or schema.get("oneOf")
            if not isinstance(branches, list) or not branches:
                return schema, seen, nullable
            real = [b for b in branches if isinstance(b, dict) and b.get("type") != "null"]
            nullable = nullable or len(real) < len(branches)
            if len(real) != 1:
                return {"type": None, **_without(schema, "anyOf", "oneOf")}, seen, nullable
            schema = {**real[0], **_without(schema, "anyOf", "oneOf")}

    def _object(self, out: dict[str, Any], schema: dict[str, Any], seen: frozenset[str]) -> None:
        required = set(schema.get("required") or ())
        fields = []
        for name, sub in schema["properties"].items():
            field: dict[str, Any] = {"name": name, **self.of(sub, seen)}
            field["required"] = name in required
            if "default" in sub:
                field["default"] = sub["default"]
            fields.append(field)
        out["fields"] = fields
        out["type"] = "{" + ", ".join(f"{f['name']}: {f['type']}" for f in fields) + "}"
        out["example"] = {f["name"]: f["example"] for f in fields if f["required"]}


def _without(schema: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in keys and k != "title"}


def _scalar(kind: object, schema: dict[str, Any], bounds: dict[str, Any]) -> object:
    if kind in ("integer", "number"):
        low = bounds.get("minimum")
        if low is None and "exclusiveMinimum" in bounds:
            low = bounds["exclusiveMinimum"] + 1
        high = bounds.get("maximum")
        if high is None and "exclusiveMaximum" in bounds:
            high = bounds["exclusiveMaximum"] - 1
        value = low if low is not None else min(0, high) if high is not None else 0
        return int(value) if kind == "integer" else float(value)
    if kind == "string":
        text = _FORMATS.get(str(schema.get("format")), "text")
        size = int(bounds.get("minLength", 0))
        text = text.ljust(size, "x")
        return text[: int(bounds["maxLength"])] if "maxLength" in bounds else text
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "null":
        return None
    return {} if kind == "object" else "text"


def literal(value: object) -> str:
    """Write an allowed value as a person types it: ``'low'``, ``3``, ``true``, ``null``."""
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)
