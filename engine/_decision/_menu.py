"""The menu the model reads (docs/decisions.md §5), and the menu as JSON Schema choices."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from engine._decision._options import SCALARS, Option, normalise
from engine._decision._spec import object_schema

__all__ = ["Menu", "build_menu", "render_option", "render_options"]


@dataclass(frozen=True, slots=True)
class Menu:
    """A normalised, rendered menu: what a decision offers."""

    options: tuple[Option, ...]
    text: str
    by_name: dict[str, Option] = field(repr=False)
    #: Things derived from the menu once and reused (the request's choice specs).
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def names(self) -> list[str]:
        """The option names, in menu order."""
        return list(self.by_name)

    def choices(self) -> list[dict[str, Any]]:
        """Return each option as ``{"name", "description", "parameters"}`` (JSON Schema)."""
        return [choice_schema(o) for o in self.options]


def build_menu(options: object) -> Menu:
    """Normalise ``options`` and render the menu; raises before any model call."""
    if isinstance(options, Menu):
        return options
    # The usual case is the same container offered again: a dict or list literal of the
    # same functions and markers. Found by the identity of its entries, it costs a lookup.
    kind = type(options)
    entries: tuple[object, ...] = ()
    if isinstance(options, dict) and kind is dict:
        entries = (*options, *options.values())
    elif isinstance(options, list) and kind is list:
        entries = (*options,)
    key = (kind, *map(id, entries)) if entries else None
    if key is not None:
        seen = _BY_IDENTITY.get(key)
        if seen is not None:
            return seen[1]
    normalised = normalise(options)
    if not all(o.shared for o in normalised):
        return _menu(normalised)
    # Every option is a cached object, so the same options in a new container are found by
    # their identity too.
    menu = _shared_menu(normalised)
    if key is not None and all(map(_stable, entries)):
        if len(_BY_IDENTITY) >= _IDENTITY_SIZE:
            _BY_IDENTITY.clear()
        # The entry holds the entries themselves: while it lives, no other object can take
        # one of their ids.
        _BY_IDENTITY[key] = (entries, menu)
    return menu


def _menu(options: tuple[Option, ...]) -> Menu:
    text = "\n\n".join(o.block for o in options) + "\n"
    return Menu(options, text, {o.name: o for o in options})


_shared_menu = functools.lru_cache(maxsize=2048)(_menu)
_BY_IDENTITY: dict[tuple[object, ...], tuple[tuple[object, ...], Menu]] = {}
_IDENTITY_SIZE = 2048


def _stable(entry: object) -> bool:
    # Entries worth keying by identity: names, markers, functions and tuples of them, which
    # a dict literal offers again as the same objects. A schema is a dict that may be new per
    # call (or change in place): it is found by content.
    if type(entry) in SCALARS or callable(entry):
        return True
    return type(entry) is tuple and all(map(_stable, entry))


def render_options(options: object) -> str:
    """Return the menu text for an option container, ending with exactly one newline."""
    return build_menu(options).text


def render_option(option: Option) -> str:
    """Render one option's block of the menu."""
    return option.block


def choice_schema(option: Option) -> dict[str, Any]:
    """Return one option as a JSON Schema choice."""
    required = tuple(p.name for p in option.fields if p.required)
    parameters = object_schema(tuple((p.name, p.spec) for p in option.fields), required)
    defs: dict[str, Any] = {}
    _hoist_defs(parameters, defs)
    if defs:
        parameters["$defs"] = defs
    return {"name": option.name, "description": option.description or "", "parameters": parameters}


def _hoist_defs(node: object, defs: dict[str, Any]) -> None:
    """Move every nested ``$defs`` (a pydantic model's) to the root.

    pydantic writes ``"$ref": "#/$defs/Name"`` relative to the model's own schema; once that
    schema sits inside the parameters, the reference only resolves from the root.
    """
    if isinstance(node, dict):
        nested = node.pop("$defs", None)
        if isinstance(nested, dict):
            defs.update(nested)
            _hoist_defs(nested, defs)
        for value in node.values():
            _hoist_defs(value, defs)
    elif isinstance(node, list):
        for value in node:
            _hoist_defs(value, defs)
