"""Decisions: offer the model a menu, let it pick, and resolve the pick into the next step.

``await decision.make(prompt, options)`` asks for a pick only; ``await runtime.exec(...,
choices=options)`` lets the model work a full turn first. Both build the menu before any
model call, re-pick in the same conversation on a bad reply, and raise
:class:`DecisionError` when no valid pick came.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from engine._base import DecisionError

# Implementation names are imported under private aliases, so this public module exports
# exactly what ``__all__`` lists.
from engine._base import current_runtime as _current_runtime
from engine._decision import DECISION_FINISH_INSTRUCTION, extract_action, render_options
from engine._decision import Failure as _Failure
from engine._decision import Menu as _Menu
from engine._decision import Pick as _Pick
from engine._decision import bind as _bind
from engine._decision import build_menu as _build_menu
from engine._decision import find_pick as _find_pick
from engine._decision import validate as _validate
from engine._retries import OnRetry as _OnRetry
from engine._runtime import MODEL
from engine._runtime import HumanAsk as _HumanAsk
from engine._runtime import Runtime as _Runtime
from engine._runtime import build_request as _build_request
from engine._runtime import call_option as _call_option
from engine._runtime import check_on_deadline as _check_on_deadline
from engine._runtime import check_on_reject as _check_on_reject
from engine._runtime import menu_block as _menu_block
from engine._runtime import resolve as _resolve
from engine.models import ModelSettings as _ModelSettings

__all__ = [
    "DECISION_FINISH_INSTRUCTION",
    "MODEL",
    "DecisionError",
    "extract_action",
    "make",
    "parse_args",
    "render_options",
    "resolve_decision",
]


async def make(
    prompt: str,
    options: object,
    *,
    runtime: _Runtime | None = None,
    context: Mapping[str, Any] | None = None,
    max_retries: int = 1,
    timeout_s: float | None = None,
    on_retry: _OnRetry | None = None,
    name: str | None = None,
    settings: _ModelSettings | None = None,
    by: Literal["model", "human"] = "model",
    deadline_s: float | None = None,
    on_deadline: str | Mapping[str, Any] | None = None,
    on_reject: str | None = None,
) -> Any:
    """Ask the model (or, with ``by="human"``, a person) to pick one option; resolve the pick.

    The request is one user message: ``prompt``, a blank line, then the menu. The prompt
    itself must tell the model to pick.

    Args:
        prompt: The question; it must ask the model to pick.
        options: A dict ``{name: handler}`` or a list of options (docs/decisions.md §2).
        runtime: The runtime to ask with; the ambient one by default.
        context: Values for hidden parameters of function options.
        max_retries: Re-picks after a bad reply (0 disables).
        timeout_s: One deadline, in seconds > 0, over the call and every re-pick.
        on_retry: Called with a :class:`~engine.RetryEvent` before each re-pick.
        name: What this decision is called in the trace, the routing graph and ``engine
            show`` (``"classify"``); ``"decision"`` by default. It never changes the
            decision's journal key.
        settings: :class:`~engine.models.ModelSettings` for this call, laid over the
            runtime's and the model's (``max_tokens`` lifts the default bound of
            :data:`~engine.models.DECISION_MAX_TOKENS`).
        by: Who picks: ``"model"``, or ``"human"``: inside a run of an
            :class:`~engine.Engine` the run then waits (status ``waiting``) with the
            question stored, until a person answers (:meth:`~engine.Engine.answer`,
            ``engine answer``) with a pick validated by the same rules, strictly; outside a
            run :class:`~engine.WaitingForAnswer` is raised (docs/people.md).
        deadline_s: For a human decision: the seconds a person has; once they passed, a
            resume of the run (or :meth:`~engine.Engine.resume_expired`) settles it by
            ``on_deadline``.
        on_deadline: What a passed deadline does: an option name to take, a pick
            ``{"call": ..., "args": {...}}``, or :data:`MODEL` to let the model pick.
        on_reject: When a person rejects the model's pick of an option declared with
            ``@agentic_function(approve=...)``: the option to take instead (one that needs
            no arguments); by default the model is asked again, told the reason.

    Raises:
        TypeError: ``options`` is not a dict or list, or an option is malformed.
        ValueError: ``options`` is empty or names an option twice; ``max_retries`` < 0;
            ``timeout_s`` is not a number > 0.
        RuntimeError: No ``runtime=`` and no ambient runtime.
        WaitingForAnswer: A human decision (or an approval) outside a run.
        DecisionError: No valid pick after every re-pick.
    """
    menu = _build_menu(options)
    rt = runtime if runtime is not None else _current_runtime.get()
    if not isinstance(rt, _Runtime):
        raise RuntimeError(
            "decision.make needs a runtime: declare `runtime=None` as a parameter of the "
            "@agentic_function that calls it (the ambient runtime is then injected), or pass "
            "runtime= explicitly"
        )
    if by == "model" and deadline_s is None and on_deadline is None:
        human = None
    else:
        human = _human_ask(menu, prompt, by, deadline_s, on_deadline, timeout_s)
    if on_reject is not None:
        _check_on_reject(menu, on_reject)
    request = _build_request(
        rt.system,
        [_menu_block(prompt, menu)],
        menu=menu,
        settings=rt.settings if settings is None else rt.call_settings(settings),
    )
    return await rt.decide(
        request,
        menu,
        timeout_s=timeout_s,
        max_retries=max_retries,
        context=context,
        on_retry=on_retry,
        name=name,
        human=human,
        on_reject=on_reject,
    )


def _human_ask(
    menu: _Menu,
    prompt: str,
    by: str,
    deadline_s: float | None,
    on_deadline: str | Mapping[str, Any] | None,
    timeout_s: float | None,
) -> _HumanAsk | None:
    if by == "model":
        if deadline_s is not None or on_deadline is not None:
            raise ValueError('deadline_s= and on_deadline= are for by="human" decisions')
        return None
    if by != "human":
        raise ValueError(f'by must be "model" or "human", got {by!r}')
    if timeout_s is not None:
        raise ValueError(
            "timeout_s bounds model calls; a person's time on a human decision is deadline_s="
        )
    _check_on_deadline(menu, deadline_s, on_deadline)
    return _HumanAsk(prompt, deadline_s, on_deadline)


def parse_args(
    reply: str,
    options: object,
    *,
    runtime: object = None,
    context: Mapping[str, Any] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Parse and validate one reply against ``options``, without asking again.

    Returns:
        ``(chosen, kwargs)``: for a function option the function and its bound keyword
        arguments (runtime and hidden parameters included); otherwise the option's name and
        its validated fields.

    Raises:
        DecisionError: The reply holds no valid pick (``attempts`` is 1).
    """
    menu = _build_menu(options)
    pick = _validated(reply, menu)
    if pick.option.kind == "function":
        return pick.option.handler, _bind(pick, runtime=runtime, context=context)
    return pick.option.name, dict(pick.args)


def _validated(reply: str, menu: _Menu) -> _Pick:
    try:
        return _validate(_find_pick(reply, menu.by_name), menu)
    except _Failure as failure:
        raise DecisionError(
            failure.kind, failure.message, replies=[reply], attempts=1, options=menu.names
        ) from None


async def resolve_decision(chosen: Any, kwargs: Mapping[str, Any], options: object) -> Any:
    """Resolve a ``parse_args`` result into the result of the next step.

    A function is awaited (or run on a worker thread when it is a plain ``def``) with
    ``kwargs``; a name returns its option's value, its name, or ``{"decision": name, **kwargs}``
    for a schema option.
    """
    menu = _build_menu(options)
    option = menu.by_name.get(chosen) if isinstance(chosen, str) else None
    if option is None and callable(chosen):
        option = next((o for o in menu.options if o.handler is chosen), None)
    if option is None:
        raise ValueError(f"{chosen!r} is not one of the offered options: {menu.names}")
    if option.kind == "function":
        spec = option.function
        fn = option.handler
        assert callable(fn)
        return await _call_option(fn, dict(kwargs), spec.is_async if spec else False)
    return await _resolve(_Pick(option, dict(kwargs)))
