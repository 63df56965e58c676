"""What every decision's first model call leaves on the trace, and how its reply is read.

A decision's model call notes the settings it sends and, once answered, the reply's usage and
head on its node; a text-mode decision's first reply is read into a validated pick or the
failure a re-pick starts from. These run on every decision, as plain functions (no awaiting):
the module is compiled where the engine's hot modules are (``tools/native.py``).
"""

from __future__ import annotations

from typing import Any

from engine._base import REPLY_HEAD, Node
from engine._decision import Failure, Menu, Pick, find_pick, validate
from engine.models import Request, Response, effective_settings

__all__ = ["answered", "checked_pick", "first_call", "first_pick", "note_settings"]


def note_settings(node: Node, model: object, request: Request) -> None:
    """Record on ``node`` the settings a call of ``model`` sends (the set fields only)."""
    # Every model call notes them, mostly from the same few objects (a model's settings, a
    # runtime's, frozen both): their set fields are remembered by identity, as the merge is.
    base = getattr(model, "settings", None)
    asked = request.settings
    key = (id(base), id(asked), request.max_tokens)
    hit = _NOTED.get(key)
    if hit is None or hit[0] is not base or hit[1] is not asked:
        settings = effective_settings(base, request)
        hit = (base, asked, settings.set_fields() if settings else None)
        if len(_NOTED) >= _NOTED_MAX:
            _NOTED.clear()  # calls that each bring new settings: start over, never grow
        _NOTED[key] = hit  # the entry holds what it names, so no id is reused while kept
    fields = hit[2]
    if fields is not None:
        node.data["settings"] = dict(fields)
    else:
        node.data.pop("settings", None)


_NOTED: dict[tuple[int, int, int | None], tuple[object, object, dict[str, Any] | None]] = {}
_NOTED_MAX = 256


def answered(node: Node, response: Response) -> None:
    """Close the node of a model call that answered, with the reply's usage and head."""
    data = node.data
    if not data.get("replayed"):  # a replayed reply cost nothing this time
        usage = response.usage
        node.add_usage(usage.input_tokens, usage.output_tokens)
    # What close("ok", model=..., finish_reason=..., reply=...) records, item by item.
    data["model"] = response.model
    data["finish_reason"] = response.finish_reason
    data["reply"] = response.text[:REPLY_HEAD]
    node.close("ok")


def checked_pick(response: Response, menu: Menu) -> Pick:
    """Return the validated pick of ``response``.

    Raises:
        Failure: The reply was cut off, or holds no valid pick.
    """
    if response.truncated:
        # The pick comes last, so a cut-off reply lost it: any pick still readable is one
        # the model only mentioned earlier, and must not run.
        raise Failure(
            "truncated",
            f"the reply was cut off (finish_reason={response.finish_reason!r}) before "
            "the pick was complete",
        )
    return validate(find_pick(response.text, menu.by_name), menu)


def first_call(node: Node) -> Node:
    """Open the node of a decision's first model call, and ready the decision's ``node``.

    The first attempt of a text-mode decision with no tools (see :func:`plain_pick`) needs
    no asker: its caller makes the call under this node and reads it with
    :func:`first_pick`.
    """
    data = node.data
    data["failures"] = []
    data["replies"] = []
    return node.open_child("model_call", "model_call", {"attempt": 0})


def first_pick(node: Node, response: Response, menu: Menu) -> Pick | Failure:
    """Return the validated pick of a first attempt's reply, or its failure.

    The decision's ``node`` holds what an asker leaves on it; a failure is for an asker to
    re-pick from (``(model call node, response, failure)`` as its first attempt).
    """
    data = node.data
    reported = response.enforcement  # as sent_mode(response, None) reads it
    data["enforcement"] = reported if reported is not None else "text"
    data["replies"].append(response.text[:REPLY_HEAD])
    try:
        pick = checked_pick(response, menu)
    except Failure as failure:
        return failure
    data["attempts"] = 1
    return pick
