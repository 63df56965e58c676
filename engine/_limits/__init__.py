"""Provider limits shared by every run that calls one model: limiter, breaker, guard.

A :class:`ModelLimits` caps a model's requests and tokens a minute and its calls in flight,
a :class:`CircuitBreaker` stops calling a provider that keeps failing, and a
:class:`ProviderGuard` puts both around the models an engine calls.
"""

from engine._limits._breaker import CircuitBreaker
from engine._limits._guard import ProviderGuard
from engine._limits._limiter import ModelLimits

__all__ = ["CircuitBreaker", "ModelLimits", "ProviderGuard"]
