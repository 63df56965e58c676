"""The schema language and parameter types, compiled to :class:`Spec` trees.

A spec says what one JSON value must look like. Schema-language values (``str``, ``"a
description"``, ``[spec]``, meta-specs, nested objects) and Python annotations (``int |
None``, ``list[str]``, ``Literal[...]``, pydantic models) both compile to the same tree, so
the menu, the JSON Schema and validation (:mod:`engine._decision._check`) read one
structure. Every malformed spec is an :class:`~engine.OptionsTypeError` (a ``TypeError``).
"""

from __future__ import annotations

import enum
import json
import types
import typing
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal

from pydantic.errors import PydanticUserError
from pydantic_core import to_jsonable_python

from engine._base import OptionsTypeError
from engine._decision._check import FieldError, adapter, check

__all__ = ["META_KEYS", "FieldError", "Spec", "check", "from_annotation", "from_schema"]

Kind = Literal["str", "int", "float", "bool", "list", "dict", "object", "model", "any"]

META_KEYS = frozenset({"type", "description", "options", "fields", "items"})

_BASIC: dict[object, Kind] = {str: "str", int: "int", float: "float", bool: "bool"}
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


# ---------------------------------------------------------------------------------------------
# Compiling the schema language


def from_schema(schema: object, *, where: str = "schema") -> tuple[tuple[str, Spec], ...]:
    """Compile a ``{field: spec}`` schema into named specs.

    Raises:
        OptionsTypeError: The schema is not a dict, or one of its specs is malformed.
    """
    if not isinstance(schema, dict):
        raise OptionsTypeError(f"{where} must be a dict of field specs, got {_show(schema)}")
    out = []
    for name, value in schema.items():
        if not isinstance(name, str):
            raise OptionsTypeError(f"{where} field names must be strings, got {name!r}")
        out.append((name, from_spec(value, where=f"{where}.{name}")))
    return tuple(out)


def from_spec(value: object, *, where: str = "spec") -> Spec:
    """Compile one schema-language spec."""
    if isinstance(value, str):
        return Spec("str", "str", description=value)
    if isinstance(value, list):
        if len(value) != 1:
            raise OptionsTypeError(
                f"{where}: a list spec needs exactly one item template, got {len(value)} "
                f"({_show(value)}); write [spec]"
            )
        items = from_spec(value[0], where=f"{where}[]")
        return Spec("list", f"list[{items.label}]", items=items)
    if isinstance(value, dict):
        if all(isinstance(k, str) and k in META_KEYS for k in value):
            return _from_meta(value, where)
        fields = from_schema(value, where=where)
        return Spec("object", "dict", fields=fields)
    if _is_annotation(value):
        return from_annotation(value, where=where)
    raise OptionsTypeError(
        f"{where}: {_show(value)} is not a spec; use a type, a description string, [spec], "
        "or a dict"
    )


def _from_meta(meta: dict[str, Any], where: str) -> Spec:
    description = meta.get("description")
    if description is not None and not isinstance(description, str):
        raise OptionsTypeError(f"{where}: description must be a string, got {_show(description)}")
    enum = _enum_of(meta, where)
    if "fields" in meta:
        base = Spec("object", "dict", fields=from_schema(meta["fields"], where=where))
    elif "items" in meta:
        items = from_spec(meta["items"], where=f"{where}[]")
        base = Spec("list", f"list[{items.label}]", items=items)
    elif "type" in meta:
        if isinstance(meta["type"], str):
            # A string here is almost always a JSON Schema habit ("integer"), which would
            # otherwise silently become a str field described by that word.
            raise OptionsTypeError(
                f"{where}: type must be a Python type or a spec, got the string "
                f"{meta['type']!r}; write int, not 'int'"
            )
        base = from_spec(meta["type"], where=where)
    elif enum is not None:
        base = _inferred(enum)
    else:
        base = Spec("str", "str")
    if enum is not None:
        base = with_enum(base, enum, where)
    return replace(base, description=description or base.description)


def _enum_of(meta: dict[str, Any], where: str) -> tuple[object, ...] | None:
    if "options" not in meta:
        return None
    options = meta["options"]
    if not isinstance(options, list | tuple) or not options:
        raise OptionsTypeError(f"{where}: options must be a non-empty list, got {_show(options)}")
    return tuple(options)


def with_enum(spec: Spec, options: object, where: str) -> Spec:
    """Return ``spec`` restricted to ``options``.

    Raises:
        OptionsTypeError: ``options`` is not a non-empty list, or one of its values is not a
            valid value of ``spec`` (an option the model could never pick validly).
    """
    enum = _enum_of({"options": options}, where)
    assert enum is not None
    plain = replace(spec, enum=None)
    for value in enum:
        try:
            check(plain, value, "value")
        except FieldError as exc:
            raise OptionsTypeError(
                f"{where}: option value {_show(value)} is not a valid {spec.label} ({exc}); "
                "make the options match the type"
            ) from None
    return replace(spec, enum=enum)


