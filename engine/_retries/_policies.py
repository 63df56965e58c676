"""The retry policies of every layer, built in one place (DESIGN: "Retry layers").

Each layer's policy is a tenacity ``AsyncRetrying`` that a user may replace with their own:

0. :func:`transport_policy`: a provider call that failed in transit (``Runtime(transport=)``).
2. :func:`decision_policy`: a decision that failed after its re-picks, asked again from
   scratch, optionally down a chain of fallback models (``Runtime(decision=)``).
3. :func:`step_policy`: a function option that raised, only when the option is declared
   retryable (``@agentic_function(retry=...)``): its side effects are the user's to vouch for.
4. :func:`run_policy`: a suspended run, resumed (``Engine(run_policy=)``).

(Layer 1, the re-pick, is ``max_retries``.) Every policy retries only what it classifies as
retryable, re-raises the last error when it stops, and takes the sleep between attempts as
an argument, so tests never wait.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import anyio
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    wait_none,
)
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from engine._base import (
    ENDED_IN_ERROR,
    BudgetExceededError,
    CircuitOpenError,
    DecisionError,
    JournalError,
    NonDeterminismError,
    RateLimitError,
    RetryableModelError,
    RunConflictError,
    RunStopped,
    Sleep,
)
from engine.models import Model, model_from_string

__all__ = [
    "DecisionPolicy",
    "decision_policy",
    "run_policy",
    "step_policy",
    "transport_policy",
]


#: Errors no step policy retries: the engine's own verdicts, which another try cannot change.
NEVER_RETRIED: tuple[type[BaseException], ...] = (
    BudgetExceededError,
    CircuitOpenError,
    DecisionError,
    JournalError,
    NonDeterminismError,
    RunConflictError,
    RunStopped,  # a cancel or a shutdown: the run must stop, not try again
)
#: Why a stopped run is worth resuming by itself: its provider failed, not its model (a run
#: the breaker parked, or one that failed once the transport's retries ran out).
RESUMABLE_KINDS: frozenset[str] = frozenset(
    {
        "provider_unavailable",
        "RateLimitError",
        "ProviderUnavailableError",
        "ProviderUnreachableError",
        "ModelTimeoutError",
    }
)


def transport_policy(
    *,
    attempts: int = 5,
    max_delay_s: float = 120.0,
    sleep: Sleep = anyio.sleep,
    initial: float = 0.5,
    max_wait: float = 30.0,
) -> AsyncRetrying:
    """Build the transport retry policy (layer 0).

    Args:
        attempts: Attempts in all, the first included.
        max_delay_s: No retry starts later than this many seconds after the first attempt.
        sleep: The sleep between attempts (inject one in tests so they never wait).
        initial: The first backoff in seconds; it doubles per attempt, plus jitter.
        max_wait: The longest backoff, unless the provider's ``Retry-After`` asks for more.

    Returns:
        A tenacity policy that retries only :class:`~engine.RetryableModelError` (never an
        open circuit breaker's :class:`~engine.CircuitOpenError`), waits at least a rate
        limit's ``retry_after``, never sleeps past the ambient anyio deadline (it gives up
        and re-raises instead), and re-raises the last error when it stops.
    """
    _check_attempts(attempts)
    return AsyncRetrying(
        retry=retry_if_exception(_transient),
        wait=Backoff(initial, max_wait),
        stop=stop_after_attempt(attempts) | StopBeforeDeadline(max_delay_s),
        sleep=sleep,
        reraise=True,
    )


@dataclass(frozen=True, slots=True)
class DecisionPolicy:
    """Layer 2: when and on which model a failed decision is asked again from scratch.

    Attributes:
        retrying: The tenacity policy; its attempts count the first ask.
        fallback: The models of attempts 2, 3, ... in order (the last one stays for any
            attempt beyond them); empty: every attempt uses the decision's own model.
    """

    retrying: AsyncRetrying
    fallback: tuple[Model, ...] = ()

    def model_for(self, attempt: int, first: Model) -> Model:
        """Return the model of attempt ``attempt`` (1-based), ``first`` being the decision's."""
        if attempt <= 1 or not self.fallback:
            return first
        return self.fallback[min(attempt - 2, len(self.fallback) - 1)]


def decision_policy(
    attempts: int | None = None,
    *,
    fallback: Sequence[Model | str] = (),
    wait_s: float = 0.0,
    sleep: Sleep = anyio.sleep,
) -> DecisionPolicy:
    """Build a decision policy: after a ``DecisionError``, ask the whole decision again.

    Each new attempt sends the decision's original request (not the failed conversation)
    with a fresh re-pick budget, on the next model of ``fallback`` when there is one: a
    cheap model first and a stronger one after, say.

    Args:
        attempts: Asks in all, the first included (default: one per model of the chain,
            or two without a chain).
        fallback: Models (or model strings such as ``"openai:gpt-4o"``) for attempts 2, 3...
        wait_s: Seconds between attempts (a decision failure is rarely cured by time).
        sleep: The sleep between attempts.
    """
    models = tuple(model_from_string(m) if isinstance(m, str) else m for m in fallback)
    count = attempts if attempts is not None else 1 + max(1, len(models))
    _check_attempts(count)
    retrying = AsyncRetrying(
        retry=retry_if_exception_type(DecisionError),
        wait=_fixed(wait_s),
        stop=stop_after_attempt(count),
        sleep=sleep,
        reraise=True,
    )
    return DecisionPolicy(retrying, models)


