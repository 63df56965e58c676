"""Enforced picks: the menu compiled to one JSON Schema a provider can constrain a reply to.

The schema is an object with one property, ``pick``, whose value is one branch per option:
``{"call": <the option's name>, "args": <the option's parameters>}``. The wrapper object is
there because providers want an object at the root: OpenAI's strict mode rejects ``anyOf``
at the root and Anthropic's tool input must be an object. A provider that enforced the
schema unwraps the reply and returns the value of ``pick`` as JSON text, which the decision
core then parses and validates exactly as it does a free-text reply.

:func:`strict_schema` converts a schema to the subset OpenAI's strict mode accepts:

- every object lists all of its properties in ``required`` and sets
  ``additionalProperties: false``;
- a function option's optional parameter becomes required and nullable, since ``null``
  means "use the default" (docs/decisions.md §4); an optional field deeper down (a pydantic
  model's field with a default) becomes required as it is, so the model always sends a
  valid value rather than a ``null`` the field would reject;
- ``const`` becomes a one-value ``enum``, ``oneOf`` becomes ``anyOf``, a one-item ``allOf``
  is inlined;
- keywords strict mode does not take (``default``, ``title``, ``format``, bounds, ...) are
  dropped: they narrow what is valid, and the decision core still checks them afterwards.

A schema strict mode cannot express (a free-form ``dict`` field, an untyped value, a tuple,
an object with schema-valued ``additionalProperties``, too deep or too many properties)
has no strict form: :func:`strict_schema` returns ``None`` and the provider sends the
schema non-strict instead.
"""

from __future__ import annotations

import json
from typing import Any

from engine._decision._menu import Menu, choice_schema
from engine._decision._options import Option

__all__ = ["PICK_KEY", "menu_schema", "pick_schemas", "strict_schema", "tool_parameters"]

#: The property of the root object that holds the pick.
PICK_KEY = "pick"

# OpenAI's documented limits for strict schemas.
MAX_DEPTH = 10
MAX_PROPERTIES = 5000

_KEEP = frozenset({"type", "description", "enum", "$ref"})
_DROP = frozenset(
    {
        "title",
        "default",
        "examples",
        "format",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "discriminator",
        "readOnly",
        "writeOnly",
        "deprecated",
        "$comment",
    }
)
_SCALARS = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}


