"""The model-call service: one call through the hooks, its transport retries, its cost noted.

Every model call of a turn, a decision, a re-pick or a tool loop goes through a
:class:`ModelCalls`: the ambient hooks answer it (a durable run journals the reply, or replays
it), the live call retries transport failures under the runtime's transport policy, and the
node records the reply's usage and latency. The runtime, the re-pick and the tool loop hold
one and never call a model themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine._base import CircuitOpenError, Node, RetryableModelError
from engine._retries import OnRetry, Transport
from engine._runtime._hooks import Hooks
from engine._runtime._replies import answered, note_settings
from engine.models import model_from_string

if TYPE_CHECKING:
    from tenacity import AsyncRetrying

    from engine.models import Model, Request, Response

__all__ = ["ModelCalls", "model_of"]


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
