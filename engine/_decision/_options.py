"""Option containers normalised into :class:`Option` records (docs/decisions.md §2).

Dict form ``{name: handler}`` and list form ``[item, ...]`` both come out as one tuple of
options, each with a name, a kind, a description and its model-visible fields. Callable
options are read once and cached, so offering the same functions again costs a lookup.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine._base import OptionsTypeError, OptionsValueError
from engine._decision._params import FunctionSpec, Param, describe, function_spec
from engine._decision._render import render_block
from engine._decision._schema import from_schema
from engine._decision._spec import Spec

__all__ = ["SCALARS", "FieldCheck", "Option", "OptionKind", "normalise"]

OptionKind = Literal["function", "value", "text", "schema"]


@dataclass(frozen=True, slots=True, eq=False)
class Option:
    """One entry of a decision's menu, with its rendered block of the menu text."""

    name: str
    kind: OptionKind
    description: str | None
    fields: tuple[Param, ...]
    handler: object = None
    function: FunctionSpec | None = None
    block: str = ""
    #: Whether this object is shared through a cache (so menus made of such options can be
    #: cached too, by identity).
    shared: bool = False
    #: The names of the fields the model must fill.
    required: frozenset[str] = frozenset()
    #: Each field compiled for validation, in order: its name, the one type whose values
    #: pass it unchanged (``None``: every value is checked in full), whether ``null`` means
    #: its default, and its spec.
    checks: tuple[FieldCheck, ...] = ()

    @classmethod
    def make(
        cls,
        name: str,
        kind: OptionKind,
        description: str | None,
        fields: tuple[Param, ...] = (),
        handler: object = None,
        function: FunctionSpec | None = None,
        *,
        shared: bool = False,
    ) -> Option:
        """Build an option and render its block."""
        block = render_block(name, description, fields)
        required = frozenset(p.name for p in fields if p.required or kind == "schema")
        checks = tuple(_field_check(p) for p in fields)
        return cls(
            name, kind, description, fields, handler, function, block, shared, required, checks
        )

    @property
    def field_names(self) -> frozenset[str]:
        """Names the model may fill (visible parameters or schema fields)."""
        return frozenset(p.name for p in self.fields)

    @property
    def param_names(self) -> frozenset[str]:
        """Names a flattened pick may use: every parameter of a function, else the fields."""
        if self.function is not None:
            return frozenset(p.name for p in self.function.params)
        return self.field_names


#: A field compiled for validation (see :attr:`Option.checks`).
FieldCheck = tuple[str, type | None, bool, Spec]

# A value of exactly this type passes a basic field with no enum as it is (a float field
# turns an int into a float, so only a float passes it unchanged).
_PASSES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}


def _field_check(param: Param) -> FieldCheck:
    spec = param.spec
    exact = _PASSES.get(spec.kind) if spec.enum is None else None
    return (param.name, exact, param.has_default, spec)


def normalise(options: object) -> tuple[Option, ...]:
    """Normalise an option container.

    Raises:
        OptionsTypeError: The container, an item, a handler or a schema has the wrong shape.
        OptionsValueError: The container is empty, or two options share a name.
    """
    if isinstance(options, dict):
        items = [_from_entry(name, handler) for name, handler in options.items()]
    elif isinstance(options, list | tuple):
        items = [_from_item(item, i) for i, item in enumerate(options)]
    else:
        raise OptionsTypeError(f"options must be a dict or list, got {type(options).__name__}")
    if not items:
        raise OptionsValueError("options is empty; offer at least one option")
    seen: set[str] = set()
    for option in items:
        if option.name in seen:
            raise OptionsValueError(f"two options are named {option.name!r}; names must be unique")
        seen.add(option.name)
    return tuple(items)


def _from_entry(name: object, handler: object) -> Option:
    if not isinstance(name, str) or not name:
        raise OptionsTypeError(
            f"option keys must be option names (non-empty strings), got {name!r}"
        )
    if callable(handler):
        return _function(name, handler, None)
    if isinstance(handler, tuple) and len(handler) == 2:
        first, second = handler
        if callable(first) and (second is None or isinstance(second, str)):
            return _function(name, first, second)
        if isinstance(first, str) and isinstance(second, dict):
            return _schema(name, first, second)
        if isinstance(second, str):
            return _value(name, first, second or None)
        raise OptionsTypeError(
            f"option {name!r}: a 2-tuple handler must be (callable, description), "
            "(description, schema) or (value, description); wrap a tuple value in a list"
        )
    return _value(name, handler, None)


def _value(name: str, value: object, description: str | None) -> Option:
    if type(value) in SCALARS and value == value:  # NaN never equals a cache key
        # Scalars (the common routing markers) are immutable: one option object serves
        # every call, which also lets the menu built from it be cached.
        return _cached_value(name, type(value).__name__, value, description)
    return Option.make(name, "value", description, (), value)


#: The immutable types of routing markers.
SCALARS = frozenset({str, int, float, bool, type(None)})


@functools.lru_cache(maxsize=4096)
def _cached_value(name: str, kind: str, value: object, description: str | None) -> Option:
    # ``kind`` is part of the key: 1, 1.0 and True are equal and hash alike, yet are
    # different values to hand back.
    return Option.make(name, "value", description, (), value, shared=True)