def step_policy(
    attempts: int = 3,
    *,
    retry_on: type[BaseException] | tuple[type[BaseException], ...] = Exception,
    initial: float = 0.5,
    max_wait: float = 10.0,
    max_delay_s: float = 60.0,
    sleep: Sleep = anyio.sleep,
) -> AsyncRetrying:
    """Build a step policy (layer 3) for a function option declared retryable.

    Args:
        attempts: Runs of the step in all, the first included.
        retry_on: The exceptions worth another run. The engine's own verdicts
            (``DecisionError``, an exhausted budget, an open circuit, a non-determinism
            error) are never retried.
        initial: The first backoff in seconds; it doubles per attempt, plus jitter.
        max_wait: The longest backoff.
        max_delay_s: No retry starts later than this many seconds after the first run.
        sleep: The sleep between attempts.
    """
    _check_attempts(attempts)
    kinds = retry_on if isinstance(retry_on, tuple) else (retry_on,)

    def retryable(exc: BaseException) -> bool:
        return isinstance(exc, kinds) and not isinstance(exc, NEVER_RETRIED)

    return AsyncRetrying(
        retry=retry_if_exception(retryable),
        wait=Backoff(initial, max_wait),
        stop=stop_after_attempt(attempts) | StopBeforeDeadline(max_delay_s),
        sleep=sleep,
        reraise=True,
    )


def run_policy(
    attempts: int = 3,
    *,
    on: Iterable[str] = RESUMABLE_KINDS,
    initial: float = 30.0,
    max_wait: float = 600.0,
    sleep: Sleep = anyio.sleep,
) -> AsyncRetrying:
    """Build a run policy (layer 4): resume a run that stopped for a reason in ``on``.

    The policy's attempts are executions of the run; each retry is a resume after a wait
    (doubling from ``initial``, plus jitter). When it stops, the last run is returned as it
    is (suspended or failed).

    Args:
        attempts: Executions in all, the first included.
        on: ``error.kind`` values worth a resume: by default a run the breaker parked
            (``provider_unavailable``) and one that failed on a provider error after its
            transport retries (``RateLimitError``, ``ProviderUnavailableError``,
            ``ModelTimeoutError``); add ``no_action`` and the other ``DecisionError`` kinds
            to ask failed decisions again, best with a fallback model.
        initial: Seconds before the first resume.
        max_wait: The longest wait between resumes.
        sleep: The sleep between resumes.
    """
    _check_attempts(attempts)
    kinds = frozenset(on)

    def stopped(run: object) -> bool:
        error = getattr(run, "error", None)
        status = getattr(run, "status", None)
        return status in ENDED_IN_ERROR and getattr(error, "kind", "") in kinds

    return AsyncRetrying(
        retry=retry_if_result(stopped),
        wait=Backoff(initial, max_wait),
        stop=stop_after_attempt(attempts),
        sleep=sleep,
        retry_error_callback=_last_result,
    )


def _last_result(state: RetryCallState) -> object:
    assert state.outcome is not None
    return state.outcome.result()


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, RetryableModelError) and not isinstance(exc, CircuitOpenError)


def _check_attempts(attempts: int) -> None:
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts!r}")


def _fixed(seconds: float) -> wait_base:
    if seconds <= 0:
        return wait_none()
    return Backoff(seconds, seconds, jitter=False)


class Backoff(wait_base):
    """Wait ``initial * 2**(n-1)`` plus up to ``initial`` of jitter, capped at ``max_wait``.

    A rate limit's ``retry_after`` raises the wait to at least that, past the cap: the
    provider said when it will take the call again.
    """

    def __init__(self, initial: float, max_wait: float, *, jitter: bool = True) -> None:
        self.initial = initial
        self.max_wait = max_wait
        self.jitter = jitter

    def __call__(self, state: RetryCallState) -> float:
        exponent = min(state.attempt_number - 1, 62)  # 2**62 s is past any cap already
        if not self.jitter:
            return self.initial
        wait = min(self.max_wait, self.initial * 2.0**exponent + random.uniform(0, self.initial))
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, RateLimitError) and error.retry_after is not None:
            return max(wait, error.retry_after)
        return wait


class StopBeforeDeadline(stop_base):
    """Stop when the next sleep would end past ``max_delay_s`` or the ambient deadline.

    Sleeping into a deadline would only turn the last error into a less useful timeout, so
    the policy re-raises that error while there is still time.
    """

    def __init__(self, max_delay_s: float) -> None:
        self.max_delay_s = max_delay_s

    def __call__(self, state: RetryCallState) -> bool:
        upcoming = state.upcoming_sleep
        if (state.seconds_since_start or 0.0) + upcoming > self.max_delay_s:
            return True
        deadline = anyio.current_effective_deadline()
        return not math.isinf(deadline) and anyio.current_time() + upcoming >= deadline
