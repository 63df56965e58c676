"""What one JSON value must look like: the :class:`Spec` tree, its JSON Schema and placeholder.

Schema-language values (:mod:`._schema`) and Python annotations (:mod:`._annotations`) both
compile to this one tree, so the menu, the JSON Schema and validation
(:mod:`engine._decision._check`) read one structure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic.errors import PydanticUserError

__all__ = ["BASIC", "Kind", "Spec", "adapter", "cache_key", "hashable", "object_schema"]


def adapter(annotation: Any) -> TypeAdapter[Any]:
    """Return the pydantic adapter of an annotation, cached when the annotation is hashable."""
    try:
        hash(annotation)
    except TypeError:
        return TypeAdapter(annotation)  # Annotated[..., {...}] and the like: build uncached
    return _cached_adapter(cache_key(annotation))


def cache_key(annotation: Any) -> object:
    """The key an annotation is cached under: itself, with its text where equality is loose.

    Typing forms compare by value, and ``Literal["low", "high"] == Literal["high", "low"]``:
    keyed by the form alone, one cache entry would serve both, and a menu would list the
    values in the other one's order. A class is its own key.
    """
    if isinstance(annotation, type):
        return annotation
    return (annotation, repr(annotation))


@lru_cache(maxsize=1024)
def _cached_adapter(key: Any) -> TypeAdapter[Any]:
    return TypeAdapter(key[0] if isinstance(key, tuple) else key)


Kind = Literal["str", "int", "float", "bool", "list", "dict", "object", "model", "any"]

#: The kinds Python's basic types compile to.
BASIC: dict[object, Kind] = {str: "str", int: "int", float: "float", bool: "bool"}
_PLACEHOLDER: dict[str, object] = {"str": "<str>", "int": 0, "float": 0.0, "bool": False}
_JSON_TYPE = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


@dataclass(frozen=True, slots=True)
class Spec:
    """What one JSON value must look like."""

    kind: Kind
    label: str
    description: str | None = None
    enum: tuple[object, ...] | None = None
    items: Spec | None = None
    fields: tuple[tuple[str, Spec], ...] = ()
    nullable: bool = False
    annotation: object = None

    def placeholder(self) -> object:
        """Return the JSON placeholder the menu's ``Call:`` line shows for this value."""
        if self.enum:
            return self.enum[0]
        if self.kind in _PLACEHOLDER:
            return _PLACEHOLDER[self.kind]
        if self.kind == "list":
            return [self.items.placeholder()] if self.items is not None else []
        if self.kind == "object":
            return {name: spec.placeholder() for name, spec in self.fields}
        if self.kind == "dict":
            return {}
        if self.kind == "model":
            return _model_placeholder(self.annotation, self.label)
        return f"<{self.label}>"

    def json_schema(self) -> dict[str, Any]:
        """Return this spec as a JSON Schema."""
        schema = self._base_schema()
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.description:
            schema["description"] = self.description
        if self.nullable:
            return {"anyOf": [schema, {"type": "null"}]}
        return schema

    def _base_schema(self) -> dict[str, Any]:
        if self.kind in _JSON_TYPE:
            return {"type": _JSON_TYPE[self.kind]}
        if self.kind == "list":
            out: dict[str, Any] = {"type": "array"}
            if self.items is not None:
                out["items"] = self.items.json_schema()
            return out
        if self.kind == "dict":
            return {"type": "object"}
        if self.kind == "object":
            return object_schema(self.fields)
        if self.kind == "model":
            return adapter(self.annotation).json_schema()
        return {}


def object_schema(
    fields: tuple[tuple[str, Spec], ...], required: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Return the JSON Schema of an object with these fields (all required by default)."""
    return {
        "type": "object",
        "properties": {name: spec.json_schema() for name, spec in fields},
        "required": list(required if required is not None else (n for n, _ in fields)),
        "additionalProperties": False,
    }


def hashable(annotation: object) -> bool:
    """Whether ``annotation`` can key a cache (``Annotated`` metadata may be a dict)."""
    try:
        hash(annotation)
    except TypeError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# Placeholders of pydantic-validated types, read from their JSON Schema

_JSON_PLACEHOLDER: dict[object, object] = {
    "integer": 0,
    "number": 0.0,
    "boolean": False,
    "null": None,
    "object": {},
    "array": [],
}


def _model_placeholder(annotation: object, label: str) -> object:
    try:
        text = _placeholder_json(cache_key(annotation)) if hashable(annotation) else None
        return json.loads(text) if text is not None else _from_json_schema(annotation)
    except (PydanticUserError, TypeError, ValueError):
        return f"<{label}>"  # a type without a JSON Schema still gets a readable hint


@lru_cache(maxsize=1024)
def _placeholder_json(key: object) -> str:
    # Cached as text: callers get a fresh object each time and may change it freely.
    return json.dumps(_from_json_schema(key[0] if isinstance(key, tuple) else key))


def _from_json_schema(annotation: object) -> object:
    schema = adapter(annotation).json_schema()
    return _json_placeholder(schema, schema.get("$defs", {}), frozenset())


def _json_placeholder(schema: dict[str, Any], defs: dict[str, Any], seen: frozenset[str]) -> object:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen or name not in defs:
            return {}  # a recursive model shows one level, then an empty object
        return _json_placeholder(defs[name], defs, seen | {name})
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = [b for b in schema.get(key, ()) if b.get("type") != "null"]
        if branches:
            return _json_placeholder(branches[0], defs, seen)
    return _typed_placeholder(schema, defs, seen)


def _typed_placeholder(
    schema: dict[str, Any], defs: dict[str, Any], seen: frozenset[str]
) -> object:
    kind = schema.get("type")
    if kind == "string":
        return f"<{schema.get('format', 'str')}>"
    if kind == "object" and schema.get("properties"):
        return {k: _json_placeholder(v, defs, seen) for k, v in schema["properties"].items()}
    if kind == "array" and schema.get("prefixItems"):
        return [_json_placeholder(item, defs, seen) for item in schema["prefixItems"]]
    if kind == "array" and isinstance(schema.get("items"), dict):
        return [_json_placeholder(schema["items"], defs, seen)]
    return _JSON_PLACEHOLDER.get(kind, "<any>")
