"""Python annotations compiled to :class:`~engine._decision._spec.Spec` trees.

``int | None``, ``list[str]``, ``Literal[...]``, Enum types and pydantic models all become
specs; whatever is not a basic JSON form is validated by pydantic, whose adapter is built
when the spec is, so an unusable type fails when an option is defined. Every type pydantic
cannot validate is an :class:`~engine.OptionsTypeError` (a ``TypeError``).
"""

from __future__ import annotations

import enum
import types
import typing
from dataclasses import replace
from functools import lru_cache
from typing import Any, Literal

from pydantic.errors import PydanticUserError
from pydantic_core import to_jsonable_python

from engine._base import OptionsTypeError
from engine._decision._check import FieldError, check
from engine._decision._spec import BASIC, Spec, adapter, cache_key, hashable

__all__ = ["from_annotation", "inferred", "is_annotation"]


def is_annotation(value: object) -> bool:
    """Whether ``value`` is a type or a typing form (not a schema-language value)."""
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
    if hashable(annotation):
        return _cached_spec(cache_key(annotation))
    return _build_spec(annotation)  # unhashable metadata (Annotated[..., {...}])


def _build_spec(annotation: Any) -> Spec:
    if isinstance(annotation, type) and annotation in BASIC:
        kind = BASIC[annotation]
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
        return replace(inferred(args), enum=args)
    if origin is list and len(args) == 1:
        items = _compile(args[0])
        return Spec("list", f"list[{items.label}]", items=items)
    # Everything else is validated by pydantic. Build the adapter now, so an unusable type
    # fails when the option is defined, not at the first pick.
    adapter(annotation)
    spec = Spec("model", _label(annotation), annotation=annotation)
    return replace(spec, enum=_members(spec))


@lru_cache(maxsize=1024)
def _cached_spec(key: Any) -> Spec:
    return _build_spec(key[0] if isinstance(key, tuple) else key)


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
        return inferred(args).label
    if origin is not None and args:
        name = getattr(origin, "__name__", None) or _label(origin)
        return f"{name}[{', '.join('...' if a is Ellipsis else _label(a) for a in args)}]"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def inferred(enum: tuple[object, ...]) -> Spec:
    """Infer a spec's type from its enum values when they share one type."""
    kinds = list(dict.fromkeys(type(v) for v in enum))
    if len(kinds) == 1 and (kind := BASIC.get(kinds[0])) is not None:
        return Spec(kind, kind)
    # Mixed values: the enum alone decides; the label still tells the reader what may come.
    return Spec("any", " | ".join(_label(k) for k in kinds))
