"""A circuit breaker per provider, shared by every run of the process that calls it.

After ``failures`` transport failures in a row (5xx, timeouts, dropped connections; a 429
is the provider working as agreed, not failing), the provider's circuit opens: no call is
sent for ``reset_s``. Then one call goes through as a probe (half-open): its success closes
the circuit for everyone, its failure opens it again for another ``reset_s``. Meanwhile
new calls either wait for the circuit to close (``on_open="wait"``, at most
``max_wait_s``) or fail at once with :class:`~engine.CircuitOpenError`
(``on_open="suspend"``), which parks their runs as suspended with the reason
``provider_unavailable``, to be resumed later by hand or by a run policy.

A provider that has never answered in this process is not waited for: when a call finds
nothing listening there (:class:`~engine.ProviderUnreachableError`, which names the URL), its
circuit opens at once and every call to it, waiting or new, fails at once with that message,
its run parked as suspended, instead of holding a batch behind transport retries and the
breaker's waits. After ``reset_s`` one call probes it again. Once a provider has answered,
its failures follow the rules above.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import anyio

from engine._base import CircuitOpenError, Clock, Sleep, log
from engine._limits._limiter import nap

__all__ = ["Circuit", "CircuitBreaker"]

CircuitState = Literal["closed", "open", "half_open"]
#: The providers that have answered a call in this process (every breaker's circuits).
_ANSWERED: set[str] = set()


@dataclass(frozen=True, slots=True)
class CircuitBreaker:
    """When a provider's circuit opens and what its new calls do while it is open.

    Attributes:
        failures: Transport failures in a row (across all runs) that open the circuit.
        reset_s: Seconds the circuit stays open before a probe call is let through.
        on_open: ``"wait"``: new calls wait for the circuit to close; ``"suspend"``: they
            fail at once and their runs park as suspended (``provider_unavailable``).
        max_wait_s: The longest a call waits in ``"wait"`` mode before its run parks.
    """

    failures: int = 5
    reset_s: float = 30.0
    on_open: Literal["wait", "suspend"] = "wait"
    max_wait_s: float = 300.0

    def __post_init__(self) -> None:
        if self.failures < 1:
            raise ValueError(f"CircuitBreaker(failures={self.failures!r}) must be >= 1")
        if self.reset_s < 0 or self.max_wait_s < 0:
            raise ValueError("CircuitBreaker reset_s and max_wait_s must be >= 0")
        if self.on_open not in ("wait", "suspend"):
            raise ValueError(f"on_open must be 'wait' or 'suspend', got {self.on_open!r}")


class Circuit:
    """The circuit of one provider: closed, open, or half-open with one probe in flight."""

    __slots__ = (
        "_changed",
        "_probing",
        "clock",
        "down",
        "failures",
        "opened_at",
        "opens",
        "provider",
        "settings",
        "sleep",
        "state",
    )

    def __init__(
        self,
        provider: str,
        settings: CircuitBreaker,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.clock = clock
        self.sleep = sleep
        self.state: CircuitState = "closed"
        self.failures = 0
        self.opened_at = 0.0
        self.opens = 0
        self._probing = False
        self._changed = anyio.Event()
        #: Why the provider is taken for down: it never answered, and nothing listens there.
        self.down: str | None = None

    @property
    def answered(self) -> bool:
        """Whether the provider has answered a call in this process."""
        return self.provider in _ANSWERED

    async def enter(self) -> bool:
        """Wait until a call may go to the provider; return whether it is the probe.

        Raises:
            CircuitOpenError: The circuit is open and calls do not wait (``"suspend"``), or
                waited ``max_wait_s`` in vain.
        """
        give_up = self.clock() + self.settings.max_wait_s
        while True:
            now = self.clock()
            if self.state == "closed":
                return False
            reopens = self.opened_at + self.settings.reset_s
            if not self._probing and now >= reopens:
                self.state, self._probing = "half_open", True
                return True
            retry_in = max(0.0, reopens - now) if not self._probing else self.settings.reset_s
            if self.down is not None or self.settings.on_open == "suspend" or now >= give_up:
                raise CircuitOpenError(self.provider, retry_in_s=retry_in, reason=self.down)
            # Woken early when the circuit changes (the probe closed or reopened it).
            await nap(self.sleep, max(0.0, min(retry_in, give_up - now)), self._changed)

    def success(self, probe: bool) -> None:
        """The provider answered: the circuit closes (or stays closed)."""
        self.failures = 0
        self.down = None
        _ANSWERED.add(self.provider)
        if probe:
            self._probing = False
        if self.state != "closed":
            self.state = "closed"
            log.info("circuit_closed", provider=self.provider)
            self._wake()

    def failure(self, probe: bool) -> None:
        """A transport failure: count it; open the circuit at the threshold or a failed probe."""
        self.failures += 1
        if (
            probe
            or self.state == "half_open"
            or (self.state == "closed" and self.failures >= self.settings.failures)
        ):
            self._open()

    def unreachable(self, probe: bool, reason: str) -> CircuitOpenError:
        """Nothing listens where a provider that never answered lives: open now, and say why.

        Returns:
            The error the failed call raises instead of its own, so no transport retry
            waits on it; every other call to the provider fails with it too until a probe
            after ``reset_s`` gets an answer.
        """
        self.failures += 1
        if self.state != "open" or self.down is None or probe:  # calls in flight fail alike
            self.down = reason
            self._open()
        return CircuitOpenError(self.provider, retry_in_s=self.settings.reset_s, reason=reason)

    def abandon(self, probe: bool) -> None:
        """The call ended without telling anything about the provider (cancelled, rejected)."""
        if probe:
            self._probing = False
            self._wake()

    def _open(self) -> None:
        self.state, self._probing = "open", False
        self.opened_at = self.clock()
        self.opens += 1
        log.warning(
            "circuit_opened",
            provider=self.provider,
            failures=self.failures,
            reset_s=self.settings.reset_s,
        )
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
