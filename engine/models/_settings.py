"""Model settings: sampling and length controls, one typed object at every level.

A :class:`ModelSettings` may be set on a model (``OpenAIModel(settings=...)``), on a
``Runtime(settings=...)`` and per call (``decision.make(..., settings=...)``,
``runtime.exec(..., settings=...)``). A call's settings are the levels merged in that order,
each set field of a later level overriding the earlier ones (``None`` is unset); ``extra``
merges key by key. Strings (``max_tokens=64``) are read by :meth:`ModelSettings.parse` for the
command line and the ``?max_tokens=64&temperature=0`` options of a model string.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

__all__ = ["DECISION_MAX_TOKENS", "SETTING_KEYS", "ModelSettings", "effective_settings"]

#: The reply bound a decision asks for when no level sets ``max_tokens``: a pick is short,
#: and a model that runs on would fill its context (and a re-pick would send all of it back).
DECISION_MAX_TOKENS = 1024

#: The keys :meth:`ModelSettings.parse` reads, with what each takes.
SETTING_KEYS: dict[str, str] = {
    "temperature": "a number from 0 to 2",
    "top_p": "a number from 0 to 1",
    "max_tokens": "an integer >= 1",
    "seed": "an integer",
    "stop": "text; repeat the key for several",
    "extra.NAME": "a JSON value or text, sent as the body field NAME",
}
_INT64 = 2**63


class ModelSettings(BaseModel):
    """Sampling and length settings of a model call; every field ``None`` means unset.

    Args:
        temperature: Sampling temperature, 0 to 2 (Anthropic takes 0 to 1).
        top_p: Nucleus sampling mass, 0 to 1.
        max_tokens: The most tokens the reply may have, >= 1.
        seed: A sampling seed, for servers that honour one (OpenAI-compatible servers).
        stop: A stop sequence, or several (kept as a tuple).
        extra: Provider-specific fields sent as they are in the request body (``top_k``,
            ``repeat_penalty``, ...); the keys of the fields above are refused there.

    Raises:
        pydantic.ValidationError: A value of the wrong type or out of range (a
            ``ValueError``; the message names the field and what is valid).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    extra: dict[str, Any] | None = None

    @field_validator("temperature", "top_p", mode="before")
    @classmethod
    def _number(cls, value: object, info: Any) -> object:
        if value is None:
            return None
        high = 2 if info.field_name == "temperature" else 1
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number from 0 to {high}, got {value!r}")
        if not (math.isfinite(value) and 0 <= value <= high):
            raise ValueError(f"must be from 0 to {high}, got {value!r}")
        return float(value)

    @field_validator("max_tokens", "seed", mode="before")
    @classmethod
    def _integer(cls, value: object, info: Any) -> object:
        if value is None:
            return None
        low = 1 if info.field_name == "max_tokens" else -_INT64
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, got {value!r}")
        if not low <= value < _INT64:
            raise ValueError(f"must be an integer from {low} to 2**63-1, got {value!r}")
        return value

    @field_validator("stop", mode="before")
    @classmethod
    def _stop(cls, value: object) -> object:
        if value is None:
            return None
        stops = (value,) if isinstance(value, str) else value
        if not isinstance(stops, list | tuple) or not all(isinstance(s, str) for s in stops):
            raise ValueError(f"must be a string or a list of strings, got {value!r}")
        if not stops or not all(stops):
            raise ValueError("must hold at least one sequence, and no empty one")
        return tuple(stops)

    @field_validator("extra", mode="before")
    @classmethod
    def _extra(cls, value: object) -> object:
        if value is None:
            return None
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ValueError(f"must be a dict of field names to values, got {value!r}")
        typed = sorted(set(value) & set(ModelSettings.model_fields))
        if typed:
            raise ValueError(f"must not hold {', '.join(typed)}: set it as its own field")
        try:
            json.dumps(dict(value), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"must hold JSON values only ({exc})") from None
        return dict(value)

    # -- merging ----------------------------------------------------------------------------

    def merge(self, *later: ModelSettings | None) -> ModelSettings:
        """Return these settings with each of ``later`` laid over them, in order.

        A field a later level sets overrides; one it leaves ``None`` keeps the earlier value.
        ``extra`` merges by key, a later key overriding.
        """
        values = self.set_fields()
        for level in later:
            if level is None:
                continue
            for name, value in level.set_fields().items():
                if name == "extra" and "extra" in values:
                    value = {**values["extra"], **value}
                values[name] = value
        return ModelSettings.model_validate(values) if values else _EMPTY

    def set_fields(self) -> dict[str, Any]:
        """Return the set fields as JSON values (``stop`` as a list), for traces and journals."""
        return dict(self._set)

    def __bool__(self) -> bool:
        """Whether any field is set."""
        return bool(self._set)

    # Every model call reads these (its trace node records them): worked out once, as the
    # object is frozen.
    @functools.cached_property
    def _set(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if name == "stop" else value
        return out

    # -- strings ----------------------------------------------------------------------------

    @classmethod
    def parse(cls, items: Iterable[str] | str) -> ModelSettings:
        """Read settings from ``key=value`` strings (or one string of them joined by ``&``).

        Values are typed by their key: ``max_tokens=64``, ``temperature=0.2``, ``seed=7``,
        ``stop=END`` (repeat ``stop`` for several), ``extra.top_k=40`` (a JSON value, else
        the text as a string; ``extra.a.b=1`` nests). Values may be percent-encoded.

        Raises:
            ValueError: A key that is not a setting, or a value that does not fit its key;
                the message names the key and what is valid.
        """
        if isinstance(items, str):
            items = [p for p in items.split("&") if p]
        values: dict[str, Any] = {}
        for item in items:
            key, sep, raw = item.partition("=")
            # Each dotted part is decoded apart, so an encoded dot (%2E) stays in its name.
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"model setting {item!r} is not key=value; {_valid()}")
            _put(values, key, unquote(raw))
        try:
            return cls.model_validate(values) if values else _EMPTY
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "settings"
            message = str(error["msg"]).removeprefix("Value error, ")
            raise ValueError(f"model setting {where}: {message}") from None

    def to_pairs(self) -> list[str]:
        """Return the settings as ``key=value`` strings (percent-encoded) :meth:`parse` reads."""
        pairs: list[str] = []
        for name, value in self.set_fields().items():
            if name == "stop":
                pairs.extend(f"stop={quote(s, safe='')}" for s in value)
            elif name == "extra":
                pairs.extend(
                    f"extra.{_quote(k)}={quote(json.dumps(v), safe='')}" for k, v in value.items()
                )
            else:
                pairs.append(f"{name}={value!r}")
        return pairs


