"""A decision's menu as a form, and a submitted form read back into a pick.

The menu is the one :func:`engine._decision.describe_menu` stored with the run: each option
with its arguments (readable type, required, default, allowed values, bounds, nested
fields). :func:`option_forms` lays it out as fields a template draws: an enum becomes a
choice, a number a number box with its bounds, a nested object a group of its own fields,
anything else (a list, a union) a JSON text box. :func:`read_pick` reads what was sent back
into ``{"call": ..., "args": {...}}`` and nothing more: the engine then checks it by the
rules any pick is checked by, so a value that does not fit is passed on as it was typed, for
the engine to refuse and name. :func:`field_errors` places the engine's error beside the
field it names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Field", "OptionForm", "field_errors", "option_forms", "read_pick"]

#: The types read from a text box as they are (anything else unknown is read as JSON).
_NUMBERS = {"int": int, "float": float}


@dataclass(slots=True)
class Field:
    """One input of an option's form: where it sits, what it takes, what it shows."""

    name: str  # the form field's name: a.<option>.<path>
    label: str
    path: str  # the argument's path in the pick: to.city
    widget: str  # select, number, text, json, group
    type: str
    required: bool
    description: str | None = None
    choices: list[tuple[str, str]] = field(default_factory=list)  # (value sent, text shown)
    bounds: dict[str, Any] = field(default_factory=dict)
    placeholder: str = ""
    value: str = ""  # what the box holds: a default, the value an approval proposes, or input
    fields: list[Field] = field(default_factory=list)  # a nested object's own fields
    error: str | None = None


@dataclass(slots=True)
class OptionForm:
    """One option of a menu: its name, kind, description and its fields."""

    name: str
    kind: str
    description: str | None
    fields: list[Field]
    error: str | None = None


def option_forms(
    menu: Sequence[Mapping[str, Any]],
    values: Mapping[str, str] | None = None,
    proposed: Mapping[str, Any] | None = None,
) -> list[OptionForm]:
    """Lay out a described menu as forms, one an option.

    Args:
        menu: The described menu (``run.error.menu``, a question's ``menu``).
        values: What a person sent before (its form fields), shown again beside the errors.
        proposed: A pick whose arguments fill its option's boxes (an approval's pick).
    """
    given = values or {}
    forms = []
    for option in menu:
        name = str(option.get("name"))
        args: Any = None
        if proposed is not None and proposed.get("call") == name:
            args = proposed.get("args") or {}
        fields = [
            _field(arg, f"a.{name}", "", given, args)
            for arg in option.get("args") or ()
            if isinstance(arg, Mapping)
        ]
        forms.append(OptionForm(name, str(option.get("kind")), option.get("description"), fields))
    return forms


def _field(
    arg: Mapping[str, Any],
    prefix: str,
    parent: str,
    given: Mapping[str, str],
    proposed: Any,
) -> Field:
    arg_name = str(arg.get("name"))
    path = f"{parent}.{arg_name}" if parent else arg_name
    name = f"{prefix}.{arg_name}"
    kind = str(arg.get("type", "str"))
    base = kind.removesuffix(" | None")
    shown = Field(
        name=name,
        label=arg_name,
        path=path,
        widget="text",
        type=kind,
        required=bool(arg.get("required")),
        description=arg.get("description"),
        bounds=dict(arg.get("bounds") or {}),
    )
    mine = proposed.get(arg_name) if isinstance(proposed, Mapping) else None
    if arg.get("fields"):
        shown.widget = "group"
        shown.fields = [_field(f, name, path, given, mine) for f in arg["fields"]]
        return shown
    if arg.get("enum") is not None:
        shown.widget = "select"
        shown.choices = [(json.dumps(v), str(v)) for v in arg["enum"]]
    elif base == "bool":
        shown.widget = "select"
        shown.choices = [("true", "true"), ("false", "false")]
    elif base in _NUMBERS:
        shown.widget = "number"
    elif base != "str":
        shown.widget = "json"
        shown.placeholder = f"JSON: {base}"
    if "default" in arg:
        shown.placeholder = shown.placeholder or f"default: {_text(arg['default'])}"
    if mine is not None:
        shown.value = _box(shown, mine)
    if name in given:
        shown.value = given[name]
    return shown


def _text(value: Any) -> str:
    return value if isinstance(value, str) and value else json.dumps(value)


def _box(shown: Field, value: Any) -> str:
    """The text a box shows for ``value``: a choice as it is sent, JSON for structures."""
    if shown.widget == "select" and shown.choices != [("true", "true"), ("false", "false")]:
        return json.dumps(value)
    if shown.widget in ("json", "select"):
        return json.dumps(value)
    return str(value)


def read_pick(forms: Sequence[OptionForm], call: str, sent: Mapping[str, str]) -> dict[str, Any]:
    """Read the pick a person sent: the option ``call`` with the arguments they filled in.

    An empty box is left out (the argument's default holds, or the engine says it is
    required); a number or JSON box that does not parse is passed on as typed text, for the
    engine to refuse by its own rules.

    Raises:
        ValueError: ``call`` is no option of the menu.
    """
    option = next((f for f in forms if f.name == call), None)
    if option is None:
        names = ", ".join(f.name for f in forms)
        raise ValueError(f"pick one of the options: {names}")
    args = _read(option.fields, sent)
    pick: dict[str, Any] = {"call": call}
    if args or option.fields:
        pick["args"] = args
    return pick


def _read(fields: Sequence[Field], sent: Mapping[str, str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for one in fields:
        if one.widget == "group":
            inner = _read(one.fields, sent)
            if inner:
                args[one.label] = inner
            continue
        raw = sent.get(one.name, "")
        if raw == "":
            continue  # its default holds, or the engine says that it is required
        args[one.label] = _value(one, raw)
    return args


def _value(one: Field, raw: str) -> Any:
    base = one.type.removesuffix(" | None")
    try:
        if one.widget in ("select", "json"):
            return json.loads(raw)
        if base in _NUMBERS:
            return _NUMBERS[base](raw)
    except ValueError:
        return raw  # the engine refuses it, naming the field and the type it wants
    return raw


#: The engine's message for a bad argument: ``'ship': priority: "mid" is not one of ...``.
_AT_FIELD = re.compile(r"^'(?P<option>[^']*)': (?P<path>[A-Za-z_][\w.\[\]]*): (?P<why>.+)$", re.S)


_MISSING = re.compile(r"^'(?P<option>[^']*)' is missing required argument\(s\): (?P<names>.+)$")


def field_errors(forms: Sequence[OptionForm], call: str, detail: str) -> str | None:
    """Put the engine's error beside the field it names; return it when it names none."""
    found = _AT_FIELD.match(detail)
    option = next((f for f in forms if f.name == call), None)
    if option is None:
        return detail
    missing = _MISSING.match(detail)
    if missing is not None and missing["option"] == call:
        targets = [_find(option.fields, n.strip()) for n in missing["names"].split(",")]
        for target in targets:
            if target is not None:
                target.error = "required"
        if all(t is not None for t in targets):
            return None
    if found is not None and found["option"] == call:
        path = re.sub(r"\[\d+\]", "", found["path"])
        target = _find(option.fields, path)
        if target is not None:
            target.error = found["why"]
            return None
    option.error = detail
    return None


def _find(fields: Sequence[Field], path: str) -> Field | None:
    for one in fields:
        if one.path == path:
            return one
        if one.widget == "group" and path.startswith(one.path + "."):
            return _find(one.fields, path) or one
    return None
