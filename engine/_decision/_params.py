"""Parameter specs of function options, read from signatures and ``@agentic_function`` metadata.

Types come from the annotations, resolved with :func:`typing.get_type_hints` so modules with
``from __future__ import annotations`` validate too. Runtime-class parameters receive the
runtime, hidden ones come from the call's context, and only the rest is shown to the model.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine._base import RUNTIME_PARAMS, OptionsTypeError
from engine._decision._annotations import from_annotation
from engine._decision._schema import from_spec, with_enum
from engine._decision._spec import Spec

__all__ = [
    "AGENTIC_ATTR",
    "EMPTY",
    "FunctionSpec",
    "Param",
    "describe",
    "function_spec",
    "return_annotation",
]

#: Attribute under which ``@agentic_function`` stores its metadata on the wrapper.
AGENTIC_ATTR = "__agentic__"

Source = Literal["llm", "hidden", "runtime"]
EMPTY: Any = inspect.Parameter.empty
_EMPTY = EMPTY
_OPAQUE = Spec("any", "any")


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter (or schema field) of an option."""

    name: str
    spec: Spec
    source: Source = "llm"
    required: bool = True
    default: object = _EMPTY

    @property
    def has_default(self) -> bool:
        """Whether the parameter declares a default."""
        return self.default is not _EMPTY


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """What the decision core needs to know about a callable option."""

    params: tuple[Param, ...]
    var_keyword: bool
    description: str | None
    is_async: bool
    #: What ``@agentic_function`` declared on the callable (its ``__agentic__``), if anything.
    meta: Mapping[str, Any] | None = dataclasses.field(default=None, compare=False)
    #: Whether binding adds arguments the model never fills (runtime or hidden ones).
    binds: bool = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "binds", any(p.source != "llm" for p in self.params))

    @property
    def visible(self) -> tuple[Param, ...]:
        """The parameters the model sees and fills."""
        return tuple(p for p in self.params if p.source == "llm")


def describe(obj: object) -> str | None:
    """Return the docstring up to its first blank line, on one line, or ``None``.

    Only the object's own docstring counts: a class does not borrow its base's (a pydantic
    model would otherwise be described by ``BaseModel``'s), and a callable instance without
    a class docstring is described by its ``__call__``.
    """
    target = obj.func if isinstance(obj, functools.partial) else obj
    doc = _own_doc(target)
    if not doc:
        return None
    head = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(line.strip() for line in head.splitlines()) or None


def _own_doc(target: object) -> str | None:
    if isinstance(target, type):
        doc = target.__dict__.get("__doc__")
        # A dataclass without a docstring gets its signature as one; that is no description.
        if dataclasses.is_dataclass(target) and doc and doc.startswith(f"{target.__name__}("):
            return None
        return doc if isinstance(doc, str) else None
    if inspect.isroutine(target) or not callable(target):
        return getattr(target, "__doc__", None)
    cls = type(target)
    return cls.__dict__.get("__doc__") or getattr(cls.__call__, "__doc__", None)


def function_spec(fn: Callable[..., Any], *, where: str) -> FunctionSpec:
    """Read the parameter specs of a callable option.

    Raises:
        OptionsTypeError: A parameter is positional-only, or the annotation of a parameter
            the model fills cannot be resolved or validated.
    """
    declared: Mapping[str, Any] | None = getattr(fn, AGENTIC_ATTR, None)
    meta: Mapping[str, Any] = declared or {}
    inputs: Mapping[str, Mapping[str, Any]] = meta.get("input") or {}
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise OptionsTypeError(f"{where}: cannot read the signature of {fn!r}") from exc
    hints = _hints(fn, signature)
    params: list[Param] = []
    var_keyword = False
    for p in signature.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_keyword = True
        elif p.kind is p.POSITIONAL_ONLY:
            raise OptionsTypeError(
                f"{where}: parameter {p.name!r} is positional-only, so the model cannot pass "
                "it by name; make it a regular or keyword-only parameter"
            )
        elif p.kind is not p.VAR_POSITIONAL:
            params.append(_param(p, hints.get(p.name, _EMPTY), inputs.get(p.name, {}), where))
    description = meta.get("description") or describe(fn)
    return FunctionSpec(tuple(params), var_keyword, description, _is_async(fn), declared)


