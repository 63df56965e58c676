"""An async engine for flows whose next step is chosen by an LLM.

An agentic function offers the model a menu of options; the model picks one and the engine
resolves the pick into the result of the next step. Runs are journaled and resume after a
``DecisionError`` or a crash without redoing finished steps.
"""

from engine import decision
from engine._base._context import idempotency_key
from engine._base._errors import (
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
from engine._base._logging import configure_logging
from engine._base._trace import Node, Trace
from engine._limits._breaker import CircuitBreaker
from engine._limits._guard import ProviderGuard
from engine._limits._limiter import ModelLimits
from engine._observe._graph import RoutingGraph
from engine._observe._trace_view import render_trace
from engine._retries._ledger import RunBudget
from engine._retries._policies import (
    DecisionPolicy,
    decision_policy,
    run_policy,
    step_policy,
    transport_policy,
)
from engine._run._batch import Batch, BatchProgress
from engine._run._engine import Engine
from engine._runtime._agentic import agentic_function
from engine._runtime._branches import gather, map
from engine._runtime._hooks import Hooks, RetryEvent
from engine._runtime._runtime import Runtime

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
    "ModelTimeoutError",
    "Node",
    "NonDeterminismError",
    "OptionsTypeError",
    "OptionsValueError",
    "ProviderGuard",
    "ProviderUnavailableError",
    "RateLimitError",
    "RetryEvent",
    "RetryableModelError",
    "RoutingGraph",
    "RunBudget",
    "RunConflictError",
    "RunStopped",
    "Runtime",
    "ScriptExhaustedError",
    "Trace",
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