_FIELDS = tuple(ModelSettings.model_fields)
_EMPTY = ModelSettings()


def _quote(name: str) -> str:
    """Percent-encode a field name, dots too (a dot nests in ``extra.a.b``)."""
    return quote(name, safe="").replace(".", "%2E")


def _valid() -> str:
    return "valid keys: " + ", ".join(f"{k} ({what})" for k, what in SETTING_KEYS.items())


def _put(values: dict[str, Any], key: str, raw: str) -> None:
    """Type ``raw`` by ``key`` and put it into ``values``."""
    if key.startswith("extra."):
        path = [unquote(p) for p in key[len("extra.") :].split(".")]
        if not all(path):
            raise ValueError(f"model setting {key!r} names no field; write extra.NAME=VALUE")
        node = values.setdefault("extra", {})
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"model setting {key!r} sets a field inside a value")
        node[path[-1]] = _json_or_text(raw)
    elif key == "extra":
        value = _json_or_text(raw)
        if not isinstance(value, dict):
            raise ValueError(f"model setting extra must be a JSON object, got {raw!r}")
        values.setdefault("extra", {}).update(value)
    elif key == "stop":
        values.setdefault("stop", []).append(raw)
    elif key in ("max_tokens", "seed"):
        values[key] = _typed(key, raw, int)
    elif key in ("temperature", "top_p"):
        values[key] = _typed(key, raw, float)
    else:
        raise ValueError(f"unknown model setting {key!r}; {_valid()}")


def _typed(key: str, raw: str, kind: type[int] | type[float]) -> int | float:
    try:
        return kind(raw.strip())
    except ValueError:
        raise ValueError(
            f"model setting {key}: expected {SETTING_KEYS[key]}, got {raw!r}"
        ) from None


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class _Asking(Protocol):
    """What :func:`effective_settings` reads of a :class:`~engine.models.Request`."""

    @property
    def settings(self) -> ModelSettings | None: ...

    @property
    def max_tokens(self) -> int | None: ...


def effective_settings(base: ModelSettings | None, request: _Asking) -> ModelSettings:
    """Return the settings a call to a model with settings ``base`` sends for ``request``.

    The levels, lowest first: the request's ``max_tokens`` (a bound the engine asks for, as
    :data:`DECISION_MAX_TOKENS` for decisions), the model's settings, then the request's
    (a ``Runtime``'s and the call's, merged).
    """
    settings = request.settings
    bound = request.max_tokens
    # Every model call asks this, mostly with the same few objects (a model's settings, a
    # runtime's), so merges are remembered by identity; the entry holds what it names.
    key = (id(base), id(settings), bound)
    hit = _MERGED.get(key)
    if hit is not None and hit[0] is base and hit[1] is settings:
        return hit[2]
    merged = (base or _EMPTY).merge(settings)
    if bound is not None and merged.max_tokens is None:
        merged = merged.merge(ModelSettings(max_tokens=bound))
    if len(_MERGED) >= _MERGED_MAX:
        _MERGED.clear()  # calls that each bring new settings: start over, never grow
    _MERGED[key] = (base, settings, merged)
    return merged


_MERGED: dict[tuple[int, int, int | None], tuple[Any, Any, ModelSettings]] = {}
_MERGED_MAX = 256