def _param(p: inspect.Parameter, annotation: object, extra: Mapping[str, Any], where: str) -> Param:
    where = f"{where}: parameter {p.name!r}"
    if p.name in RUNTIME_PARAMS:
        source: Source = "runtime"
    elif extra.get("hidden"):
        source = "hidden"
    else:
        source = "llm"
    if source != "llm":
        # The model never fills these, so their types (a Runtime, a database handle) need
        # no JSON form and are not compiled.
        spec = _OPAQUE
    elif isinstance(annotation, _Unresolved):
        raise OptionsTypeError(
            f"{where}: cannot resolve its annotation {annotation.text!r} ({annotation.error}); "
            "import the names it uses at module level"
        )
    elif annotation is _EMPTY:
        # Unannotated means str, unless an enum says what its values are.
        spec = from_spec({"options": extra["options"]} if "options" in extra else {}, where=where)
    else:
        spec = from_annotation(annotation, where=where)
    if extra:
        spec = _with_meta(spec, extra, where)
    return Param(p.name, spec, source, p.default is _EMPTY, p.default)


def _with_meta(spec: Spec, extra: Mapping[str, Any], where: str) -> Spec:
    unknown = set(extra) - {"description", "options", "hidden"}
    if unknown:
        raise OptionsTypeError(
            f"{where}: unknown input keys {sorted(unknown)}; use description, options, hidden"
        )
    if "options" in extra:
        spec = with_enum(spec, extra["options"], where)
    if "description" in extra:
        spec = dataclasses.replace(spec, description=extra["description"])
    return spec


@dataclass(frozen=True, slots=True)
class _Unresolved:
    """An annotation that could not be resolved; fatal only for a parameter the model fills."""

    text: str
    error: str


def _hints(fn: Callable[..., Any], signature: inspect.Signature) -> dict[str, Any]:
    """Resolve the annotations of the signature's parameters.

    ``typing.get_type_hints`` reads postponed (string) annotations. For a class the hints of
    its ``__init__`` come first; parameters it does not annotate (a pydantic model's
    ``**data``) keep the already-evaluated annotations of the signature.
    """
    target = _annotated(fn)
    hints = _resolve(target)
    for p in signature.parameters.values():
        if p.name not in hints and p.annotation is not _EMPTY and not isinstance(p.annotation, str):
            hints[p.name] = p.annotation
    return hints


def return_annotation(fn: Callable[..., Any]) -> object:
    """Resolve ``fn``'s return annotation as its parameters' are (a postponed one too).

    An annotation that cannot be resolved comes back as its text; a class (whose
    ``__init__`` returns ``None``) and an unannotated callable give ``inspect.Parameter.empty``.
    """
    target = _annotated(fn)
    if target is None or isinstance(inspect.unwrap(fn), type):
        return _EMPTY
    hint = _resolve(target).get("return", _EMPTY)
    return hint.text if isinstance(hint, _Unresolved) else hint


def _annotated(fn: Callable[..., Any]) -> Any:
    """Return the function whose ``__annotations__`` describe ``fn``'s parameters."""
    target: Any = inspect.unwrap(fn.func if isinstance(fn, functools.partial) else fn)
    if isinstance(target, type):
        for name in ("__init__", "__new__"):
            method = getattr(target, name, None)
            if inspect.isfunction(method):
                return method
        return None
    if not inspect.isroutine(target) and callable(target):
        return type(target).__call__
    return target


def _resolve(target: Any) -> dict[str, Any]:
    if target is None:
        return {}
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # any error of a user's annotation; retried one by one below
        pass
    # One bad annotation (often a type imported only under TYPE_CHECKING, on a runtime or
    # hidden parameter) must not sink the others: resolve each one on its own.
    hints: dict[str, Any] = {}
    namespace = getattr(target, "__globals__", {})
    for name, annotation in getattr(target, "__annotations__", {}).items():
        probe = types.SimpleNamespace(__annotations__={name: annotation}, __globals__=namespace)
        try:
            hints.update(typing.get_type_hints(probe, include_extras=True))
        except Exception as exc:  # a user annotation may raise anything on evaluation
            hints[name] = _Unresolved(str(annotation), f"{type(exc).__name__}: {exc}")
    return hints


def _is_async(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    inner = getattr(fn, "func", None) if isinstance(fn, functools.partial) else None
    if inner is not None and inspect.iscoroutinefunction(inner):
        return True
    if inspect.isroutine(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)
