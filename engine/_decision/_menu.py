"""The menu the model reads (DECISION-SPEC §5), and the menu as JSON Schema choices."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine._decision._options import Option, normalise
from engine._decision._spec import object_schema

__all__ = ["Menu", "build_menu", "render_option", "render_options"]


@dataclass(frozen=True, slots=True)
class Menu:
    """A normalised, rendered menu: what a decision offers."""

    options: tuple[Option, ...]
    text: str
    by_name: dict[str, Option] = field(repr=False)

    @property
    def names(self) -> list[str]:
        """The option names, in menu order."""
        return [o.name for o in self.options]

    def choices(self) -> list[dict[str, Any]]:
        """Return each option as ``{"name", "description", "parameters"}`` (JSON Schema)."""
        return [choice_schema(o) for o in self.options]


def build_menu(options: object) -> Menu:
    """Normalise ``options`` and render the menu; raises before any model call."""
    if isinstance(options, Menu):
        return options
    normalised = normalise(options)
    text = "\n\n".join(o.block for o in normalised) + "\n"
    return Menu(normalised, text, {o.name: o for o in normalised})


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
