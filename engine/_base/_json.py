"""Values to JSON and back, through pydantic, for the journal and run records."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from functools import lru_cache
from typing import Any, ForwardRef

from pydantic import PydanticSchemaGenerationError, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from engine._base._errors import JournalError

__all__ = ["check_replayable", "digest", "from_json", "to_json"]


#: Types whose values are their own JSON form (exact types: a subclass may serialise else).
_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None)})


def to_json(value: object, *, what: str) -> Any:
    """Return the JSON form of ``value``.

    Raises:
        JournalError: The value cannot be written as JSON; ``what`` names it in the message.
    """
    kind = type(value)
    if kind in _PLAIN and (kind is not float or math.isfinite(value)):  # type: ignore[arg-type]
        return value
    if kind is dict and all(
        type(k) is str and type(v) in _PLAIN and (type(v) is not float or math.isfinite(v))
        for k, v in value.items()  # type: ignore[attr-defined]
    ):
        return dict(value)  # type: ignore[call-overload]
    try:
        data = to_jsonable_python(value)
        json.dumps(data, allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
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


def from_json(data: Any, annotation: object, *, what: str) -> Any:
    """Validate journaled JSON back into ``annotation`` (returned as is when unannotated)."""
    if annotation is inspect.Signature.empty or annotation is None or annotation is Any:
        return data
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
    return hashlib.blake2b("\x1e".join(parts).encode(), digest_size=8).hexdigest()
