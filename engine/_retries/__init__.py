"""The retry layers: transport, decision, step and run, their policies, and the ledger.

Layer 0 (:class:`Transport`) retries one model call; the decision and step layers
(:class:`DecisionRetry`, :func:`retry_step`) ask a failed decision again or rerun a failed
step; :func:`retry_run` resumes a stopped run. Their tenacity policies are built in one place
(:mod:`._policies`); every attempt is a :class:`RetryEvent` for ``on_retry`` and an entry of the
run's :class:`RetryLedger`, which also keeps the run's :class:`RunBudget`.
"""

from engine._retries._events import OnRetry, RetryEvent
from engine._retries._layers import DecisionRetry, retry_run, retry_step
from engine._retries._ledger import RetryLedger, RunBudget, current_ledger, note_retry
from engine._retries._policies import (
    DecisionPolicy,
    decision_policy,
    run_policy,
    step_policy,
    transport_policy,
)
from engine._retries._transport import Transport

__all__ = [
    "DecisionPolicy",
    "DecisionRetry",
    "OnRetry",
    "RetryEvent",
    "RetryLedger",
    "RunBudget",
    "Transport",
    "current_ledger",
    "decision_policy",
    "note_retry",
    "retry_run",
    "retry_step",
    "run_policy",
    "step_policy",
    "transport_policy",
]
