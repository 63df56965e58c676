"""The schema language compiled to :class:`~engine._decision._spec.Spec` trees.

A schema is ``{field: spec}``; a spec is a type, a description string, ``[spec]``, a
meta-spec (``{"type": ..., "description": ..., "options": [...]}``) or a nested schema.
Every malformed spec is an :class:`~engine.OptionsTypeError` (a ``TypeError``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine._base import OptionsTypeError
from engine._decision._annotations import from_annotation, inferred, is_annotation
from engine._decision._check import FieldError, check
from engine._decision._spec import Spec

__all__ = ["META_KEYS", "from_schema", "from_spec", "with_enum"]

#: The keys of a meta-spec; a dict with only these keys is one, not a nested schema.
META_KEYS = frozenset({"type", "description", "options", "fields", "items"})


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
    if is_annotation(value):
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
        base = inferred(enum)
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


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
