"""Models named by strings: ``"openai:gpt-4o-mini"``, ``"anthropic:claude-…"``, ``"simulated"``."""

from __future__ import annotations

from typing import Any

from engine.models._enforcement import Enforce, split_enforce
from engine.models._settings import ModelSettings
from engine.models._types import Model

__all__ = ["PREFIXES", "model_from_string"]

#: The prefixes :func:`model_from_string` knows, with the form each takes.
PREFIXES: dict[str, str] = {
    "openai": "openai:<model> or openai:<model>@<base_url>",
    "anthropic": "anthropic:<model>",
    "simulated": "simulated, simulated:<seed> or simulated:seed=<n>,faults=<rate>,...",
}
_REPLY_FAULTS = ("no_json", "unknown_option", "wrong_types")
_FAULTS = (*_REPLY_FAULTS, "truncated", "rate_limit", "server_error", "timeout", "retry_after")


def model_from_string(spec: str | Model) -> Model:
    """Return the model a string names; a model object is returned unchanged.

    Forms:
        ``"openai:gpt-4o-mini"``: OpenAI's API (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``).
        ``"openai:llama3.1:8b@http://localhost:11434/v1"``: any OpenAI-compatible server;
        the model id may itself hold colons, the URL follows the first ``@``.
        ``"anthropic:claude-sonnet-4-6"``: Anthropic's API (``ANTHROPIC_API_KEY``).
        ``"simulated"``, ``"simulated:42"`` or ``"simulated:seed=7,faults=0.1"``: the
        offline :class:`SimulatedModel`. Options, comma-separated: ``seed``, ``latency``
        (seconds, or a range ``0.01-0.05``), ``tool_rate`` (the share of tool-offering turns
        in which it calls a tool first), ``faults`` (one rate spread over the three reply
        faults) and any fault of :class:`~engine.models.Faults` on its own (``no_json=0.05``).

    Any form takes the model's :class:`~engine.models.ModelSettings` after a ``?``, as
    ``key=value`` pairs joined by ``&`` (:meth:`ModelSettings.parse`):
    ``"openai:tiny@http://127.0.0.1:8080/v1?max_tokens=64&temperature=0"``. The first ``?``
    starts them, so a ``base_url`` holding a query of its own is passed as ``base_url=``.
    An ``openai:`` model also takes ``enforce=MODE`` there, its
    :class:`~engine.models.OpenAIModel` ``enforce`` setting (``json_schema``,
    ``json_object``, ``tool``, ``text`` or ``auto``): ``"openai:tiny@URL?enforce=auto"``.

    Raises:
        ValueError: The prefix is unknown, or a part of the string is missing or malformed.
        TypeError: ``spec`` is neither a string nor a model.
    """
    if not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise TypeError(
            f"model must be a Model or a string such as 'openai:gpt-4o-mini', got {spec!r}"
        )
    text, ask, query = spec.strip().partition("?")
    enforce, query = _enforce(query, spec)
    settings = _settings(query, spec) if ask else None
    prefix, _, rest = text.partition(":")
    if enforce is not None and prefix != "openai":
        raise ValueError(f"model {spec!r}: enforce= is an option of openai: models only")
    if prefix == "simulated":
        return _simulated(rest, spec, settings)
    if prefix not in PREFIXES:
        valid = "; ".join(PREFIXES.values())
        raise ValueError(f"unknown model {spec!r}; valid forms: {valid}")
    if not rest:
        raise ValueError(f"model {spec!r} names no model; write {PREFIXES[prefix]}")
    if prefix == "anthropic":
        from engine.models._anthropic import AnthropicModel

        return AnthropicModel(rest, settings=settings)
    from engine.models._openai import OpenAIModel

    model, _, base_url = rest.partition("@")
    if not model or ("@" in rest and not base_url):
        raise ValueError(f"model {spec!r} is malformed; write {PREFIXES['openai']}")
    return OpenAIModel(model, base_url=base_url or None, settings=settings, enforce=enforce)


def _enforce(query: str, spec: str) -> tuple[Enforce | None, str]:
    try:
        return split_enforce(query)
    except ValueError as exc:
        raise ValueError(f"model {spec!r}: {exc}") from None


def _settings(query: str, spec: str) -> ModelSettings:
    try:
        return ModelSettings.parse(query)
    except ValueError as exc:
        raise ValueError(f"model {spec!r}: {exc}") from None


def _simulated(options: str, spec: str, settings: ModelSettings | None) -> Model:
    from engine.models._simulated import SimulatedModel

    kwargs: dict[str, Any] = {}
    faults: dict[str, float] = {}
    try:
        for part in filter(None, (p.strip() for p in options.split(","))):
            key, sep, value = part.partition("=")
            if not sep:
                key, value = "seed", key
            _apply(key.strip(), value.strip(), kwargs, faults)
        return SimulatedModel(faults=faults, settings=settings, **kwargs)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"model {spec!r}: {exc}; write {PREFIXES['simulated']}, as in simulated:42"
        ) from None


def _apply(key: str, value: str, kwargs: dict[str, Any], faults: dict[str, float]) -> None:
    if key == "seed":
        kwargs["seed"] = _number(key, value, int)
    elif key == "latency":
        low, sep, high = value.partition("-")
        low_s = _number(key, low, float)
        kwargs["latency"] = (low_s, _number(key, high, float)) if sep else low_s
    elif key == "tool_rate":
        kwargs["tool_rate"] = _number(key, value, float)
    elif key == "faults":
        for name in _REPLY_FAULTS:
            faults.setdefault(name, _number(key, value, float) / len(_REPLY_FAULTS))
    elif key in _FAULTS:
        faults[key] = _number(key, value, float)
    else:
        raise ValueError(
            f"unknown option {key!r}; use seed, latency, tool_rate, faults or one of "
            f"{', '.join(_FAULTS)}"
        )


def _number(key: str, value: str, kind: type[int] | type[float]) -> Any:
    try:
        return kind(value)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"the {key} must be {what}, got {value!r}") from None
