"""Values to JSON and back, through pydantic, for the journal and run records."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
from functools import lru_cache
from typing import Any, ForwardRef

import pydantic_core
from pydantic import PydanticSchemaGenerationError, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from engine._base._errors import JournalError

__all__ = ["check_replayable", "digest", "from_json", "json_safe", "to_json", "unencodable"]


#: Types whose values are their own JSON form (exact types: a subclass may serialise else).
_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None)})
#: The deepest nesting the stores' JSON encoder (pydantic's) writes.
MAX_DEPTH = 254
#: An integer of more bits than this may have more digits than Python reads back from JSON
#: (``sys.get_int_max_str_digits()``, 4,300 by default): stored, it could never be read.
_MAX_INT_BITS = 14_000
#: How many steps of a path a message names.
_PATH_PARTS = 8


def to_json(value: object, *, what: str) -> Any:
    """Return the JSON form of ``value``.

    Raises:
        JournalError: The value cannot be written as JSON; ``what`` names it in the message.
    """
    kind = type(value)
    if kind in _PLAIN and (kind is not float or math.isfinite(value)):  # type: ignore[arg-type]
        _refuse(value, what)
        return value
    if kind is dict and all(map(_clean_item, value.items())):  # type: ignore[attr-defined]
        return dict(value)  # type: ignore[call-overload]  # clean as it is: nothing to refuse
    if kind is dict and all(
        type(k) is str and type(v) in _PLAIN and (type(v) is not float or math.isfinite(v))
        for k, v in value.items()  # type: ignore[attr-defined]
    ):
        _refuse(value, what)
        return dict(value)  # type: ignore[call-overload]
    try:
        data = to_jsonable_python(value)
        _refuse(data, what)
        json.dumps(data, allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError, RecursionError) as exc:
        if isinstance(exc, ValueError) and "Out of range float" in str(exc):
            raise JournalError(
                f"{what} holds a float that is not finite (NaN or infinity), which JSON "
                "cannot hold; return None or a string for it instead"
            ) from exc
        raise JournalError(
            f"{what} is a {type(value).__name__}, which cannot be journaled as JSON; use "
            "JSON data, a pydantic model or a dataclass instead"
        ) from exc
    return data


def _refuse(data: Any, what: str) -> None:
    problem = unencodable(data)
    if problem is not None:
        raise JournalError(f"{what} holds {problem}, which JSON cannot carry; nothing was stored")


def _text_problem(text: str) -> tuple[str, str] | None:
    """Say what in ``text`` UTF-8 (so JSON) cannot carry, a lone surrogate, and where."""
    if text.isascii():
        return None
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        return f"a lone surrogate {text[exc.start]!r}", f" (character {exc.start})"
    return None


def _path(trail: tuple[Any, ...] | None) -> str:
    parts: list[str] = []
    while trail is not None:
        key, trail = trail
        parts.append(f"[{key!r}]" if isinstance(key, str) else f"[{key}]")
    if len(parts) > _PATH_PARTS:  # a deep path says how deep, and its last steps
        return f"depth {len(parts)}, ...{''.join(reversed(parts[:_PATH_PARTS]))}"
    return "".join(reversed(parts)) or "the top"


def unencodable(data: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """Say what in JSON data ``data`` JSON cannot carry, and at which path, or ``None``.

    A lone surrogate in a string or a key (UTF-8 has no form for it), a float that is not
    finite, an integer too long to read back, or more than ``max_depth`` containers nested.
    Walked without recursion, so any depth is answered; other types are left to the encoder.

    Data that pydantic's encoder writes without a lone surrogate, ``NaN`` or ``Infinity``,
    with fewer brackets than ``max_depth`` and no run of digits near the integer limit, has
    none of these: it is answered from that one encoding (in C), and only other data is
    walked to say where.
    """
    if (
        type(data) is dict
        and len(data) <= _FLAT
        and max_depth > 1
        and all(map(_clean_item, data.items()))
    ):
        return None  # a small flat dict of clean keys and scalars (most records' data)
    try:
        # pydantic's encoder (in C): refuses a lone surrogate, writes NaN and Infinity bare.
        raw = pydantic_core.to_json(data)
    except (PydanticSerializationError, ValueError, RecursionError):
        return _walk(data, max_depth)
    if (
        b"NaN" in raw
        or b"Infinity" in raw
        or raw.count(b"[") + raw.count(b"{") >= max_depth
        or (len(raw) >= _LONG_DIGITS and _DIGITS_BYTES.search(raw) is not None)
    ):
        return _walk(data, max_depth)
    return None


#: The most items of a dict checked item by item rather than encoded.
_FLAT = 8
#: Integers this small (in bits) always read back.
_SMALL_INT_BITS = 64


def _clean_item(item: tuple[Any, Any]) -> bool:
    """Whether a key and its value are text and a scalar that JSON carries as they are."""
    key, value = item
    if type(key) is not str or not key.isascii():
        return False
    kind = type(value)
    if kind is str:
        return value.isascii()  # type: ignore[no-any-return]
    if kind is int:
        return value.bit_length() <= _SMALL_INT_BITS  # type: ignore[no-any-return]
    if kind is float:
        return math.isfinite(value)
    return kind is bool or value is None


#: A run of digits this long may be an integer near the limit: such data is walked.
_LONG_DIGITS = 4000
_DIGITS_BYTES = re.compile(f"[0-9]{{{_LONG_DIGITS}}}".encode())


def _walk(data: Any, max_depth: int) -> str | None:
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(data, 0, None)]
    while stack:
        value, depth, trail = stack.pop()
        if isinstance(value, dict | list | tuple):
            if depth >= max_depth:
                return f"nesting deeper than {max_depth} levels at {_path(trail)}"
            if not isinstance(value, dict):
                stack.extend((item, depth + 1, (i, trail)) for i, item in enumerate(value))
                continue
            for key, item in value.items():
                found = _text_problem(key) if isinstance(key, str) else None
                if found is not None:
                    return f"{found[0]} in the key {key!r} at {_path(trail)}"
                stack.append((item, depth + 1, (key, trail)))
            continue
        found = _scalar_problem(value)
        if found is not None:
            return f"{found[0]} at {_path(trail)}{found[1]}"
    return None


def _scalar_problem(value: Any) -> tuple[str, str] | None:
    kind = type(value)
    if kind is str:
        return _text_problem(value)
    if kind is float and not math.isfinite(value):
        return f"a float that is not finite ({value!r})", ""
    if kind is int and value.bit_length() > _MAX_INT_BITS:
        return f"an integer of {value.bit_length()} bits (too many digits to read back)", ""
    return None


def json_safe(value: Any, _depth: int = 0) -> Any:
    """Return ``value`` with what JSON cannot carry made readable text, for traces and errors.

    A lone surrogate becomes its escape (``\\ud800``), a float that is not finite its
    ``repr``, an over-long integer or over-deep nesting a short note; other values as they
    are. Lossy on purpose: it is for what people read, never for what replays.
    """
    kind = type(value)
    if kind is str:
        return value if value.isascii() else value.encode(errors="backslashreplace").decode()
    if kind is float:
        return value if math.isfinite(value) else repr(value)
    if kind is int:
        return (
            value
            if value.bit_length() <= _MAX_INT_BITS
            else f"<an integer of {value.bit_length()} bits>"
        )
    if isinstance(value, dict | list | tuple):
        if _depth >= MAX_DEPTH // 2:
            return "<nested too deeply>"
        if isinstance(value, dict):
            return {
                json_safe(k) if isinstance(k, str) else k: json_safe(v, _depth + 1)
                for k, v in value.items()
            }
        return [json_safe(v, _depth + 1) for v in value]
    return value


def from_json(data: Any, annotation: object, *, what: str) -> Any:
    """Validate journaled JSON back into ``annotation`` (returned as is when unannotated)."""
    if annotation is inspect.Signature.empty or annotation is None or annotation is Any:
        return data
    if type(data) is annotation and annotation in _OWN_TYPES:
        return data  # a str as a str, say: what validating it would return
    if isinstance(annotation, str | ForwardRef):
        raise JournalError(
            f"{what}: its annotation {annotation!r} names something that cannot be resolved "
            "from its module; define the types it uses at module level (not inside a function)"
        )
    try:
        adapter = _adapter(annotation)
    except TypeError:  # unhashable annotation: build an adapter for this call only
        adapter = TypeAdapter(annotation)  # type: ignore[arg-type]
    except PydanticSchemaGenerationError as exc:
        raise JournalError(
            f"{what}: its annotation {annotation!r} is not a type pydantic can validate JSON "
            "into; annotate it with JSON data, a pydantic model or a dataclass"
        ) from exc
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        raise JournalError(
            f"{what}: the journaled value no longer matches its annotation {annotation!r}: "
            f"{exc.errors()[0]['msg']}"
        ) from exc


#: JSON's scalar types that validate a value of exactly their type into that very value.
_OWN_TYPES: frozenset[object] = frozenset({str, int, bool})


def check_replayable(data: Any, value: object, annotation: object, *, what: str) -> None:
    """Check, before ``data`` (the JSON of ``value``) is journaled, that it replays.

    A step's result is validated back into its return annotation on replay; a value that
    does not match it would fail every resume, so it fails the step now instead. An
    annotation that cannot be resolved is left to the replay, which says what to fix.

    Raises:
        JournalError: ``data`` does not validate into ``annotation``.
    """
    if (
        annotation is inspect.Signature.empty
        or annotation is None
        or annotation is Any
        or type(value) is annotation
        or isinstance(annotation, str | ForwardRef)
    ):
        return
    try:
        from_json(data, annotation, what=what)
    except JournalError as exc:
        cause = exc.__cause__
        reason = cause.errors()[0]["msg"] if isinstance(cause, ValidationError) else str(exc)
        raise JournalError(
            f"{what} is a {type(value).__name__} that does not match its return annotation "
            f"{annotation!r} ({reason}), so it could not be replayed; return that type or "
            "change the annotation"
        ) from cause


@lru_cache(maxsize=512)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def digest(*parts: str) -> str:
    """Return a short, stable fingerprint of text parts."""
    # surrogatepass: a reply sent back for a re-pick may hold a lone surrogate, and its
    # fingerprint must not fail (text without one encodes as plain UTF-8, as before).
    text = "\x1e".join(parts).encode(errors="surrogatepass")
    return hashlib.blake2b(text, digest_size=8).hexdigest()
