"""The engine's exceptions, one tree rooted at :class:`EngineError`.

::

    EngineError
    ├── OptionsTypeError (TypeError)       a bad option container, item or schema
    ├── OptionsValueError (ValueError)     an empty menu, a duplicate option name
    ├── DecisionError (ValueError)         no valid pick after every re-pick
    ├── DeadlineExceeded (TimeoutError)    a ``timeout_s`` budget ran out
    ├── NonDeterminismError                replay met a different request than the journal holds
    ├── JournalError                       a value could not be journaled or read back
    ├── RunConflictError                   another worker or resumer holds the run
    ├── RunNotFoundError (KeyError)        no run has the given id
    ├── MaxIterationsError (RuntimeError)  a tool loop still called tools at max_iterations
    ├── BudgetExceededError                a run spent its retry, token or wall-time budget
    ├── RunStopped                         the engine stopped a run between two transitions
    └── ModelError                         a provider call failed
        ├── RetryableModelError            worth another attempt (transport layer)
        │   ├── RateLimitError             429; ``retry_after`` in seconds when known
        │   ├── ProviderUnavailableError   5xx, overloaded, dropped connection
        │   │   ├── ProviderUnreachableError  no connection could be made (names the URL)
        │   │   └── CircuitOpenError       the provider's circuit breaker is open
        │   └── ModelTimeoutError          the provider did not answer in time
        ├── BadRequestError                the provider rejected the request
        ├── AuthenticationError            missing or wrong credentials
        └── ScriptExhaustedError           a ScriptedModel ran out of replies

Each exception carries its context as keyword attributes and a one-sentence message that
names the bad value and, where possible, the fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "BudgetExceededError",
    "CircuitOpenError",
    "DeadlineExceeded",
    "DecisionError",
    "EngineError",
    "JournalError",
    "MaxIterationsError",
    "ModelError",
    "ModelTimeoutError",
    "NonDeterminismError",
    "OptionsTypeError",
    "OptionsValueError",
    "ProviderUnavailableError",
    "ProviderUnreachableError",
    "RateLimitError",
    "RetryableModelError",
    "RunConflictError",
    "RunNotFoundError",
    "RunStopped",
    "ScriptExhaustedError",
    "WaitingForAnswer",
]

REPLY_HEAD = 200


class EngineError(Exception):
    """Root of every error the engine raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        # Pickle the attributes, not a call to __init__ with the formatted message (the
        # default), so errors keep their context across processes.
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(
    cls: type[EngineError], args: tuple[object, ...], state: dict[str, object]
) -> EngineError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class OptionsTypeError(EngineError, TypeError):
    """An option container, item, handler or schema has the wrong shape."""


class OptionsValueError(EngineError, ValueError):
    """A menu is empty or names one option twice."""


class DecisionError(EngineError, ValueError):
    """The model never produced a valid pick, after every re-pick.

    Attributes:
        kind: The last failure kind (``no_action``, ``unknown_call``, ``bad_args``,
            ``missing_required``, ``type_mismatch``, ``enum_violation``, ``truncated``).
        message: The whole message, starting ``decision failed after N attempt(s)``.
        detail: The last failure's own message (valid names, the field path).
        reply: The head of the last reply.
        replies: Every raw reply, in order.
        attempts: How many picks were asked for.
        options: The names of the offered options.
        where: The key of the decision's node in its run, once a run's journal knows it
            (``None`` outside a run).
        human_pick: Whether the pick that failed was a person's (``resume(pick=...)``), not
            the model's.
        menu: The decision's options described for a person (JSON data, each option with
            its arguments), once a run's journal knows where it failed; stored with the run.
        prompt: The question the decision asked (its prompt, capped), likewise.
    """

    menu: list[dict[str, Any]] | None = None
    prompt: str | None = None

    def __init__(
        self,
        kind: str,
        detail: str,
        *,
        replies: Sequence[str] = (),
        attempts: int = 1,
        options: Sequence[str] = (),
        where: str | None = None,
        human_pick: bool = False,
    ) -> None:
        self.kind = kind
        self.detail = detail
        self.replies = list(replies)
        self.attempts = attempts
        self.options = list(options)
        self.where = where
        self.human_pick = human_pick
        last = self.replies[-1] if self.replies else ""
        self.reply = last[:REPLY_HEAD]
        self.message = (
            f"decision failed after {attempts} attempt(s): {kind}: {detail}; "
            f"last reply: {self.reply!r}"
        )
        super().__init__(self.message)


class WaitingForAnswer(EngineError):
    """A step of the flow waits for a person: a human decision, or the approval of a pick.

    Inside a run of an :class:`~engine.Engine` it parks the run (status ``waiting``) with its
    questions, and the flow goes on from there once a person answers
    (:meth:`~engine.Engine.answer`). Outside a run there is no one to park it: it is raised
    to the caller, who holds the question.

    Attributes:
        questions: What is asked, one dict per waiting step (several where parallel branches
            wait): ``where`` (the step's journal key), ``name``, ``kind`` (``decision`` or
            ``approval``), ``prompt``, ``options``, ``menu`` (each option described for a
            person), for an approval ``pick`` (the model's pick awaiting it), ``asked_at``
            and ``deadline_at``.
    """

    def __init__(self, questions: Sequence[Mapping[str, Any]]) -> None:
        self.questions = [dict(q) for q in questions]
        first = self.questions[0] if self.questions else {}
        more = f" (and {len(self.questions) - 1} more)" if len(self.questions) > 1 else ""
        what = "the approval of a pick" if first.get("kind") == "approval" else "a person's pick"
        super().__init__(
            f"waiting for {what} at {first.get('where')!r}{more}: {first.get('prompt', '')}"
        )