def _from_item(item: object, index: int) -> Option:
    if callable(item):
        return _function(_name_of(item, index), item, None)
    if isinstance(item, str):
        return _text(item, None, (), index)
    if isinstance(item, tuple):
        if not item:
            raise OptionsTypeError(f"options[{index}] is an empty tuple; give at least a name")
        head = item[0]
        second = item[1] if len(item) > 1 else None
        if callable(head):
            return _function(
                _name_of(head, index), head, second if isinstance(second, str) else None
            )
        if isinstance(head, str):
            return _text(head, second, item[2:3], index)
        raise OptionsTypeError(
            f"options[{index}]: a tuple option starts with a callable or a name, got {head!r}"
        )
    raise OptionsTypeError(
        f"options[{index}]: expected a callable, a name or a tuple, got {type(item).__name__}"
    )


def _text(name: str, description: object, schema: tuple[object, ...], index: int) -> Option:
    """Build a text option, or a schema option when ``schema`` holds the tuple's third item."""
    if not name:
        raise OptionsTypeError(f"options[{index}]: option names must be non-empty")
    if description is not None and not isinstance(description, str):
        raise OptionsTypeError(
            f"options[{index}]: the description must be a string, got {description!r}"
        )
    if not schema:
        return _cached_text(name, description or None)
    if not isinstance(schema[0], dict):
        raise _not_a_schema(name, description, schema[0])
    return _schema(name, description or "", schema[0])


def _not_a_schema(name: str, description: str | None, schema: object) -> OptionsTypeError:
    if schema is None:
        # None is no "no fields" marker (it would hide a schema variable left unset): an
        # option without fields leaves the third item out.
        shown = (name, description) if description else name
        fix = f"got None; for an option without fields leave it out: {shown!r}"
    else:
        fix = f"got {type(schema).__name__}; write a dict {{field: spec}}"
    return OptionsTypeError(f"option {name!r}: the schema must be a dict, {fix}")


@functools.lru_cache(maxsize=4096)
def _cached_text(name: str, description: str | None) -> Option:
    return Option.make(name, "text", description, shared=True)


def _schema(name: str, description: str, schema: dict[Any, Any]) -> Option:
    if "decision" in schema:
        raise OptionsTypeError(
            f"option {name!r}: a schema field may not be named 'decision' (the result uses "
            "that key for the option's name); rename it"
        )
    try:
        key = (name, description, _freeze(schema))
    except TypeError:  # something unhashable inside: compile it afresh
        return _build_schema(name, description, schema, shared=False)
    # Schemas are usually dict literals rebuilt on every call: found again by their
    # content, they cost a walk instead of a compile, a render and a JSON Schema.
    option = _SCHEMAS.get(key)
    if option is None:
        if len(_SCHEMAS) >= _SCHEMAS_MAX:
            _SCHEMAS.clear()
        option = _SCHEMAS[key] = _build_schema(name, description, schema, shared=True)
    return option


def _build_schema(name: str, description: str, schema: dict[Any, Any], *, shared: bool) -> Option:
    fields = tuple(
        Param(field, spec) for field, spec in from_schema(schema, where=f"option {name!r}")
    )
    return Option.make(name, "schema", description or None, fields, shared=shared)


_SCHEMAS: dict[tuple[Any, ...], Option] = {}
_SCHEMAS_MAX = 4096


def _freeze(value: object) -> object:
    """Return a hashable key that equals another's only for the same schema."""
    if isinstance(value, dict):
        return ("{", tuple((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("[" if isinstance(value, list) else "(", tuple(_freeze(v) for v in value))
    hash(value)  # raises TypeError for what cannot be a key
    # The type is part of the key: 1, 1.0 and True are equal, yet different specs.
    return (type(value), value)


def _name_of(fn: object, index: int) -> str:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name or name == "<lambda>":
        raise OptionsTypeError(
            f"options[{index}]: {fn!r} has no usable __name__; use the dict form to name it"
        )
    return name


def _function(name: str, fn: object, description: str | None) -> Option:
    try:
        return _cached_function(name, id(fn), fn, description or None)
    except TypeError as exc:
        if isinstance(exc, OptionsTypeError):
            raise
        return _build_function(name, fn, description or None, shared=False)  # unhashable


@functools.lru_cache(maxsize=2048)
def _cached_function(name: str, key: int, fn: object, description: str | None) -> Option:
    # Keyed by identity too: two equal callables (frozen dataclass instances) are still two
    # handlers, and the pick must hand back the very object that was offered. The cache holds
    # ``fn``, so its id cannot be reused while the entry lives.
    return _build_function(name, fn, description)


def _build_function(
    name: str, fn: object, description: str | None, *, shared: bool = True
) -> Option:
    assert callable(fn)
    spec = function_spec(_as_callable(fn), where=f"option {name!r}")
    description = description or spec.description or describe(fn)
    return Option.make(name, "function", description, spec.visible, fn, spec, shared=shared)


def _as_callable(fn: object) -> Callable[..., Any]:
    assert callable(fn)
    return fn
