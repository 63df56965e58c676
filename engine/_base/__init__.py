"""The ground floor: what every other folder of the package may use.

The error tree (:mod:`._errors`), the ambient context variables (the runtime an agentic
function runs with, the current trace node, the run id), the trace records, values to JSON
and back, secret masking, logging, and the type aliases the floors share. Nothing here
imports any other part of the package.
"""

from engine._base._context import (
    RUNTIME_PARAMS,
    current_node,
    current_run_id,
    current_runtime,
    idempotency_key,
    using_node,
)
from engine._base._errors import (
    REPLY_HEAD,
    AuthenticationError,
    BadRequestError,
    BudgetExceededError,
    CircuitOpenError,
    DeadlineExceeded,
    DecisionError,
    EngineError,
    JournalError,
    MaxIterationsError,
    ModelError,
    ModelTimeoutError,
    NonDeterminismError,
    OptionsTypeError,
    OptionsValueError,
    ProviderUnavailableError,
    RateLimitError,
    RetryableModelError,
    RunConflictError,
    RunStopped,
    ScriptExhaustedError,
)
from engine._base._json import check_replayable, digest, from_json, to_json
from engine._base._log import configure_logging, log
from engine._base._secrets import mask_secrets, remember_secret
from engine._base._trace import Node, NodeKind, Trace, failed_at
from engine._base._types import Clock, Flow, Sleep

__all__ = [
    "REPLY_HEAD",
    "RUNTIME_PARAMS",
    "AuthenticationError",
    "BadRequestError",
    "BudgetExceededError",
    "CircuitOpenError",
    "Clock",
    "DeadlineExceeded",
    "DecisionError",
    "EngineError",
    "Flow",
    "JournalError",
    "MaxIterationsError",
    "ModelError",
    "ModelTimeoutError",
    "Node",
    "NodeKind",
    "NonDeterminismError",
    "OptionsTypeError",
    "OptionsValueError",
    "ProviderUnavailableError",
    "RateLimitError",
    "RetryableModelError",
    "RunConflictError",
    "RunStopped",
    "ScriptExhaustedError",
    "Sleep",
    "Trace",
    "check_replayable",
    "configure_logging",
    "current_node",
    "current_run_id",
    "current_runtime",
    "digest",
    "failed_at",
    "from_json",
    "idempotency_key",
    "log",
    "mask_secrets",
    "remember_secret",
    "to_json",
    "using_node",
]