def _inferred(enum: tuple[object, ...]) -> Spec:
    """Infer a spec's type from its enum values when they share one type."""
    kinds = list(dict.fromkeys(type(v) for v in enum))
    if len(kinds) == 1 and (kind := _BASIC.get(kinds[0])) is not None:
        return Spec(kind, kind)
    # Mixed values: the enum alone decides; the label still tells the reader what may come.
    return Spec("any", " | ".join(_label(k) for k in kinds))


# ---------------------------------------------------------------------------------------------
# Compiling annotations


def _is_annotation(value: object) -> bool:
    return (
        isinstance(value, type)
        or typing.get_origin(value) is not None
        or value is Any
        or isinstance(value, typing.TypeVar | types.UnionType)
    )


def from_annotation(annotation: object, *, where: str = "parameter") -> Spec:
    """Compile a Python annotation into a spec.

    Raises:
        OptionsTypeError: pydantic cannot validate values of this type.
    """
    try:
        return _compile(annotation)
    except (PydanticUserError, TypeError, ValueError, NameError) as exc:
        if isinstance(exc, OptionsTypeError):
            raise
        raise OptionsTypeError(
            f"{where}: cannot validate values of type {_label(annotation)} "
            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); use a JSON "
            "type, a typing form or a pydantic model"
        ) from exc


def _compile(annotation: Any) -> Spec:
    if _hashable(annotation):
        return _cached_spec(annotation)
    return _build_spec(annotation)  # unhashable metadata (Annotated[..., {...}])


def _build_spec(annotation: Any) -> Spec:
    if isinstance(annotation, type) and annotation in _BASIC:
        kind = _BASIC[annotation]
        return Spec(kind, kind)
    if annotation is list:
        return Spec("list", "list")
    if annotation is dict:
        return Spec("dict", "dict")
    if annotation is Any or annotation is object:
        return Spec("any", "any")
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = tuple(a for a in args if a is not type(None))
        inner = _compile(rest[0] if len(rest) == 1 else typing.Union[rest])  # noqa: UP007
        return replace(inner, label=f"{inner.label} | None", nullable=True)
    if origin is Literal:
        return replace(_inferred(args), enum=args)
    if origin is list and len(args) == 1:
        items = _compile(args[0])
        return Spec("list", f"list[{items.label}]", items=items)
    # Everything else is validated by pydantic. Build the adapter now, so an unusable type
    # fails when the option is defined, not at the first pick.
    adapter(annotation)
    spec = Spec("model", _label(annotation), annotation=annotation)
    return replace(spec, enum=_members(spec))


_cached_spec = lru_cache(maxsize=1024)(_build_spec)


def _members(spec: Spec) -> tuple[object, ...] | None:
    """Return the JSON values of an Enum type's members, the options the menu shows for it.

    ``None`` when the type is no Enum, or when its members cannot all be offered as JSON
    values pydantic takes back (a tuple value, which JSON sends as a list). A ``Flag`` takes
    combinations of its members too, so listing the members would forbid valid values.
    """
    annotation = spec.annotation
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if not isinstance(annotation, type) or not issubclass(annotation, enum.Enum):
        return None
    if issubclass(annotation, enum.Flag):
        return None
    try:
        values = tuple(to_jsonable_python(member.value) for member in annotation)
        for value in values:
            check(spec, value, "value")
    except (TypeError, ValueError, FieldError):
        return None
    return values or None


def _label(annotation: object) -> str:
    """Write a type as a reader would: ``int | None``, ``dict[str, int]``, ``Item``."""
    if annotation is None or annotation is type(None):
        return "None"
    if annotation is Any:
        return "any"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _label(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_label(a) for a in args)
    if origin is Literal:
        return _inferred(args).label
    if origin is not None and args:
        name = getattr(origin, "__name__", None) or _label(origin)
        return f"{name}[{', '.join('...' if a is Ellipsis else _label(a) for a in args)}]"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _hashable(annotation: object) -> bool:
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
        text = _placeholder_json(annotation) if _hashable(annotation) else None
        return json.loads(text) if text is not None else _from_json_schema(annotation)
    except (PydanticUserError, TypeError, ValueError):
        return f"<{label}>"  # a type without a JSON Schema still gets a readable hint


@lru_cache(maxsize=1024)
def _placeholder_json(annotation: object) -> str:
    # Cached as text: callers get a fresh object each time and may change it freely.
    return json.dumps(_from_json_schema(annotation))


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


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
