"""Layer 0 of the retry layers: transport retries of one model call.

A provider call that was rate limited, hit a 5xx, timed out or lost its connection is tried
again with exponential backoff and jitter. The policy is one tenacity ``AsyncRetrying``
built by :func:`~engine._retries._policies.transport_policy`, beside the other layers' policies; a
user replaces it with ``Runtime(transport=...)``.

The first attempt runs outside tenacity: a call that succeeds (nearly all of them) costs
one ``try``. Only a retryable failure enters the policy, which counts that failure as its
first attempt. Every retry attempt is a ``retry`` trace node under the call's node and fires
the call's ``on_retry`` with a transport :class:`~engine.RetryEvent`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tenacity import AsyncRetrying

from engine._base import CircuitOpenError, RetryableModelError
from engine._retries._events import OnRetry, RetryEvent
from engine._retries._ledger import note_retry
from engine._retries._policies import transport_policy

if TYPE_CHECKING:
    from engine._base import Node
    from engine.models import Model, Request, Response

__all__ = ["Transport"]


_DEFAULT = transport_policy()


class Transport:
    """The live call of one model request: one attempt, then the policy on a failure.

    This is the ``call`` the runtime hands to :meth:`Hooks.model_call`, so a journaled
    replay skips it whole, retries included.
    """

    __slots__ = ("node", "on_retry", "policy")

    def __init__(
        self, policy: AsyncRetrying | None, node: Node | None, on_retry: OnRetry | None
    ) -> None:
        self.policy = policy
        self.node = node
        self.on_retry = on_retry

    async def __call__(self, model: Model, request: Request) -> Response:
        """Answer ``request`` with ``model``, retrying transport failures.

        Raises:
            RetryableModelError: The last transport failure, once the policy gave up.
            ModelError: A failure that is not worth retrying (bad request, credentials).
        """
        try:
            return await model.complete(request)
        except CircuitOpenError:
            raise  # the breaker decided: no policy may retry past it
        except RetryableModelError as exc:
            first = exc
        return await self.after(first, model, request)

    async def after(self, first: RetryableModelError, model: Model, request: Request) -> Response:
        """Retry ``request`` under the policy after its first attempt failed with ``first``."""
        # The slow path: only a failed call pays for the policy.
        retries = _Retries(model, request, self.node, self.on_retry)
        return await retries.run((self.policy or _DEFAULT).copy(), first)


class _Retries:
    """The retry attempts of one call, after its first attempt failed."""

    __slots__ = ("last", "model", "node", "on_retry", "request")

    def __init__(
        self, model: Model, request: Request, node: Node | None, on_retry: OnRetry | None
    ) -> None:
        self.model = model
        self.request = request
        self.node = node
        self.on_retry = on_retry
        self.last: BaseException | None = None

    async def run(self, policy: AsyncRetrying, first: RetryableModelError) -> Response:
        self.last = first
        async for attempt in policy:
            with attempt:
                number = attempt.retry_state.attempt_number
                if number == 1:
                    # The policy counts the failure that sent us here as its first attempt.
                    raise first
                return await self._attempt(number, attempt.retry_state.idle_for)
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True

    async def _attempt(self, number: int, waited_s: float) -> Response:
        assert self.last is not None
        kind = type(self.last).__name__
        # Reported before the node opens: a spent budget stops the attempt before it starts.
        await self._event(number, kind, str(self.last))
        node = None
        if self.node is not None:
            node = self.node.child(
                "retry",
                "transport",
                layer="transport",
                attempt=number,
                after=kind,
                waited_s=round(waited_s, 3),
            )
        try:
            response = await self.model.complete(self.request)
        except BaseException as exc:
            self.last = exc
            if node is not None:
                node.fail(exc)
            raise
        if node is not None:
            node.close("ok")
        return response

    async def _event(self, number: int, kind: str, message: str) -> None:
        key = self.node.key if self.node is not None else ""
        await note_retry(RetryEvent("transport", number, kind, message, key), self.on_retry)
