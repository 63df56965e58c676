"""The model-call service: one call through the hooks, its transport retries, its cost noted.

Every model call of a turn, a decision, a re-pick or a tool loop goes through a
:class:`ModelCalls`: the ambient hooks answer it (a durable run journals the reply, or replays
it), the live call retries transport failures under the runtime's transport policy, and the
node records the reply's usage and latency. The runtime, the re-pick and the tool loop hold
one and never call a model themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine._base import REPLY_HEAD, CircuitOpenError, Node, RetryableModelError
from engine._retries import OnRetry, Transport
from engine._runtime._hooks import Hooks
from engine.models import effective_settings, model_from_string

if TYPE_CHECKING:
    from tenacity import AsyncRetrying

    from engine.models import Model, Request, Response

__all__ = ["ModelCalls", "answered", "model_of", "note_settings"]


def model_of(model: Model | str) -> Model:
    """Return ``model_from_string(model)``; a model object is found without typing's walk.

    What ``isinstance(model, Model)`` checks (a ``name``, a ``complete`` that is not
    ``None``) is checked here directly: the protocol check costs microseconds a runtime.
    """
    if (
        not isinstance(model, str)
        and hasattr(model, "name")
        and getattr(model, "complete", None) is not None
    ):
        return model
    return model_from_string(model)


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


class ModelCalls:
    """Make model calls through ``hooks``, retrying transport failures under ``transport``.

    Each retry is a ``retry`` node under the call's node and an ``on_retry`` event.
    """

    __slots__ = ("hooks", "on_retry", "transport")

    def __init__(
        self, transport: AsyncRetrying | None, hooks: Hooks, on_retry: OnRetry | None
    ) -> None:
        self.transport = transport
        self.hooks = hooks
        self.on_retry = on_retry

    async def __call__(self, node: Node, model: Model, request: Request) -> Response:
        """Make one model call, recording its settings, usage and latency on ``node``."""
        hooks = self.hooks
        # Before the call, so a failed call shows them too; a durable run's hooks note those
        # of the model they call live instead (a resume's model).
        note_settings(node, model, request)
        if hooks.passes_model_call:
            try:
                response = await model.complete(request)
            except RetryableModelError as exc:
                response = await self.retried(node, model, request, exc)
            except BaseException as exc:
                node.fail(exc)
                raise
        else:
            try:
                call = Transport(self.transport, node, self.on_retry)
                response = await hooks.model_call(node, model, request, call)
            except BaseException as exc:
                node.fail(exc)
                raise
        answered(node, response)
        return response

    async def retried(
        self, node: Node, model: Model, request: Request, first: RetryableModelError
    ) -> Response:
        """Retry a call whose first attempt failed with ``first`` under the transport policy,
        as :meth:`Transport.__call__` does (an open breaker is raised as it is); a failure
        that ends the call fails ``node``.
        """
        try:
            if isinstance(first, CircuitOpenError):
                raise first  # the breaker decided: no policy may retry past it
            return await Transport(self.transport, node, self.on_retry).after(first, model, request)
        except BaseException as exc:
            node.fail(exc)
            raise


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