class DeadlineExceeded(EngineError, TimeoutError):
    """A ``timeout_s`` budget ran out before the work inside it finished."""

    def __init__(self, timeout_s: float, *, where: str = "exec") -> None:
        self.timeout_s = timeout_s
        self.where = where
        super().__init__(
            f"{where} did not finish within timeout_s={timeout_s}; raise timeout_s "
            "or make the work inside it smaller"
        )


class NonDeterminismError(EngineError):
    """Replay met a request that differs from the one recorded under the same key."""

    def __init__(self, key: str, detail: str) -> None:
        self.key = key
        self.detail = detail
        super().__init__(
            f"replay diverged at {key!r}: {detail}; the flow must ask the same things in the "
            "same order on resume (fix the code, or start a new run)"
        )


class JournalError(EngineError):
    """A value could not be journaled (not JSON-serialisable) or read back."""


class RunConflictError(EngineError):
    """Another worker or resumer holds the run, so this one may not proceed."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        self.run_id = run_id
        super().__init__(message)


class RunNotFoundError(EngineError, KeyError):
    """No run has the given id (a ``KeyError``, as a missing key of the store).

    Attributes:
        run_id: The id asked for.
    """

    def __init__(self, run_id: str, *, detail: str | None = None) -> None:
        self.run_id = run_id
        self.message = f"unknown run {run_id!r}" + (f": {detail}" if detail else "")
        super().__init__(self.message)

    def __str__(self) -> str:
        # KeyError's own str() quotes its key; this one reads as a sentence.
        return self.message


class MaxIterationsError(EngineError, RuntimeError):
    """The model was still calling tools when a turn's ``max_iterations`` ran out."""

    def __init__(self, max_iterations: int) -> None:
        self.max_iterations = max_iterations
        super().__init__(
            f"the model was still calling tools after max_iterations={max_iterations} model "
            "calls; raise max_iterations or give the model fewer reasons to call tools"
        )


class BudgetExceededError(EngineError):
    """A run spent its budget (retry attempts, tokens, wall time or money); the run suspends.

    Attributes:
        resource: What ran out: ``"attempts"``, ``"tokens"``, ``"wall_s"`` or ``"cost_usd"``.
        limit: The budget.
        spent: What the run has spent, resumes included.
    """

    def __init__(self, resource: str, *, limit: float, spent: float) -> None:
        self.resource = resource
        self.limit = limit
        self.spent = spent
        super().__init__(
            f"the run's {resource} budget ran out ({spent:g} spent of {limit:g}); raise "
            f"RunBudget({resource}=...) on the Engine and resume the run"
        )


class RunStopped(EngineError):
    """The engine stopped a run between two transitions (a shutdown or a cancel).

    Raised where the run would have made its next live model call or step, so nothing it
    paid for is lost; the run is recorded as ``cancelled`` with ``reason`` and resumes.
    """

    def __init__(self, reason: str, *, where: str | None = None) -> None:
        self.reason = reason
        self.where = where
        super().__init__(f"the run was stopped ({reason}) before {where or 'its next step'}")


class ModelError(EngineError):
    """A model provider call failed."""

    def __init__(self, message: str, *, provider: str | None = None) -> None:
        self.provider = provider
        super().__init__(message)


class RetryableModelError(ModelError):
    """A provider failure that another attempt may fix (the transport layer retries it)."""


class RateLimitError(RetryableModelError):
    """The provider answered 429; ``retry_after`` is its wait in seconds when it said one."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, provider: str | None = None
    ) -> None:
        self.retry_after = retry_after
        super().__init__(message, provider=provider)


class ProviderUnavailableError(RetryableModelError):
    """The provider failed on its side (5xx, overloaded) or the connection dropped."""


class ProviderUnreachableError(ProviderUnavailableError):
    """No connection could be made to the provider: nothing listens there, or no route.

    Attributes:
        url: The endpoint called, when known; the message names it.
    """

    def __init__(
        self, message: str, *, provider: str | None = None, url: str | None = None
    ) -> None:
        self.url = url
        super().__init__(message, provider=provider)


class CircuitOpenError(ProviderUnavailableError):
    """The provider's circuit breaker is open: recent calls failed, so none is sent now.

    The transport layer never retries it; a run that meets it parks as suspended with the
    reason ``provider_unavailable``, to be resumed once the provider is back. ``reason``,
    when set, is why a provider that never answered is taken for down (the connection
    error, naming the URL); the message starts with it.
    """

    def __init__(self, provider: str, *, retry_in_s: float, reason: str | None = None) -> None:
        self.retry_in_s = retry_in_s
        self.reason = reason
        if reason is not None:  # a provider that never answered: nothing listens there
            message = (
                f"{reason.rstrip('.')}; it has not answered since this process started, so "
                f"calls to it stop at once (next try in {retry_in_s:.1f}s): start the server "
                "or fix the URL, then resume the run"
            )
        else:
            message = (
                f"provider {provider!r} is unavailable: its circuit breaker is open after "
                f"repeated failures (next probe in {retry_in_s:.1f}s); resume the run once it "
                "is back"
            )
        super().__init__(message, provider=provider)


class ModelTimeoutError(RetryableModelError):
    """The provider did not answer in time."""


class BadRequestError(ModelError):
    """The provider rejected the request itself; retrying the same request cannot help."""


class AuthenticationError(ModelError):
    """The provider refused the credentials; set the API key and try again."""


class ScriptExhaustedError(ModelError):
    """A :class:`~engine.models.ScriptedModel` was asked for more replies than it holds."""
