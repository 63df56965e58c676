"""Layer 0 of the retry layers: transport retries of one model call.

A provider call that was rate limited, hit a 5xx, timed out or lost its connection is tried
again with exponential backoff and jitter. The policy is one tenacity ``AsyncRetrying``
built here, by :func:`transport_policy`; a user replaces it with ``Runtime(transport=...)``.

The first attempt runs outside tenacity: a call that succeeds (nearly all of them) costs
one ``try``. Only a retryable failure enters the policy, which counts that failure as its
first attempt. Every retry attempt is a ``retry`` trace node under the call's node and fires
the call's ``on_retry`` with a transport :class:`~engine.RetryEvent`.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from engine._errors import RateLimitError, RetryableModelError
from engine._hooks import RetryEvent

if TYPE_CHECKING:
    from engine._trace import Node
    from engine.models import Model, Request, Response

__all__ = ["Transport", "complete", "transport_policy"]

Sleep = Callable[[float], Awaitable[None]]
OnRetry = Callable[[RetryEvent], object]


def transport_policy(
    *,
    attempts: int = 5,
    max_delay_s: float = 120.0,
    sleep: Sleep = anyio.sleep,
    initial: float = 0.5,
    max_wait: float = 30.0,
) -> AsyncRetrying:
    """Build the transport retry policy.

    Args:
        attempts: Attempts in all, the first included.
        max_delay_s: No retry starts later than this many seconds after the first attempt.
        sleep: The sleep between attempts (inject one in tests so they never wait).
        initial: The first backoff in seconds; it doubles per attempt, plus jitter.
        max_wait: The longest backoff, unless the provider's ``Retry-After`` asks for more.

    Returns:
        A tenacity policy that retries only :class:`~engine.RetryableModelError`, waits at
        least a rate limit's ``retry_after``, never sleeps past the ambient anyio deadline
        (it gives up and re-raises instead), and re-raises the last error when it stops.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts!r}")
    return AsyncRetrying(
        retry=retry_if_exception_type(RetryableModelError),
        wait=_Backoff(initial, max_wait),
        stop=stop_after_attempt(attempts) | _StopBeforeDeadline(max_delay_s),
        sleep=sleep,
        reraise=True,
    )


class _Backoff(wait_base):
    """Wait ``initial * 2**(n-1)`` plus up to ``initial`` of jitter, capped at ``max_wait``.

    A rate limit's ``retry_after`` raises the wait to at least that, past the cap: the
    provider said when it will take the call again.
    """

    def __init__(self, initial: float, max_wait: float) -> None:
        self.initial = initial
        self.max_wait = max_wait

    def __call__(self, state: RetryCallState) -> float:
        exponent = min(state.attempt_number - 1, 62)  # 2**62 s is past any cap already
        wait = min(self.max_wait, self.initial * 2.0**exponent + random.uniform(0, self.initial))
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, RateLimitError) and error.retry_after is not None:
            return max(wait, error.retry_after)
        return wait


class _StopBeforeDeadline(stop_base):
    """Stop when the next sleep would end past ``max_delay_s`` or the ambient deadline.

    Sleeping into a deadline would only turn the provider's error into a less useful
    timeout, so the policy re-raises the provider's error while there is still time.
    """

    def __init__(self, max_delay_s: float) -> None:
        self.max_delay_s = max_delay_s

    def __call__(self, state: RetryCallState) -> bool:
        upcoming = state.upcoming_sleep
        if (state.seconds_since_start or 0.0) + upcoming > self.max_delay_s:
            return True
        deadline = anyio.current_effective_deadline()
        return not math.isinf(deadline) and anyio.current_time() + upcoming >= deadline


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
        except RetryableModelError as exc:
            first = exc
        # The slow path: only a failed call pays for the policy.
        retries = _Retries(model, request, self.node, self.on_retry)
        return await retries.run((self.policy or _DEFAULT).copy(), first)


async def complete(
    model: Model,
    request: Request,
    *,
    policy: AsyncRetrying | None = None,
    node: Node | None = None,
    on_retry: OnRetry | None = None,
) -> Response:
    """Answer ``request`` with ``model``, retrying transport failures under ``policy``."""
    return await Transport(policy, node, on_retry)(model, request)


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
        await self._event(number, kind, str(self.last))
        try:
            response = await self.model.complete(self.request)
        except BaseException as exc:
            self.last = exc
            if node is not None:
                node.close("error", error=type(exc).__name__)
            raise
        if node is not None:
            node.close("ok")
        return response

    async def _event(self, number: int, kind: str, message: str) -> None:
        if self.on_retry is None:
            return
        key = self.node.key if self.node is not None else ""
        result = self.on_retry(RetryEvent("transport", number, kind, message, key))
        if inspect.isawaitable(result):
            await result
