"""Provider limits and circuit breakers around models, shared by every run of an engine.

A :class:`ProviderGuard` holds one :class:`~engine._limits._limiter.ModelLimiter` per model (by
name) and one :class:`~engine._limits._breaker.Circuit` per provider, and wraps each model a run
calls in a :class:`GuardedModel` that passes every call (every transport attempt) through
both. Engines that share one guard share its limits, so a process with several engines
still keeps one provider's limits once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import anyio

from engine._base import (
    Clock,
    ModelError,
    ProviderUnreachableError,
    RateLimitError,
    RetryableModelError,
    Sleep,
)
from engine._limits._breaker import Circuit, CircuitBreaker
from engine._limits._limiter import ModelLimiter, ModelLimits
from engine.models import Model, Request, Response

__all__ = ["GuardedModel", "ProviderGuard", "provider_of"]

Limits = ModelLimits | Mapping[str, ModelLimits] | None
_CACHED = 256


def provider_of(model: Model) -> str:
    """Name the provider a model calls: its ``provider`` attribute, else its class and URL.

    Models of one class share a provider unless they name another ``base_url``; a model
    without one (a simulated or custom model) is its own provider, by name.
    """
    explicit = getattr(model, "provider", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    kind = type(model).__name__
    if hasattr(model, "base_url"):
        return f"{kind}:{getattr(model, 'base_url', None) or 'default'}"
    return f"{kind}:{getattr(model, 'name', '')}"


class ProviderGuard:
    """Limits per model and a circuit breaker per provider, for every run that uses it.

    Args:
        limits: One :class:`ModelLimits` for every model, or limits by model name (models
            not named get none); ``None``: no limits, only rate-limit pauses.
        breaker: The circuit breaker settings, or ``None`` for no breaker.
        clock: Monotonic seconds (inject one in tests).
        sleep: The sleep used while waiting (inject one in tests).
    """

    def __init__(
        self,
        limits: Limits = None,
        *,
        breaker: CircuitBreaker | None = CircuitBreaker(),  # noqa: B008 - frozen, shared safely
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self.limits = limits
        self.breaker = breaker
        self.clock = clock
        self.sleep = sleep
        self._limiters: dict[str, ModelLimiter] = {}
        self._circuits: dict[str, Circuit] = {}
        # Keyed by id, holding the model too, so that an id is never reused while cached.
        self._wrapped: dict[int, tuple[Model, GuardedModel]] = {}

    def wrap(self, model: Model) -> Model:
        """Return ``model`` guarded by its limiter and its provider's circuit (cached)."""
        if isinstance(model, GuardedModel):
            return model
        found = self._wrapped.get(id(model))
        if found is not None:
            return found[1]
        guarded = GuardedModel(model, self.limiter(model), self.circuit(model))
        if len(self._wrapped) >= _CACHED:
            # Wrappers hold no state of their own (limiters and circuits are kept by name),
            # so forgetting them all bounds the cache when models come and go (per resume).
            self._wrapped.clear()
        self._wrapped[id(model)] = (model, guarded)
        return guarded

    def limiter(self, model: Model | str) -> ModelLimiter:
        """Return the limiter of a model (or a model name), made on first use."""
        name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
        limiter = self._limiters.get(name)
        if limiter is None:
            limits = self.limits.get(name) if isinstance(self.limits, Mapping) else self.limits
            limiter = ModelLimiter(limits, clock=self.clock, sleep=self.sleep)
            self._limiters[name] = limiter
        return limiter

    def circuit(self, model: Model | str) -> Circuit | None:
        """Return the circuit of a provider (or of a model's provider), made on first use."""
        if self.breaker is None:
            return None
        provider = model if isinstance(model, str) else provider_of(model)
        circuit = self._circuits.get(provider)
        if circuit is None:
            circuit = Circuit(provider, self.breaker, clock=self.clock, sleep=self.sleep)
            self._circuits[provider] = circuit
        return circuit


class GuardedModel:
    """A model whose every call passes its provider's circuit and its own limits.

    Anything else (``name``, ``enforcement``, ``base_url``) reads through to the model.
    """

    def __init__(self, model: Model, limiter: ModelLimiter, circuit: Circuit | None) -> None:
        self.model = model
        self.name: str = getattr(model, "name", type(model).__name__)
        self.limiter = limiter
        self.circuit = circuit
        # A limiter's limits are fixed when it is made: with none, a call waits only while a
        # rate limit pauses the model, and takes no ticket.
        limits = limiter.limits
        self._unlimited = not (limits.rpm or limits.tpm or limits.max_in_flight)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def __repr__(self) -> str:
        return f"GuardedModel({self.model!r})"

    async def complete(self, request: Request) -> Response:
        """Answer one request once the circuit and the limits let it through."""
        circuit = self.circuit
        limiter = self.limiter
        probe = circuit is not None and circuit.state != "closed" and await circuit.enter()
        if self._unlimited and limiter.paused_until == 0.0:
            ticket = None  # what admit() answers at once, without its frame
        else:
            try:
                ticket = await limiter.admit(request)
            except BaseException:
                if circuit is not None:
                    circuit.abandon(probe)
                raise
        try:
            response = await self.model.complete(request)
        except ProviderUnreachableError as exc:
            if circuit is None or circuit.answered:
                self._failed(exc, probe)
                raise
            # Never answered, and nothing listens there: no retry or wait can help the runs
            # that need it now (docs/retries.md, the breaker).
            raise circuit.unreachable(probe, str(exc)) from exc
        except BaseException as exc:
            self._failed(exc, probe)
            raise
        finally:
            if ticket is not None:
                limiter.release(ticket)
        if circuit is not None:
            circuit.success(probe)
        if ticket is not None:
            limiter.settle(ticket, response.usage)
        return response

    def _failed(self, exc: BaseException, probe: bool) -> None:
        circuit = self.circuit
        if isinstance(exc, RateLimitError):
            self.limiter.pause(exc.retry_after)
            if circuit is not None:
                circuit.success(probe)  # the provider answered, if only to say "later"
        elif circuit is None:
            return
        elif isinstance(exc, RetryableModelError):
            circuit.failure(probe)
        elif isinstance(exc, ModelError):
            circuit.success(probe)  # a rejected request: the provider itself is up
        else:
            circuit.abandon(probe)
