"""Validation of a pick against the menu, and binding of a function option's arguments.

Checks run in the order of docs/decisions.md §7 and the first failure is reported. The model
can only fill model-visible fields: runtime-class parameters always get the runtime, hidden
ones come from the context (or their default), and whatever the model sends for them is
dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from engine._base import RUNTIME_PARAMS, OptionsTypeError
from engine._decision._check import FieldError, check
from engine._decision._extract import RawPick
from engine._decision._menu import Menu
from engine._decision._numbers import find_out_of_range
from engine._decision._options import Option

__all__ = ["Failure", "Pick", "bind", "validate"]


class Pick(NamedTuple):
    """A validated pick: the option and its validated, model-supplied arguments."""

    option: Option
    args: dict[str, Any]


class Failure(Exception):
    """A reply that holds no valid pick; ``kind`` is the decision failure kind."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.message = message
        super().__init__(message)


def validate(raw: RawPick | None, menu: Menu, *, strict: bool = False) -> Pick:
    """Validate an extracted pick against the menu.

    ``strict`` is for a person's pick (docs/decisions.md §7): an argument the option does not
    take, or one the flow fills (a runtime or hidden parameter), is ``bad_args`` naming it,
    where a model's pick has it dropped.

    Raises:
        Failure: ``no_action``, ``unknown_call``, ``bad_args``, ``missing_required``,
            ``type_mismatch`` or ``enum_violation``.
    """
    if raw is None:
        raise Failure(
            "no_action",
            "the reply holds no pick; end with one JSON object in the format of an "
            "option's Call: line",
        )
    option = menu.by_name.get(raw.call) if isinstance(raw.call, str) else None
    if option is None:
        raise Failure(
            "unknown_call",
            f"{_show(raw.call)} is not an option; valid options: {', '.join(menu.names)}",
        )
    args = raw.args
    if not raw.has_args or type(args) is not dict:  # the usual pick's args: a dict, as is
        args = _args_of(raw, option)
    if strict and args:
        _check_names(option, args)
    if option.kind == "function":
        return Pick(option, _check_params(option, args))
    return Pick(option, _check_schema(option, args))


def _args_of(raw: RawPick, option: Option) -> dict[str, Any]:
    if not raw.has_args:
        extras = raw.extras
        # Flattened arguments only when every other key is a parameter of the option:
        # otherwise the extra keys are commentary, not arguments.
        if extras and set(extras) <= option.param_names:
            return dict(extras)
        return {}
    args = raw.args
    if type(args) is dict:
        return args
    if args is None or (not args and type(args) in (list, str)):
        return {}  # null, [] and "" stand for no arguments
    if not isinstance(args, dict):
        raise Failure(
            "bad_args",
            f"args of {option.name!r} must be a JSON object, got {type(args).__name__}",
        )
    return args


def _check_names(option: Option, args: Mapping[str, Any]) -> None:
    """Refuse an argument name the option gives no one to fill (a person's pick)."""
    spec = option.function
    visible = option.field_names
    for name in args:
        if name in visible:
            continue
        taken = [p.name for p in option.fields]
        its = f"its arguments are: {', '.join(taken)}" if taken else "it takes no arguments"
        flows = {p.name for p in spec.params if p.source != "llm"} if spec else set()
        if name in flows or (spec is not None and name in RUNTIME_PARAMS):
            raise Failure(
                "bad_args",
                f"argument {_show(name)} of option {option.name!r} is filled by the flow, not "
                f"by a pick; {its}",
            )
        if spec is None or not spec.var_keyword:
            raise Failure(
                "bad_args", f"unknown argument {_show(name)} for option {option.name!r}; {its}"
            )


def _check_schema(option: Option, args: Mapping[str, Any]) -> dict[str, Any]:
    if not option.required <= args.keys():
        missing = [p.name for p in option.fields if p.name not in args]
        raise Failure(
            "missing_required",
            f"{option.name!r} is missing required field(s): {', '.join(missing)}",
        )
    out: dict[str, Any] = {}
    try:
        for name, exact, _, spec in option.checks:
            value = args[name]
            out[name] = value if type(value) is exact else check(spec, value, name)
    except FieldError as exc:
        raise _failure(option, exc) from None
    return out


def _check_params(option: Option, args: Mapping[str, Any]) -> dict[str, Any]:
    if not option.required <= args.keys():
        missing = [p.name for p in option.fields if p.required and p.name not in args]
        raise Failure(
            "missing_required",
            f"{option.name!r} is missing required argument(s): {', '.join(missing)}",
        )
    out: dict[str, Any] = {}
    try:
        # A value of the one type a field passes unchanged needs no check (Option.checks).
        for name, exact, has_default, field in option.checks:
            if name not in args:
                continue
            value = args[name]
            if type(value) is exact:
                out[name] = value
            elif value is None and has_default:
                continue  # null means "use the default"
            else:
                out[name] = check(field, value, name)
    except FieldError as exc:
        raise _failure(option, exc) from None
    spec = option.function
    if spec is not None and spec.var_keyword:
        blocked = RUNTIME_PARAMS.union(p.name for p in spec.params)
        extra = {k: v for k, v in args.items() if k not in blocked}
        found = find_out_of_range(extra, "") if extra else None
        if found is not None:  # **kwargs takes any value, but never a number none can hold
            path, number = found[0].lstrip("."), found[1]
            raise Failure("type_mismatch", f"{option.name!r}: {path}: {number.describe()}")
        out.update(extra)
    return out


def _failure(option: Option, exc: FieldError) -> Failure:
    return Failure(exc.kind, f"{option.name!r}: {exc}")


def bind(
    pick: Pick, *, runtime: object = None, context: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Return the keyword arguments to call a function option with.

    Raises:
        OptionsTypeError: A hidden parameter has no default and is not in ``context``.
    """
    spec = pick.option.function
    if spec is None:
        return dict(pick.args)
    kwargs = dict(pick.args)
    for p in spec.params:
        if p.source == "runtime":
            kwargs[p.name] = runtime
        elif p.source == "hidden":
            if context is not None and p.name in context:
                kwargs[p.name] = context[p.name]
            elif not p.has_default:
                raise OptionsTypeError(
                    f"option {pick.option.name!r}: hidden parameter {p.name!r} has no default "
                    "and is not in the call's context; pass context={...}"
                )
    return kwargs


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
