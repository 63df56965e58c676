"""An async engine for flows whose next step is chosen by an LLM.

An agentic function offers the model a menu of options; the model picks one and the engine
resolves the pick into the result of the next step. Runs are journaled and resume after a
``DecisionError`` or a crash without redoing finished steps.
"""

from engine import decision
from engine._agentic import agentic_function
from engine._batch import Batch, BatchProgress
from engine._branches import gather, map
from engine._breaker import CircuitBreaker
from engine._context import idempotency_key
from engine._engine import Engine
from engine._errors import (
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
from engine._graph import RoutingGraph
from engine._guard import ProviderGuard
from engine._hooks import Hooks, RetryEvent
from engine._ledger import RunBudget
from engine._limits import ModelLimits
from engine._logging import configure_logging
from engine._policies import (
    DecisionPolicy,
    decision_policy,
    run_policy,
    step_policy,
    transport_policy,
)
from engine._runtime import Runtime
from engine._trace import Node, Trace
from engine._trace_view import render_trace

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
