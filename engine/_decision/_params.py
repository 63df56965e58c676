"""Parameter specs of function options, read from signatures and ``@agentic_function`` metadata.

Types come from the annotations, resolved with :func:`typing.get_type_hints` so modules with
``from __future__ import annotations`` validate too. Runtime-class parameters receive the
runtime, hidden ones come from the call's context, and only the rest is shown to the model.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine._context import RUNTIME_PARAMS
from engine._decision._spec import Spec, from_annotation, from_spec
from engine._errors import OptionsTypeError

__all__ = ["AGENTIC_ATTR", "FunctionSpec", "Param", "describe", "function_spec"]

#: Attribute under which ``@agentic_function`` stores its metadata on the wrapper.
AGENTIC_ATTR = "__agentic__"

Source = Literal["llm", "hidden", "runtime"]
_EMPTY: Any = inspect.Parameter.empty


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

    @property
    def visible(self) -> tuple[Param, ...]:
        """The parameters the model sees and fills."""
        return tuple(p for p in self.params if p.source == "llm")


def describe(obj: object) -> str | None:
    """Return the docstring up to its first blank line, on one line, or ``None``."""
    target = obj.func if isinstance(obj, functools.partial) else obj
    doc = inspect.getdoc(target) if callable(target) else None
    if not doc:
        return None
    head = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in head.splitlines()) or None


def function_spec(fn: Callable[..., Any], *, where: str) -> FunctionSpec:
    """Read the parameter specs of a callable option.

    Raises:
        OptionsTypeError: A parameter is positional-only, or its annotation cannot be
            resolved or validated.
    """
    meta: Mapping[str, Any] = getattr(fn, AGENTIC_ATTR, None) or {}
    inputs: Mapping[str, Mapping[str, Any]] = meta.get("input") or {}
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise OptionsTypeError(f"{where}: cannot read the signature of {fn!r}") from exc
    hints = _hints(fn, where)
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
    return FunctionSpec(tuple(params), var_keyword, description, _is_async(fn))


def _param(p: inspect.Parameter, annotation: object, extra: Mapping[str, Any], where: str) -> Param:
    if p.name in RUNTIME_PARAMS:
        source: Source = "runtime"
    elif extra.get("hidden"):
        source = "hidden"
    else:
        source = "llm"
    if annotation is _EMPTY or annotation is None:
        spec = Spec("str", "str")
    else:
        spec = from_annotation(annotation, where=f"{where}: parameter {p.name!r}")
    if extra:
        spec = _with_meta(spec, extra, f"{where}: parameter {p.name!r}")
    return Param(p.name, spec, source, p.default is _EMPTY, p.default)


def _with_meta(spec: Spec, extra: Mapping[str, Any], where: str) -> Spec:
    unknown = set(extra) - {"description", "options", "hidden"}
    if unknown:
        raise OptionsTypeError(
            f"{where}: unknown input keys {sorted(unknown)}; use description, options, hidden"
        )
    if "options" in extra:
        meta = {"options": extra["options"]}
        enum = from_spec(meta, where=where).enum
    else:
        enum = spec.enum
    return Spec(
        spec.kind,
        spec.label,
        extra.get("description", spec.description),
        enum,
        spec.items,
        spec.fields,
        spec.nullable,
        spec.annotation,
    )


def _hints(fn: Callable[..., Any], where: str) -> dict[str, Any]:
    target: Any = inspect.unwrap(fn.func if isinstance(fn, functools.partial) else fn)
    if isinstance(target, type):
        target = target.__init__  # type: ignore[misc]
    elif not inspect.isroutine(target) and callable(target):
        target = type(target).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise OptionsTypeError(
            f"{where}: cannot resolve the annotations of {fn!r} ({exc}); import the names "
            "they use at module level"
        ) from exc


def _is_async(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    inner = getattr(fn, "func", None) if isinstance(fn, functools.partial) else None
    if inner is not None and inspect.iscoroutinefunction(inner):
        return True
    if inspect.isroutine(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)
