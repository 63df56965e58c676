"""How a run ended, as the status and error it is stored with.

===================================  ===========  ==========================================
The run ended with                   status       ``error.kind``
===================================  ===========  ==========================================
a return value                       completed    (no error)
a ``DecisionError``                  suspended    the decision's kind (``no_action``, ...)
a step waiting for a person          waiting      ``waiting``
a spent budget                       suspended    ``budget_exceeded``
a breaker open in "suspend" mode     suspended    ``provider_unavailable``
its ``timeout_s``                    cancelled    ``timeout``
``engine.cancel`` or its batch's     cancelled    ``cancelled``
a shutdown (SIGINT, SIGTERM)         cancelled    ``shutdown``
any other exception                  failed       the exception's class name
===================================  ===========  ==========================================

Every one of them resumes from the journal.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from typing import Any

from engine._base import (
    BudgetExceededError,
    CircuitOpenError,
    DecisionError,
    RunStopped,
    WaitingForAnswer,
    json_safe,
    log,
    mask_secrets,
    release,
    to_json,
)
from engine._run._spending import Counts
from engine.models import add_cost
from engine.store import Run, RunErrorInfo, RunStatus, TokenUsage

__all__ = ["Outcome", "ended", "failure", "log_end", "verdict"]

#: The log event of each way a run ends.
_EVENTS: dict[RunStatus, str] = {
    "completed": "run_completed",
    "waiting": "run_waiting",
    "suspended": "run_suspended",
    "failed": "run_failed",
    "cancelled": "run_cancelled",
}
#: What a run cut short by the engine says, by the reason it was cut.
_CUT: dict[str, str] = {
    "cancelled": "the run was cancelled before it finished; resume it to go on from its journal",
    "shutdown": (
        "the process was shut down (SIGINT or SIGTERM) before the run finished; resume it to "
        "go on from its journal"
    ),
}


@dataclass(slots=True)
class Outcome:
    """How one execution of a flow ended: a value, an exception, or a stop by the engine.

    Attributes:
        value: The flow's return value.
        error: The exception the flow raised.
        stopped: Why the engine cut the run short (``timeout``, ``budget_exceeded``,
            ``cancelled``, ``shutdown``).
        limit: The limit that cut it short (``timeout_s``, or the wall-time budget).
        spent_s: Seconds the run has run, all executions together.
        where: The key of the node ``error`` came out of (see
            :func:`engine._base._trace.failed_at`).
    """

    value: Any = None
    error: Exception | None = None
    stopped: str | None = None
    limit: float | None = None
    spent_s: float = 0.0
    where: str | None = None


Verdict = tuple[RunStatus, Any, RunErrorInfo | None]


def verdict(outcome: Outcome, flow: str) -> Verdict:
    """Return the status, the JSON result and the error a run is stored with."""
    if outcome.stopped is not None:
        return _stopped(outcome)
    error = outcome.error
    if error is None:
        try:
            return "completed", to_json(outcome.value, what=f"the result of flow {flow}"), None
        except Exception as exc:
            return "failed", None, failure(exc, outcome.where)
    if isinstance(error, WaitingForAnswer):
        return "waiting", None, _waiting(error)
    if isinstance(error, DecisionError):
        return "suspended", None, _suspension(error)
    if isinstance(error, BudgetExceededError):
        return "suspended", None, RunErrorInfo(kind="budget_exceeded", message=str(error))
    if isinstance(error, RunStopped):
        info = RunErrorInfo(kind=error.reason, message=_readable(error), where=error.where)
        return "cancelled", None, info
    if isinstance(error, CircuitOpenError):
        # The breaker parked it (its "suspend" mode): resume it once the provider is back.
        return (
            "suspended",
            None,
            RunErrorInfo(kind="provider_unavailable", message=_readable(error)),
        )
    # Any other exception fails the run (DESIGN: only a DecisionError suspends), transport
    # errors whose retries ran out included; a run policy can resume those by kind.
    return "failed", None, failure(error, outcome.where)


def _stopped(outcome: Outcome) -> Verdict:
    reason = outcome.stopped or "cancelled"
    if reason == "budget_exceeded":
        error = BudgetExceededError("wall_s", limit=outcome.limit or 0.0, spent=outcome.spent_s)
        return "suspended", None, RunErrorInfo(kind=reason, message=str(error))
    if reason == "timeout":
        message = (
            f"the run did not finish within timeout_s={outcome.limit:g}; resume it to go on "
            "from its journal"
        )
    else:
        message = _CUT.get(reason, _CUT["cancelled"])
    return "cancelled", None, RunErrorInfo(kind=reason, message=message)


def _suspension(exc: DecisionError) -> RunErrorInfo:
    # The replies are what the model said: one JSON cannot carry (a lone surrogate) is
    # stored escaped, readable, rather than failing the run's last write (its journal keeps
    # the reply whole).
    return RunErrorInfo(
        kind=exc.kind,
        message=_readable(exc),
        where=getattr(exc, "where", None),
        options=exc.options,
        replies=json_safe(exc.replies),
        menu=exc.menu,
        prompt=exc.prompt,
    )


def _waiting(exc: WaitingForAnswer) -> RunErrorInfo:
    # The questions quote the flow's prompt and the model's pick: stored escaped.
    questions: list[dict[str, Any]] = json_safe(exc.questions)
    first = questions[0]
    return RunErrorInfo(
        kind="waiting",
        message=_readable(exc),
        where=first.get("where"),
        options=first.get("options"),
        questions=questions,
    )


def _readable(exc: BaseException) -> str:
    """The exception's message, secrets masked, what JSON cannot carry escaped."""
    text: str = json_safe(mask_secrets(str(exc)))
    return text


