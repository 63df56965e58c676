"""``@agentic_function``: a trace frame per call and the ambient runtime.

A decorated function that declares a runtime-class parameter (``runtime``,
``exec_runtime``, ``review_runtime``) gets the ambient runtime when the caller passes none,
and makes the runtime it runs with ambient for everything it calls. An explicitly passed
runtime wins over an outer ambient one.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

from tenacity import AsyncRetrying

from engine._base import RUNTIME_PARAMS, Node, Trace, current_node, current_runtime
from engine._decision import AGENTIC_ATTR
from engine._retries import step_policy
from engine._runtime._human import approval_rule
from engine._runtime._questions import ApprovalRule

if TYPE_CHECKING:
    from contextvars import Token

__all__ = ["agentic_function"]

F = TypeVar("F", bound=Callable[..., Any])
Retry: TypeAlias = "bool | int | AsyncRetrying | None"
_INPUT_KEYS = frozenset({"description", "options", "hidden"})


@overload
def agentic_function(fn: F, /) -> F: ...


@overload
def agentic_function(
    *,
    input: Mapping[str, Mapping[str, Any]] | None = None,
    name: str | None = None,
    description: str | None = None,
    retry: Retry = None,
    approve: ApprovalRule = None,
) -> Callable[[F], F]: ...


def agentic_function(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    input: Mapping[str, Mapping[str, Any]] | None = None,
    name: str | None = None,
    description: str | None = None,
    retry: Retry = None,
    approve: ApprovalRule = None,
) -> Any:
    """Mark a function as agentic: usable as an option or a flow, traced as a frame.

    Args:
        fn: The function (``async def`` or ``def``), when used bare.
        input: Per-parameter metadata: ``{param: {"description", "options", "hidden"}}``.
        name: The frame and option name (the function's ``__name__`` by default).
        description: The option description (the docstring's first paragraph by default).
        retry: Declares the function retryable when picked as an option (layer 3): ``True``
            for :func:`engine.step_policy`'s defaults, a number of attempts, or a tenacity
            policy of your own. Only declare it when running the function twice is safe
            (key its side effects with :func:`engine.idempotency_key`); by default a step
            that raises is never run again.
        approve: Whether a model's pick of this function waits for a person's approval
            before it runs: ``True`` always, or a predicate on the pick's arguments
            (``lambda args: args["amount"] > 500``). The person approves the pick as is,
            edits its arguments (validated again) or rejects it (docs/people.md).
    """
    policy = _step_policy(retry)
    rule = approval_rule(approve)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        return _wrap(func, dict(input or {}), name, description, policy, rule)

    return decorate(fn) if fn is not None else decorate


def _wrap(
    fn: Callable[..., Any],
    inputs: dict[str, Mapping[str, Any]],
    name: str | None,
    description: str | None,
    policy: AsyncRetrying | None = None,
    approve: ApprovalRule = None,
) -> Callable[..., Any]:
    signature = inspect.signature(fn)
    _check_inputs(fn, signature, inputs)
    frame_name = name or fn.__name__
    slots = _runtime_slots(signature)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            runtime, args = _inject(slots, args, kwargs)
            frame = _frame(frame_name, runtime)
            try:
                return await fn(*args, **kwargs)
            except BaseException as exc:
                frame.leave(exc)
                raise
            finally:
                frame.leave(None)

        wrapper: Callable[..., Any] = async_wrapper
    else:

        @functools.wraps(fn)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            runtime, args = _inject(slots, args, kwargs)
            frame = _frame(frame_name, runtime)
            try:
                return fn(*args, **kwargs)
            except BaseException as exc:
                frame.leave(exc)
                raise
            finally:
                frame.leave(None)

        wrapper = sync_wrapper
    if name:
        # List-form options are named by __name__; __qualname__ stays, so the function is
        # still found by its import path.
        wrapper.__name__ = name
    meta = {
        "input": inputs,
        "name": frame_name,
        "description": description,
        "retry": policy,
        "approve": approve,
    }
    setattr(wrapper, AGENTIC_ATTR, meta)
    return wrapper


def _step_policy(retry: Retry) -> AsyncRetrying | None:
    """Turn ``retry=`` into a step policy (``None``: the step is not retryable)."""
    if retry is None or retry is False:
        return None
    if retry is True:
        return step_policy()
    if isinstance(retry, int):
        return step_policy(attempts=retry)  # checks the number
    if not isinstance(retry, AsyncRetrying):
        raise TypeError(
            "retry= takes True, a number of attempts or a tenacity AsyncRetrying policy "
            f"(see engine.step_policy), got {retry!r}"
        )
    return retry


def _check_inputs(
    fn: Callable[..., Any], signature: inspect.Signature, inputs: Mapping[str, Any]
) -> None:
    for param, meta in inputs.items():
        if param not in signature.parameters:
            raise ValueError(
                f"@agentic_function on {fn.__name__}: input names {param!r}, which is not a "
                f"parameter; parameters are {list(signature.parameters)}"
            )
        if not isinstance(meta, Mapping) or set(meta) - _INPUT_KEYS:
            raise ValueError(
                f"@agentic_function on {fn.__name__}: input[{param!r}] must be a dict with keys "
                "among description, options, hidden"
            )


def _runtime_slots(signature: inspect.Signature) -> tuple[tuple[str, int | None], ...]:
    """Return each runtime-class parameter with its positional index (None if keyword-only)."""
    slots = []
    for index, p in enumerate(signature.parameters.values()):
        if p.name in RUNTIME_PARAMS:
            positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            slots.append((p.name, index if positional else None))
    return tuple(slots)


def _inject(
    slots: tuple[tuple[str, int | None], ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[object | None, tuple[Any, ...]]:
    """Fill missing runtime parameters from the ambient runtime.

    Returns:
        The runtime to publish as ambient for the body, and the (possibly filled) arguments.
    """
    if not slots:
        return None, args
    ambient = current_runtime.get()
    published = None
    for name, index in slots:
        if index is not None and index < len(args):
            value = args[index]
            if value is None and ambient is not None:
                args = (*args[:index], ambient, *args[index + 1 :])
        else:
            value = kwargs.get(name)
            if value is None and ambient is not None:
                kwargs[name] = ambient
        if value is not None and published is None:
            published = value
    return (published if published is not None else ambient), args


class _frame:
    """One call's frame: a frame node made the parent of what the body opens, and the
    call's runtime made ambient for the body. Opened when made; :meth:`leave` closes it.

    A call with no parent node and no runtime has no trace to join, so it opens no node:
    what the body opens becomes a root of whichever runtime's trace it uses.
    """

    __slots__ = ("_node", "_node_token", "_runtime_token")

    def __init__(self, name: str, runtime: object | None) -> None:
        self._node: Node | None = None
        self._node_token: Token[Node | None] | None = None
        parent = current_node.get()
        if parent is not None:
            node: Node | None = parent.open_child("frame", name, {})
        else:
            trace = getattr(runtime, "trace", None)
            node = trace.open_root("frame", name, {}) if isinstance(trace, Trace) else None
        if node is not None:
            self._node = node
            self._node_token = current_node.set(node)
        self._runtime_token = current_runtime.set(runtime) if runtime is not None else None

    def leave(self, exc: BaseException | None) -> None:
        """Restore the ambient runtime and node and close the node (once; later calls no-op)."""
        if self._runtime_token is not None:
            current_runtime.reset(self._runtime_token)
            self._runtime_token = None
        node = self._node
        if node is None:
            return
        self._node = None
        assert self._node_token is not None
        current_node.reset(self._node_token)
        if exc is None:
            node.close("ok")
        else:
            node.fail(exc)
