"""The schema language and parameter types, compiled to :class:`Spec` trees, and validation.

A spec says what one JSON value must look like. Schema-language values (``str``, ``"a
description"``, ``[spec]``, meta-specs, nested objects) and Python annotations (``int |
None``, ``list[str]``, ``Literal[...]``, pydantic models) both compile to the same tree, so
the menu, the JSON Schema and validation read one structure. Basic kinds are checked here
with the spec's rules (``bool`` is not a number, an ``int`` is a valid ``float``, no string
to number coercion); every other type is validated by pydantic in strict JSON mode.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError

from engine._errors import OptionsTypeError

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
        if self.kind == "object" or self.fields:
            return {name: spec.placeholder() for name, spec in self.fields}
        if self.kind == "dict":
            return {}
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
            return _adapter(self.annotation).json_schema()
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
        base = from_spec(meta["type"], where=where)
    elif enum is not None:
        base = _inferred(enum)
    else:
        base = Spec("str", "str")
    return Spec(
        base.kind,
        base.label,
        description or base.description,
        enum if enum else base.enum,
        base.items,
        base.fields,
        base.nullable,
        base.annotation,
    )


def _enum_of(meta: dict[str, Any], where: str) -> tuple[object, ...] | None:
    if "options" not in meta:
        return None
    options = meta["options"]
    if not isinstance(options, list | tuple) or not options:
        raise OptionsTypeError(f"{where}: options must be a non-empty list, got {_show(options)}")
    return tuple(options)


def _inferred(enum: tuple[object, ...]) -> Spec:
    """Infer a spec's type from its enum values when they share one type."""
    kinds = {type(v) for v in enum}
    if len(kinds) == 1 and (kind := _BASIC.get(kinds.pop())) is not None:
        return Spec(kind, kind)
    return Spec("any", "any")


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
    """Compile a Python annotation into a spec."""
    try:
        hash(annotation)
    except TypeError:
        build = _build_spec  # unhashable metadata (Annotated[..., {...}]): compile uncached
    else:
        build = _from_annotation
    try:
        return build(annotation)
    except (PydanticSchemaGenerationError, TypeError) as exc:
        if isinstance(exc, OptionsTypeError):
            raise
        raise OptionsTypeError(
            f"{where}: cannot validate values of type {annotation!r}; use a JSON type, a "
            "typing form or a pydantic model"
        ) from exc


def _build_spec(annotation: Any) -> Spec:
    if annotation in _BASIC:
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
        inner = _from_annotation(rest[0] if len(rest) == 1 else typing.Union[rest])  # noqa: UP007
        return Spec(
            inner.kind,
            f"{inner.label} | None",
            inner.description,
            inner.enum,
            inner.items,
            inner.fields,
            True,
            inner.annotation,
        )
    if origin is Literal:
        base = _inferred(args)
        return Spec(base.kind, base.label, enum=args)
    if origin is list and len(args) == 1:
        items = _from_annotation(args[0])
        return Spec("list", f"list[{items.label}]", items=items)
    # Build the adapter now, so an unusable type fails at registration, not at the first pick.
    TypeAdapter(annotation) if _unhashable(annotation) else _adapter(annotation)
    fields: tuple[tuple[str, Spec], ...] = ()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = tuple(
            (name, from_annotation(f.annotation, where=name))
            for name, f in annotation.model_fields.items()
        )
    return Spec("model", _label(annotation), fields=fields, annotation=annotation)


_from_annotation = lru_cache(maxsize=1024)(_build_spec)


def _label(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _unhashable(annotation: object) -> bool:
    try:
        hash(annotation)
    except TypeError:
        return True
    return False


@lru_cache(maxsize=1024)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


# ---------------------------------------------------------------------------------------------
# Validation


class FieldError(Exception):
    """One value failed its spec; ``kind`` is the decision failure kind."""

    def __init__(self, kind: str, path: str, message: str) -> None:
        self.kind = kind
        self.path = path
        super().__init__(message)


def check(spec: Spec, value: object, path: str) -> object:
    """Validate ``value`` against ``spec`` and return it (converted where pydantic converts).

    Raises:
        FieldError: ``type_mismatch``, ``enum_violation`` or ``missing_required``, with the
            offending path (``steps[0].action``).
    """
    if value is None:
        if spec.nullable or spec.kind == "any":
            return None
        raise FieldError("type_mismatch", path, f"{path}: expected {spec.label}, got null")
    kind = spec.kind
    if kind == "model":
        value = _check_model(spec, value, path)
    elif kind == "object":
        value = _check_object(spec, value, path)
    elif kind == "list":
        value = _check_list(spec, value, path)
    elif not _TYPE_OK[kind](value):
        raise FieldError(
            "type_mismatch", path, f"{path}: expected {spec.label}, got {_json_type(value)}"
        )
    elif kind == "float":
        value = float(value)  # type: ignore[arg-type]
    if spec.enum is not None and not _in_enum(value, spec.enum):
        allowed = ", ".join(json.dumps(v) for v in spec.enum)
        raise FieldError("enum_violation", path, f"{path}: {_dump(value)} is not one of {allowed}")
    return value


def _check_list(spec: Spec, value: object, path: str) -> object:
    if not isinstance(value, list):
        raise FieldError(
            "type_mismatch", path, f"{path}: expected {spec.label}, got {_json_type(value)}"
        )
    if spec.items is None:
        return value
    return [check(spec.items, item, f"{path}[{i}]") for i, item in enumerate(value)]


def _check_object(spec: Spec, value: object, path: str) -> object:
    if not isinstance(value, dict):
        raise FieldError(
            "type_mismatch", path, f"{path}: expected an object, got {_json_type(value)}"
        )
    missing = [name for name, _ in spec.fields if name not in value]
    if missing:
        names = ", ".join(f"{path}.{m}" for m in missing)
        raise FieldError("missing_required", path, f"missing required field(s): {names}")
    return {name: check(sub, value[name], f"{path}.{name}") for name, sub in spec.fields}


def _check_model(spec: Spec, value: object, path: str) -> object:
    try:
        return _adapter(spec.annotation).validate_json(json.dumps(value), strict=True)
    except (TypeError, ValueError) as exc:
        if not isinstance(exc, ValidationError):
            raise FieldError("type_mismatch", path, f"{path}: not JSON data") from exc
        first = exc.errors()[0]
        where = path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        kind = {
            "missing": "missing_required",
            "literal_error": "enum_violation",
            "enum": "enum_violation",
        }.get(first["type"], "type_mismatch")
        raise FieldError(kind, where, f"{where}: {first['msg'].lower()}") from None


def _is_int(v: object) -> bool:
    return type(v) is int


_TYPE_OK: dict[str, typing.Callable[[object], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": _is_int,
    "float": lambda v: type(v) is float or type(v) is int,
    "bool": lambda v: type(v) is bool,
    "dict": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}


def _in_enum(value: object, enum: tuple[object, ...]) -> bool:
    is_bool = isinstance(value, bool)
    return any(value == e and isinstance(e, bool) == is_bool for e in enum)


def _json_type(value: object) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _dump(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