def failure(exc: BaseException, where: str | None = None) -> RunErrorInfo:
    """Return the error of a failed run: the exception's class, message and traceback.

    ``where`` is the key of the node the exception came out of, or failing that a key the
    exception names itself.
    """
    # Exception messages may quote what a provider sent back (an echoed key, a URL): what
    # is stored never holds a secret.
    # A message may also quote a value JSON cannot carry (a lone surrogate): escaped, it is
    # stored readable instead of failing the run's last write.
    key = getattr(exc, "key", None)
    return RunErrorInfo(
        kind=type(exc).__name__,
        message=_readable(exc),
        where=json_safe(where or (key if isinstance(key, str) else None)),
        traceback=json_safe(mask_secrets("".join(traceback.format_exception(exc)))),
    )


def log_end(run: Run, status: RunStatus, error: RunErrorInfo | None) -> None:
    """Log how ``run`` ended: its ``run_<status>`` event, with the error's kind if any."""
    if error is None:
        log.info(_EVENTS[status], run_id=run.run_id, flow=run.flow)
    else:
        log.info(_EVENTS[status], run_id=run.run_id, flow=run.flow, kind=error.kind)


def ended(
    run: Run,
    status: RunStatus,
    result: Any,
    error: RunErrorInfo | None,
    counts: Counts,
    retries: dict[str, int],
    active_s: float,
) -> Run:
    """Return ``run`` as it ended: released with its outcome, this execution's ``counts``
    added to its own, its ``retries`` and ``active_s`` as they now stand."""
    return release(
        run,
        status,
        error=error,
        finished_at=time.time(),
        result=result,
        usage=TokenUsage(
            input_tokens=run.usage.input_tokens + counts.input_tokens,
            output_tokens=run.usage.output_tokens + counts.output_tokens,
        ),
        cost_usd=add_cost(run.cost_usd, counts.cost_usd),
        transitions=run.transitions + counts.transitions,
        model_calls=run.model_calls + counts.model_calls,
        retries=retries,
        active_s=active_s,
    )
