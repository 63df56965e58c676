"""Resolution of a validated pick into the result of the next step (docs/decisions.md §9)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread

from engine._base import Node, current_node, current_runtime
from engine._decision import AGENTIC_ATTR, Pick, bind, return_annotation
from engine._retries import OnRetry, retry_step
from engine._runtime._hooks import Hooks, current_hooks

__all__ = ["call_option", "resolve"]


async def resolve(
    pick: Pick,
    runtime: object = None,
    context: Mapping[str, Any] | None = None,
    hooks: Hooks | None = None,
    parent: Node | None = None,
    on_retry: OnRetry | None = None,
) -> Any:
    """Resolve a validated pick into the result of the next step (docs/decisions.md §9).

    A function option declared retryable (``@agentic_function(retry=...)``) runs under its
    step policy; any other runs once.
    """
    option = pick.option
    kind = option.kind
    if kind == "value":
        return option.handler
    if kind == "text" or (kind == "schema" and not option.fields):
        return option.name
    if kind == "schema":
        return {"decision": option.name, **pick.args}
    fn: Callable[..., Any] = option.handler  # type: ignore[assignment]  # a function option's
    spec = option.function
    if spec is None:
        is_async, kwargs, meta = False, pick.args, getattr(fn, AGENTIC_ATTR, None)
    else:
        # The validated args are a dict of their own: only binding needs a copy.
        is_async, meta = spec.is_async, spec.meta
        kwargs = bind(pick, runtime=runtime, context=context) if spec.binds else pick.args
    if parent is None:
        return await call_option(fn, kwargs, is_async)
    if hooks is None:
        hooks = current_hooks.get()
    node = parent.open_child("step", option.name, {})
    node_token = current_node.set(node)
    # A runtime already ambient (a flow's) is not set again: what the step sees is the same.
    runtime_token = (
        current_runtime.set(runtime)
        if runtime is not None and current_runtime.get() is not runtime
        else None
    )
    policy = meta.get("retry") if meta else None
    try:
        if policy is None and hooks.passes_step:
            result = await fn(**kwargs) if is_async else await call_option(fn, kwargs, False)
        else:
            run = functools.partial(call_option, fn, kwargs, is_async)
            if policy is not None:
                run = functools.partial(retry_step, policy, node, run, on_retry)
            if hooks.passes_step:
                result = await run()
            else:
                result = await hooks.step(node, fn, run, _returns(fn))
    except BaseException as exc:
        node.fail(exc)
        raise
    finally:
        if runtime_token is not None:
            current_runtime.reset(runtime_token)
        current_node.reset(node_token)
    node.data["result"] = result
    node.close("ok")
    return result


async def call_option(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    is_async: bool,
    *,
    abandon_on_cancel: bool = False,
) -> Any:
    """Call a picked function option with its bound arguments and return its result.

    A plain ``def`` runs on a worker thread; with ``abandon_on_cancel`` a cancel does not
    wait for it to return (it finishes on its thread, its result unused).
    """
    if is_async:
        return await fn(**kwargs)
    # A plain def may block; run it on a worker thread so other runs keep going.
    result = await anyio.to_thread.run_sync(
        functools.partial(fn, **kwargs), abandon_on_cancel=abandon_on_cancel
    )
    if inspect.isawaitable(result):
        result = await result
    return result


def _returns(fn: object) -> object:
    try:
        return _cached_returns(fn)
    except TypeError:  # an unhashable callable
        return _return_annotation(fn)


def _return_annotation(fn: object) -> object:
    # Resolved as the option's parameters are; one that cannot be resolved stays its text,
    # and the journal says what to fix when it needs the type.
    if not callable(fn):
        return inspect.Signature.empty
    return return_annotation(fn)


_cached_returns = functools.lru_cache(maxsize=2048)(_return_annotation)
