"""People in the loop: a decision whose picker is a person, and the approval of a model's pick.

A human decision offers the same menu as a model's; the run waits (status ``waiting``) until
a person picks, and the pick is validated by the same rules, strictly (an argument that is
not a parameter is an error). A function option declared with ``approve=`` holds a model's
pick of it until a person approves it as is, edits its arguments or rejects it.

The runtime builds the questions here; the hooks decide what happens to them: the plain hooks
raise :class:`~engine.WaitingForAnswer` to the caller, a run's hooks journal the question,
park the run, and replay the answer once a person gave it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from engine._base import Node, json_safe
from engine._decision import (
    AGENTIC_ATTR,
    Failure,
    Menu,
    Pick,
    RawPick,
    asked_prompt,
    describe_menu,
    validate,
)
from engine._runtime._questions import MODEL, Approval, ApprovalRule, Question
from engine.models import Message, Request, TextBlock

if TYPE_CHECKING:
    from engine._runtime._hooks import Hooks

__all__ = [
    "approval_of",
    "approval_rule",
    "approved",
    "check_on_deadline",
    "check_on_reject",
    "needs_approval",
    "question",
]


def approval_rule(value: object) -> ApprovalRule:
    """Check an ``approve=`` declaration: ``True``/``False``/``None`` or a predicate.

    Raises:
        TypeError: ``value`` is neither a bool nor a callable.
    """
    if value is None or isinstance(value, bool) or callable(value):
        return value
    raise TypeError(
        "approve= takes True (every pick of the option waits for a person's approval), or a "
        "predicate on the pick's arguments, such as lambda args: args['amount'] > 500; "
        f"got {value!r}"
    )


def needs_approval(pick: Pick) -> bool:
    """Whether a model's pick must wait for a person's approval before its step runs."""
    option = pick.option
    if option.kind != "function":
        return False
    spec = option.function  # it holds what the function declared
    meta = spec.meta if spec is not None else getattr(option.handler, AGENTIC_ATTR, None)
    rule = meta.get("approve") if meta else None
    if rule is None or rule is False:
        return False
    if rule is True:
        return True
    assert callable(rule)
    return bool(rule(dict(pick.args)))


async def approval_of(
    hooks: Hooks, node: Node, menu: Menu, pick: Pick, request: Request
) -> Approval:
    """Ask for a person's approval of a model's pick (one that :func:`needs_approval`)."""
    asked = question(node, menu, "approval", asked_prompt(request.messages, menu), pick=pick)
    return await hooks.approval(node, menu, pick, asked)


def check_on_deadline(
    menu: Menu, deadline_s: float | None, on_deadline: str | Mapping[str, Any] | None
) -> None:
    """Refuse a deadline without a fallback, or a fallback that names no option.

    Raises:
        ValueError: ``deadline_s`` is not a number > 0, or ``on_deadline`` is missing (with a
            deadline), given without one, or names no option of the menu.
    """
    if deadline_s is None:
        if on_deadline is not None:
            raise ValueError("on_deadline= needs deadline_s= (the seconds a person has)")
        return
    if isinstance(deadline_s, bool) or not isinstance(deadline_s, int | float) or deadline_s <= 0:
        raise ValueError(f"deadline_s must be a number of seconds > 0, got {deadline_s!r}")
    if on_deadline is None:
        raise ValueError(
            "deadline_s= needs on_deadline=: an option to take, a pick "
            '{"call": ..., "args": {...}}, or decision.MODEL to let the model pick'
        )
    if on_deadline == MODEL:
        return
    name = on_deadline.get("call") if isinstance(on_deadline, Mapping) else on_deadline
    if name not in menu.names:
        raise ValueError(
            f"on_deadline names {name!r}, which is not an option; options are {menu.names}"
        )


def check_on_reject(menu: Menu, on_reject: str | None) -> None:
    """Refuse an ``on_reject`` that names no option, or one that cannot be taken as it is.

    Raises:
        ValueError: The option is not offered, or needs arguments nobody gives it.
    """
    if on_reject is None:
        return
    try:
        validate(RawPick(on_reject, {}, True, {}), menu)
    except Failure as failure:
        raise ValueError(
            f"on_reject names {on_reject!r}, which cannot be taken without arguments: "
            f"{failure.message}; name an option of {menu.names} that needs none"
        ) from None


def approved(
    node: Node,
    menu: Menu,
    pick: Pick,
    answer: Approval,
    request: Request,
    on_reject: str | None,
) -> tuple[Pick, Request | None]:
    """Apply a person's answer to the approval of ``pick`` and close the decision's node.

    Returns:
        The pick to resolve (the model's, edited, or the ``on_reject`` option), and for a
        rejection without ``on_reject`` the request that asks the model again instead.
    """
    if answer.verdict == "reject":
        node.close(
            "rejected",
            pick=pick.option.name,
            args=pick.args,
            approval="rejected",
            reason=answer.reason,
        )
        if on_reject is not None:
            return validate(RawPick(on_reject, {}, True, {}), menu), None
        return pick, _asked_again(request, pick, answer.reason)
    if answer.args is not None:
        # Checked strictly when the person answered; validated again as any replay is.
        pick = validate(RawPick(pick.option.name, dict(answer.args), True, {}), menu)
    node.close(
        "ok",
        pick=pick.option.name,
        args=pick.args,
        approval="edited" if answer.args is not None else "approved",
    )
    return pick, None


def _asked_again(request: Request, pick: Pick, reason: str) -> Request:
    why = f": {reason}" if reason else ""
    text = (
        f"A person rejected your pick of {pick.option.name!r} with arguments "
        f"{json_safe(dict(pick.args))}{why}. Pick again from the same options."
    )
    again = Message.trusted("user", [TextBlock(text=text)])
    return request.model_copy(update={"messages": [*request.messages, again]})


def question(
    node: Node,
    menu: Menu,
    kind: Literal["decision", "approval"],
    prompt: str,
    *,
    pick: Pick | None = None,
    deadline_s: float | None = None,
    now: float | None = None,
) -> Question:
    """Return what a person is asked at ``node``: JSON, stored with the waiting run."""
    asked_at = time.time() if now is None else now
    data: Question = {
        "where": node.key,
        "name": node.name,
        "kind": kind,
        "prompt": prompt,
        "options": list(menu.names),
        "menu": describe_menu(menu),
        "asked_at": asked_at,
        "deadline_at": asked_at + deadline_s if deadline_s is not None else None,
    }
    if pick is not None:
        data["pick"] = {"call": pick.option.name, "args": json_safe(dict(pick.args))}
    return data
