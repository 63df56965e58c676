"""An async engine for flows whose next step is chosen by an LLM.

An agentic function offers the model a menu of options; the model picks one and the engine
resolves the pick into the result of the next step. Runs are journaled and resume after a
``DecisionError`` or a crash without redoing finished steps.
"""

from engine import _pure

if _pure.wanted():  # before any other module of the package: each from its source
    _pure.install()

from engine import decision
from engine._base import (
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
    Node,
    NonDeterminismError,
    OptionsTypeError,
    OptionsValueError,
    ProviderUnavailableError,
    ProviderUnreachableError,
    RateLimitError,
    RetryableModelError,
    RunConflictError,
    RunNotFoundError,
    RunStopped,
    ScriptExhaustedError,
    Trace,
    WaitingForAnswer,
    configure_logging,
    idempotency_key,
)
from engine._limits import CircuitBreaker, ModelLimits, ProviderGuard
from engine._observe import RoutingGraph, render_trace
from engine._retries import (
    DecisionPolicy,
    RetryEvent,
    RunBudget,
    decision_policy,
    run_policy,
    step_policy,
    transport_policy,
)
from engine._run import Batch, BatchProgress, Engine
from engine._runtime import Hooks, Runtime, agentic_function, gather, map
from engine.models import ModelSettings, Price

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "Batch",
    "BatchProgress",
    "BudgetExceededError",
    "CircuitBreaker",
    "CircuitOpenError",
    "DeadlineExceeded",
    "DecisionError",
    "DecisionPolicy",
    "Engine",
    "EngineError",
    "Hooks",
    "JournalError",
    "MaxIterationsError",
    "ModelError",
    "ModelLimits",
    "ModelSettings",
    "ModelTimeoutError",
    "Node",
    "NonDeterminismError",
    "OptionsTypeError",
    "OptionsValueError",
    "Price",
    "ProviderGuard",
    "ProviderUnavailableError",
    "ProviderUnreachableError",
    "RateLimitError",
    "RetryEvent",
    "RetryableModelError",
    "RoutingGraph",
    "RunBudget",
    "RunConflictError",
    "RunNotFoundError",
    "RunStopped",
    "Runtime",
    "ScriptExhaustedError",
    "Trace",
    "WaitingForAnswer",
    "agentic_function",
    "configure_logging",
    "decision",
    "decision_policy",
    "gather",
    "idempotency_key",
    "map",
    "render_trace",
    "run_policy",
    "step_policy",
    "transport_policy",
]