def pick_schemas(menu: Menu) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Return the menu's pick schema and its strict form (``None`` when it has none).

    Both are computed once per menu and shared: treat them as read-only.
    """
    cached = menu.memo.get("pick_schemas")
    if cached is None:
        schema = menu_schema(menu)
        cached = (schema, strict_schema(schema))
        menu.memo["pick_schemas"] = cached
    return cached


def menu_schema(menu: Menu) -> dict[str, Any]:
    """Compile ``menu`` into one JSON Schema with a branch per option, under ``pick``."""
    branches: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for index, option in enumerate(menu.options):
        choice = choice_schema(option)
        args = choice["parameters"]
        _merge_defs(args, defs, index)
        branch: dict[str, Any] = {
            "type": "object",
            "properties": {"call": {"const": option.name}, "args": args},
            "required": ["call", "args"],
            "additionalProperties": False,
        }
        if choice["description"]:
            branch["description"] = choice["description"]
        branches.append(branch)
    pick = branches[0] if len(branches) == 1 else {"anyOf": branches}
    root: dict[str, Any] = {
        "type": "object",
        "properties": {PICK_KEY: pick},
        "required": [PICK_KEY],
        "additionalProperties": False,
    }
    if defs:
        root["$defs"] = defs
    return root


def tool_parameters(option: Option) -> dict[str, Any]:
    """Return the JSON Schema of a function offered as a native tool.

    The same parameter specs as the option's menu entry: hidden and runtime-class
    parameters are not there, and an optional parameter is nullable (``null`` means "use
    the default", as in a pick).
    """
    parameters: dict[str, Any] = choice_schema(option)["parameters"]
    required = set(parameters.get("required") or ())
    properties = parameters.get("properties") or {}
    for name, schema in properties.items():
        if name not in required:
            properties[name] = _nullable(schema)
    return parameters


def _merge_defs(args: dict[str, Any], defs: dict[str, Any], index: int) -> None:
    """Move an option's ``$defs`` to the root, renaming those that clash with another's."""
    own = args.pop("$defs", None)
    if not own:
        return
    renames = {
        name: f"{name}__{index}"
        for name, schema in own.items()
        if name in defs and defs[name] != schema
    }
    if renames:
        _rename_refs(args, renames)
        _rename_refs(own, renames)
    defs.update((renames.get(name, name), schema) for name, schema in own.items())


def _rename_refs(node: object, renames: dict[str, str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            node["$ref"] = f"#/$defs/{renames.get(name, name)}"
        for value in node.values():
            _rename_refs(value, renames)
    elif isinstance(node, list):
        for value in node:
            _rename_refs(value, renames)


class _NotStrict(Exception):
    """The schema uses something strict mode cannot express."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Convert a pick schema (or any object schema) to OpenAI's strict subset.

    In a pick schema the optional properties of each option's ``args`` become nullable;
    deeper optional properties become required as they are (see the module docstring).

    Returns:
        The strict schema, or ``None`` when ``schema`` has no strict form.
    """
    converter = _Strict(_args_objects(schema))
    try:
        out = converter.node(schema, depth=0)
        if out.get("type") != "object":
            raise _NotStrict("the root must be an object")
        defs = schema.get("$defs")
        if defs:
            out["$defs"] = {name: converter.node(sub, depth=1) for name, sub in defs.items()}
    except _NotStrict:
        return None
    if converter.properties > MAX_PROPERTIES:
        return None
    return out


def _args_objects(schema: dict[str, Any]) -> frozenset[int]:
    """Return the ids of the ``args`` objects of a pick schema's branches."""
    pick = (schema.get("properties") or {}).get(PICK_KEY)
    if not isinstance(pick, dict):
        return frozenset()
    branches = pick.get("anyOf", [pick])
    return frozenset(
        id(b["properties"]["args"])
        for b in branches
        if isinstance(b, dict)
        and isinstance(b.get("properties"), dict)
        and isinstance(b["properties"].get("args"), dict)
    )


class _Strict:
    """One conversion; counts properties against the limit as it goes."""

    def __init__(self, args_objects: frozenset[int]) -> None:
        self.args_objects = args_objects
        self.properties = 0

    def node(self, schema: object, *, depth: int) -> dict[str, Any]:
        if not isinstance(schema, dict):
            raise _NotStrict("a schema must be an object")
        args_object = id(schema) in self.args_objects
        schema = _inline_all_of(schema)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _KEEP:
                out[key] = value
            elif key == "const":
                out["enum"] = [value]
            elif key in ("anyOf", "oneOf"):
                out["anyOf"] = [self.node(branch, depth=depth) for branch in value]
            elif key not in _DROP and key not in _STRUCTURE:
                raise _NotStrict(f"strict mode has no {key!r}")
        kind = out.get("type")
        if kind == "object":
            self._object(schema, out, depth, args_object)
        elif kind == "array":
            self._array(schema, out, depth)
        elif isinstance(kind, list) and ("object" in kind or "array" in kind):
            raise _NotStrict("a type list may only name scalar types")
        elif "enum" in out and kind is None:
            out["type"] = _enum_type(out["enum"])
        elif kind is None and "anyOf" not in out and "$ref" not in out:
            raise _NotStrict("an untyped value has no strict form")
        return out

    def _object(
        self, schema: dict[str, Any], out: dict[str, Any], depth: int, args_object: bool
    ) -> None:
        if depth >= MAX_DEPTH:
            raise _NotStrict("nested too deep")
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        if extra is not False and (not properties or extra is not True):
            # A free-form dict, or one whose values follow a schema: strict mode has neither.
            raise _NotStrict("free-form objects have no strict form")
        required = set(schema.get("required") or ())
        self.properties += len(properties)
        converted = {}
        for name, sub in properties.items():
            prop = self.node(sub, depth=depth + 1)
            if args_object and name not in required:
                prop = _nullable(prop)  # null means "use the default" (docs/decisions.md §4)
            converted[name] = prop
        out["properties"] = converted
        out["required"] = list(converted)
        out["additionalProperties"] = False

    def _array(self, schema: dict[str, Any], out: dict[str, Any], depth: int) -> None:
        items = schema.get("items")
        if not isinstance(items, dict) or "prefixItems" in schema:
            raise _NotStrict("arrays need one item schema")
        out["items"] = self.node(items, depth=depth + 1)


# Keywords _Strict reads through _object and _array rather than copying.
_STRUCTURE = frozenset({"properties", "required", "items", "additionalProperties", "$defs"})


def _inline_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    all_of = schema.get("allOf")
    if all_of is None:
        return schema
    if not isinstance(all_of, list) or len(all_of) != 1 or not isinstance(all_of[0], dict):
        raise _NotStrict("allOf with several schemas has no strict form")
    # pydantic writes {"allOf": [{"$ref": ...}], "description": ...}: keep both.
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    merged.update(all_of[0])
    return merged


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _accepts_null(schema):
        return schema
    description = schema.get("description")
    inner = {k: v for k, v in schema.items() if k != "description"}
    out: dict[str, Any] = {"anyOf": [inner, {"type": "null"}]}
    if description:
        out["description"] = description
    return out


def _accepts_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_accepts_null(b) for b in schema.get("anyOf", ()) if isinstance(b, dict))


def _enum_type(values: list[Any]) -> str | list[str]:
    kinds = []
    for value in values:
        kind = _SCALARS.get(type(value))
        if kind is None:
            raise _NotStrict(f"enum value {json.dumps(value)} is not a JSON scalar")
        if kind not in kinds:
            kinds.append(kind)
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    return kinds[0] if len(kinds) == 1 else kinds
