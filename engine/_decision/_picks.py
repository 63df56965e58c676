"""Reading a candidate object: decoding it and recognising the shapes of a pick."""

from __future__ import annotations

import ast
import builtins
import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple

from engine._decision._numbers import parse_float, parse_int, replace_infinite

__all__ = [
    "CALL_KEYS",
    "MAX_DEPTH",
    "RawPick",
    "as_pick",
    "last_pick",
    "load_json",
    "load_literal",
    "plain_args",
    "whole_pick",
]

MAX_DEPTH = 64
"""Objects and lists nested deeper than this are a parse failure."""

CALL_KEYS = ("call", "action", "function", "tool")
_ARGS_KEYS = ("args", "arguments", "parameters", "input")
_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})
_ODD_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*+\\[^\n\\'\"abfnrtvx0-7NuU]")


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


# NaN and Infinity are not JSON (json.loads takes them by default): an object holding either
# does not parse. A number too large for a float (1e400), or an integer too long to read, is
# kept as an OutOfRange, for validation to report as a bad argument with its path.
_DECODER = json.JSONDecoder(
    strict=False, parse_constant=_not_json, parse_float=parse_float, parse_int=parse_int
)
_SCAN: Callable[[str, int], tuple[object, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
# A chunk shorter than Python's least digit limit (640) holds no integer too long to read:
# its integers are read by Python's own int, in C, with no call out per number.
_SHORT_SCAN: Callable[[str, int], tuple[object, int]] = json.JSONDecoder(  # type: ignore[attr-defined]
    strict=False, parse_constant=_not_json, parse_float=parse_float
).scan_once
_SHORT_CHARS = 640


class RawPick(NamedTuple):
    """A pick as found in the reply, before validation against the menu.

    Attributes:
        call: The value of the call key; may be a non-string (reported as unknown_call).
        args: The args value, normalised: ``{}`` for null, ``""`` or ``[]``, and a JSON
            string holding an object decoded; any other non-object is kept for validation to
            report. None when absent.
        has_args: Whether an args key (or alias) was present.
        extras: Every other top-level key of the pick, for flattened arguments.
    """

    # ``builtins.object``: compiled (tools/native.py), a named tuple's fields are looked up
    # by name in this module, where the builtin ``object`` is not found.
    call: builtins.object
    args: builtins.object
    has_args: bool
    extras: dict[str, object]


def load_json(chunk: str) -> tuple[dict[str, object] | None, int]:
    """Decode one whole JSON object; on failure return the error position (or -1)."""
    try:
        # The decoder's scanner itself (what raw_decode wraps), for a chunk that starts
        # with its value.
        value, end = (_SHORT_SCAN if len(chunk) < _SHORT_CHARS else _SCAN)(chunk, 0)
    except StopIteration as exc:  # no value at all where one starts
        return None, exc.value
    except json.JSONDecodeError as exc:
        return None, exc.pos
    except (ValueError, RecursionError):  # an over-long integer; nesting past the C guard
        return None, -1
    if end != len(chunk) or not isinstance(value, dict):
        return None, -1
    # Brace depth is bounded by the scan; only lists (or a whole reply) can nest deeper.
    if ("[" in chunk or chunk.count("{") > MAX_DEPTH) and not _fits(value, literal=False):
        return None, -1
    return value, -1


def whole_pick(stripped: str, names: Collection[str] | None) -> RawPick | None:
    """Return the pick ``stripped`` is, when the whole (stripped) reply is one JSON pick.

    ``None`` when it is not (the general parser then reads the reply). What it accepts, the
    general parser finds too: a reply that is one pick holds no other candidate.
    """
    if stripped[:1] != "{" or stripped[-1:] != "}":
        return None
    whole, _ = load_json(stripped)
    if whole is None:
        return None
    # The shape asked for, {"call": name, "args": {...}}, needs no shape of a pick looked up.
    if len(whole) == 2 and "call" in whole and type(whole.get("args")) is dict:
        return RawPick(whole["call"], whole["args"], True, {})
    return as_pick(whole, names, False)


def load_literal(chunk: str) -> dict[str, object] | None:
    if _ODD_ESCAPE.search(chunk):
        return None
    try:
        value = ast.literal_eval(chunk)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict) or not _fits(value, literal=True):
        return None
    return replace_infinite(value) if "e" in chunk or "E" in chunk else value


def _fits(value: dict[str, object], *, literal: bool) -> bool:
    """Tell whether ``value`` nests at most MAX_DEPTH deep (and, for a literal, is JSON)."""
    todo: list[tuple[dict[str, object] | list[object], int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > MAX_DEPTH:
            return False
        if literal and isinstance(item, dict) and not set(map(type, item)) <= {str}:
            return False
        members = item.values() if isinstance(item, dict) else item
        kinds = set(map(type, members))  # in C: the walk itself visits containers only
        if literal and not kinds <= _JSON_TYPES:
            return False
        if dict in kinds or list in kinds:
            todo.extend((m, depth + 1) for m in members if type(m) is dict or type(m) is list)
    return True


def last_pick(value: object, names: Collection[str] | None, wrapped: bool) -> RawPick | None:
    """Return the last pick in document order in a parsed value, not looking inside picks."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            pick = as_pick(item, names, wrapped)
            if pick is not None:
                return pick
            todo.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            todo.extend(v for v in item if isinstance(v, dict | list))
    return None


def as_pick(obj: dict[str, object], names: Collection[str] | None, wrapped: bool) -> RawPick | None:
    inner = obj.get("function")
    if isinstance(inner, dict) and "name" in inner:  # the provider tool-call shape
        return _build(inner, "name")
    for key in CALL_KEYS:
        if key in obj:
            return _build(obj, key)
    if "name" not in obj:
        return None
    # {"name": option, "arguments": ...}. Outside a <tool_call> wrapper, an object with a
    # name and no arguments key is data (a menu echoed, a record) unless its other keys are
    # the option's own parameters, as flattened arguments.
    if wrapped:
        return _build(obj, "name")
    name = obj["name"]
    if any(key in obj for key in _ARGS_KEYS):
        if names is None or (isinstance(name, str) and name in names):
            return _build(obj, "name")
        return None
    if names is None or not isinstance(name, str) or name not in names or len(obj) == 1:
        return None
    option = names.get(name) if isinstance(names, Mapping) else None  # a menu's options
    params = getattr(option, "param_names", None)
    if params is not None and not obj.keys() - {"name"} <= params:
        return None
    return _build(obj, "name")


def _build(obj: dict[str, object], call_key: str) -> RawPick:
    args_key = None
    for key in _ARGS_KEYS:
        if key in obj:
            args_key = key
            break
    if len(obj) == (1 if args_key is None else 2):
        extras: dict[str, object] = {}  # the usual pick: the call and its args, nothing else
    else:
        extras = {key: v for key, v in obj.items() if key not in (call_key, args_key)}
    if args_key is None:
        return RawPick(obj[call_key], None, False, extras)
    return RawPick(obj[call_key], plain_args(obj[args_key]), True, extras)


def plain_args(args: object) -> object:
    """Normalise an args value: null and empty stand for ``{}``, a JSON string is decoded.

    Any other value that is no object is kept as it is: validation reports it as bad_args.
    """
    if type(args) is dict:
        return args
    if args is None or (not args and type(args) in (list, str)):
        return {}
    if isinstance(args, str):
        decoded, _ = load_json(args.strip())
        return decoded if decoded is not None else args
    return args
