"""Whether a decision asks its model to constrain the pick, and which requests carry it.

``Runtime(enforce=...)`` says whether decisions ask at all (``"auto"``: where the model can,
``"off"``: never, ``"on"``: always). The ask itself is neutral: the menu as one
:class:`~engine.models.PickSchema` on the request's ``enforce``, and the model that answers
decides the form it sends (``OpenAIModel(enforce="json_schema" | "json_object" | "tool" |
"auto")``; a model that cannot ignores it). So a resume on another model, or a decision
policy's fallback model, is asked in that model's own mode: the choice is made from the
model that answers the call, not the runtime's.

In a turn with tools (``runtime.exec(..., choices=..., tools=...)``) the tool-calling
requests go unenforced, so the model can call its tools first; a re-pick, the request that
closes the turn with a pick, is enforced.
"""

from __future__ import annotations

from typing import Literal

from engine.models import Model, Request, Response

__all__ = ["Enforce", "check_runtime_enforce", "enforcement", "sent_mode"]

Enforce = Literal["auto", "off", "on"]


def check_runtime_enforce(enforce: object) -> Enforce:
    """Return a runtime's ``enforce=`` setting, or raise ``ValueError`` naming the choices."""
    if enforce not in ("auto", "off", "on"):
        raise ValueError(
            f"enforce must be 'auto', 'off' or 'on', got {enforce!r}; how a model constrains "
            "a pick is set on the model (OpenAIModel(enforce='json_schema' | 'json_object' | "
            "'tool' | 'text' | 'auto'))"
        )
    return enforce


def enforcement(setting: Enforce, model: Model, request: Request) -> str | None:
    """Return the mode ``model`` constrains this decision's pick in, or ``None`` (text).

    ``None`` when the runtime's setting is ``"off"``, the request has a caller's own
    ``response_format``, or the model cannot constrain a reply.

    Raises:
        ValueError: ``setting`` is ``"on"`` and the model cannot constrain a reply.
    """
    if setting == "off" or request.response_format is not None:
        return None
    mode: str | None = getattr(model, "enforcement", None)
    if mode is None and setting == "on":
        raise ValueError(
            f"enforce='on', but model {getattr(model, 'name', model)!r} cannot constrain its "
            "reply to a menu; use enforce='auto', or a model that can (an OpenAIModel with "
            "enforce='json_schema', 'json_object', 'tool' or 'auto')"
        )
    return mode


def sent_mode(response: Response, asked: str | None) -> str:
    """Return the mode a reply was constrained in, as the model reports it, else as asked."""
    reported = response.enforcement
    if reported is not None:
        return reported
    return asked or "text"
