"""Validation of one JSON value against a compiled :class:`~engine._decision._spec.Spec`.

Basic kinds are checked here with the spec's rules (``bool`` is not a number, an ``int`` is
a valid ``float``, no string to number coercion); every other type is validated by pydantic
in strict JSON mode, so the same rules hold inside models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import ValidationError

from engine._decision._numbers import OutOfRange, find_out_of_range
from engine._decision._spec import adapter

if TYPE_CHECKING:
    from engine._decision._spec import Spec

__all__ = ["FieldError", "check"]


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
    # pydantic knows whether its types take null (Annotated[int | None, ...]); ours say so.
    if value is None and (spec.nullable or spec.kind != "model"):
        _check_null(spec, path)
        return None
    kind = spec.kind
    _check_range(spec, value, path)
    if kind == "model":
        if spec.enum is not None and not _enum_type_ok(value, spec.enum):
            raise _mismatch(spec, value, path)  # type before enum, as for every other field
        result = _check_model(spec, value, path)
    elif kind == "object":
        result = _check_object(spec, value, path)
    elif kind == "list":
        result = _check_list(spec, value, path)
    elif not _TYPE_OK[kind](value):
        raise _mismatch(spec, value, path)
    elif kind == "float":
        try:
            result = float(value)  # type: ignore[arg-type]
        except OverflowError:  # an integer of hundreds of digits
            raise FieldError(
                "type_mismatch", path, f"{path}: expected a float, got an integer too large for one"
            ) from None
    else:
        result = value
    # The enum lists JSON values: compare what the model sent, not what pydantic made of it
    # (an Enum member is not equal to its JSON value).
    if spec.enum is not None and not _in_enum(value, spec.enum):
        raise _not_in_enum(spec.enum, value, path)
    return result


def _enum_type_ok(value: object, enum: tuple[object, ...]) -> bool:
    """Tell whether ``value`` has the JSON type of an enum's values (an int is a float)."""
    kinds = {type(e) for e in enum if e is not None}
    return type(value) in kinds or (type(value) is int and float in kinds)


def _check_null(spec: Spec, path: str) -> None:
    if spec.nullable:
        return
    # An enum says exactly which values are allowed, null included or not.
    if spec.enum is not None:
        if any(e is None for e in spec.enum):
            return
        raise _not_in_enum(spec.enum, None, path)
    if spec.kind == "any":
        return
    raise FieldError("type_mismatch", path, f"{path}: expected {spec.label}, got null")


def _check_list(spec: Spec, value: object, path: str) -> object:
    if not isinstance(value, list):
        raise _mismatch(spec, value, path)
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
        return adapter(spec.annotation).validate_json(json.dumps(value), strict=True)
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
        msg = first["msg"]  # only its first letter lowered: it may quote a pattern or a value
        raise FieldError(kind, where, f"{where}: {msg[:1].lower()}{msg[1:]}") from None


#: Kinds whose containers are not walked field by field here.
_OPAQUE = frozenset({"model", "any", "dict"})


def _check_range(spec: Spec, value: object, path: str) -> None:
    """Refuse a number no field can hold, at its own path (docs/decisions.md §7)."""
    if type(value) is OutOfRange:
        raise _out_of_range(spec, value, path)
    kind = spec.kind
    if isinstance(value, dict | list) and (kind in _OPAQUE or (kind == "list" and not spec.items)):
        # Checked as a whole (pydantic, or no check at all): look inside for such a number,
        # so it is named where it is, never passed on.
        found = find_out_of_range(value, path)
        if found is not None:
            raise _out_of_range(None, found[1], found[0])


def _out_of_range(spec: Spec | None, value: OutOfRange, path: str) -> FieldError:
    expected = f"expected {spec.label}, got " if spec is not None else ""
    return FieldError("type_mismatch", path, f"{path}: {expected}{value.describe()}")


def _mismatch(spec: Spec, value: object, path: str) -> FieldError:
    return FieldError(
        "type_mismatch", path, f"{path}: expected {spec.label}, got {_json_type(value)}"
    )


def _not_in_enum(enum: tuple[object, ...], value: object, path: str) -> FieldError:
    allowed = ", ".join(_dump(v) for v in enum)
    return FieldError("enum_violation", path, f"{path}: {_dump(value)} is not one of {allowed}")


def _is_int(v: object) -> bool:
    return type(v) is int


_TYPE_OK: dict[str, Callable[[object], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": _is_int,
    "float": lambda v: type(v) is float or type(v) is int,
    "bool": lambda v: type(v) is bool,
    "dict": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}


def _in_enum(value: object, enum: tuple[object, ...]) -> bool:
    # True == 1 in Python; in JSON they are different values.
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
