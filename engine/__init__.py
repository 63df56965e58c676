"""An async engine for flows whose next step is chosen by an LLM.

An agentic function offers the model a menu of options; the model picks one and the engine
resolves the pick into the result of the next step. Runs are journaled and resume after a
``DecisionError`` or a crash without redoing finished steps.
"""

from engine import decision
from engine._agentic import agentic_function
from engine._branches import gather, map
from engine._context import idempotency_key
from engine._engine import Engine
from engine._errors import (
    AuthenticationError,
    BadRequestError,
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
    ScriptExhaustedError,
)
from engine._graph import RoutingGraph
from engine._hooks import Hooks, RetryEvent
from engine._logging import configure_logging
from engine._retry import transport_policy
from engine._runtime import Runtime
from engine._trace import Node, Trace
from engine._trace_view import render_trace

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "DeadlineExceeded",
    "DecisionError",
    "Engine",
    "EngineError",
    "Hooks",
    "JournalError",
    "MaxIterationsError",
    "ModelError",
    "ModelTimeoutError",
    "Node",
    "NonDeterminismError",
    "OptionsTypeError",
    "OptionsValueError",
    "ProviderUnavailableError",
    "RateLimitError",
    "RetryEvent",
    "RetryableModelError",
    "RoutingGraph",
    "RunConflictError",
    "Runtime",
    "ScriptExhaustedError",
    "Trace",
    "agentic_function",
    "configure_logging",
    "decision",
    "gather",
    "idempotency_key",
    "map",
    "render_trace",
    "transport_policy",
]
