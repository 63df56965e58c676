"""Flows by name: how a run records its flow, and how a resume finds it again."""

from __future__ import annotations

import functools
import importlib
import inspect
import typing
from collections.abc import Mapping
from typing import Any, NamedTuple

from engine._base import Flow, JournalError, from_json, to_json

__all__ = ["FLOWS", "FlowRegistry", "decode_input", "encode_input", "flow_name"]


class _Signature(NamedTuple):
    """What decoding a flow's stored input needs of its signature."""

    positional: list[str]
    named: frozenset[str]
    var_positional: str | None
    var_keyword: str | None
    hints: dict[str, Any]


@functools.lru_cache(maxsize=256)
def _parameters(flow: Flow) -> _Signature:
    # Resolving annotations evaluates strings (postponed annotations): once per flow.
    params = list(inspect.signature(flow).parameters.values())
    kinds = inspect.Parameter
    return _Signature(
        [p.name for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)],
        frozenset(
            p.name for p in params if p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)
        ),
        next((p.name for p in params if p.kind is kinds.VAR_POSITIONAL), None),
        next((p.name for p in params if p.kind is kinds.VAR_KEYWORD), None),
        typing.get_type_hints(inspect.unwrap(flow)),
    )


def flow_name(flow: Flow) -> str:
    """Return ``module:qualname`` for a flow."""
    module = getattr(flow, "__module__", None)
    qualname = getattr(flow, "__qualname__", None)
    if not module or not qualname:
        raise TypeError(f"a flow must be a function with a module and a name, got {flow!r}")
    return f"{module}:{qualname}"


class FlowRegistry:
    """The flows this process has run, found again by name; others by import."""

    def __init__(self) -> None:
        self._flows: dict[str, Flow] = {}

    def remember(self, flow: Flow) -> str:
        """Remember ``flow`` and return its name."""
        name = flow_name(flow)
        self._flows[name] = flow
        return name

    def find(self, name: str, explicit: Flow | None = None) -> Flow:
        """Find a flow: ``explicit`` first, then the ones run here, then by import.

        Raises:
            LookupError: None of the three gives the flow.
        """
        if explicit is not None:
            self.remember(explicit)
            return explicit
        if name in self._flows:
            return self._flows[name]
        flow = _import(name)
        if flow is None:
            raise LookupError(
                f"cannot find flow {name!r}: this process has not run it and it cannot be "
                "imported (a flow defined inside a function, or in __main__); pass flow= to "
                "resume it"
            )
        self._flows[name] = flow
        return flow


#: The flows this process has run, shared by every engine in it.
FLOWS = FlowRegistry()


def _import(name: str) -> Flow | None:
    module_name, _, qualname = name.partition(":")
    if not qualname or "<locals>" in qualname or module_name == "__main__":
        return None
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj if callable(obj) else None


def encode_input(
    flow_label: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Return the JSON form of a flow's arguments, so a resume can call it again."""
    return {
        "args": [to_json(a, what=f"argument {i} of flow {flow_label}") for i, a in enumerate(args)],
        "kwargs": {
            k: to_json(v, what=f"argument {k!r} of flow {flow_label}") for k, v in kwargs.items()
        },
    }


def decode_input(flow: Flow, data: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Validate stored arguments back against the flow's parameter annotations."""
    try:
        sig = _parameters(flow)
    except (TypeError, ValueError, NameError) as exc:
        raise JournalError(f"cannot read the signature of flow {flow!r}") from exc
    hints, empty = sig.hints, inspect.Signature.empty

    def positional(i: int) -> object:  # beyond the named ones: *args's item annotation
        name = sig.positional[i] if i < len(sig.positional) else sig.var_positional
        return hints.get(name, empty) if name is not None else empty

    def keyword(key: str) -> object:  # not a parameter of its own: **kwargs's annotation
        name = key if key in sig.named or sig.var_keyword is None else sig.var_keyword
        return hints.get(name, empty)

    args = [
        from_json(value, positional(i), what=f"argument {i}")
        for i, value in enumerate(data.get("args", []))
    ]
    kwargs = {
        k: from_json(v, keyword(k), what=f"argument {k!r}")
        for k, v in data.get("kwargs", {}).items()
    }
    return args, kwargs
