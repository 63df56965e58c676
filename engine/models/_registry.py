"""Models named by strings: ``"openai:gpt-4o-mini"``, ``"anthropic:claude-…"``, ``"simulated"``."""

from __future__ import annotations

from engine.models._types import Model

__all__ = ["PREFIXES", "model_from_string"]

#: The prefixes :func:`model_from_string` knows, with the form each takes.
PREFIXES: dict[str, str] = {
    "openai": "openai:<model> or openai:<model>@<base_url>",
    "anthropic": "anthropic:<model>",
    "simulated": "simulated or simulated:<seed>",
}


def model_from_string(spec: str | Model) -> Model:
    """Return the model a string names; a model object is returned unchanged.

    Forms:
        ``"openai:gpt-4o-mini"``: OpenAI's API (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``).
        ``"openai:llama3.1:8b@http://localhost:11434/v1"``: any OpenAI-compatible server;
        the model id may itself hold colons, the URL follows the first ``@``.
        ``"anthropic:claude-sonnet-4-6"``: Anthropic's API (``ANTHROPIC_API_KEY``).
        ``"simulated"`` or ``"simulated:42"``: the offline :class:`SimulatedModel`, seeded.

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
    prefix, _, rest = spec.strip().partition(":")
    if prefix == "simulated":
        return _simulated(rest, spec)
    if prefix not in PREFIXES:
        valid = "; ".join(PREFIXES.values())
        raise ValueError(f"unknown model {spec!r}; valid forms: {valid}")
    if not rest:
        raise ValueError(f"model {spec!r} names no model; write {PREFIXES[prefix]}")
    if prefix == "anthropic":
        from engine.models._anthropic import AnthropicModel

        return AnthropicModel(rest)
    from engine.models._openai import OpenAIModel

    model, _, base_url = rest.partition("@")
    if not model or ("@" in rest and not base_url):
        raise ValueError(f"model {spec!r} is malformed; write {PREFIXES['openai']}")
    return OpenAIModel(model, base_url=base_url or None)


def _simulated(seed: str, spec: str) -> Model:
    from engine.models._simulated import SimulatedModel

    if not seed:
        return SimulatedModel()
    try:
        return SimulatedModel(int(seed))
    except ValueError:
        raise ValueError(
            f"model {spec!r}: the seed must be an integer, as in simulated:42"
        ) from None
