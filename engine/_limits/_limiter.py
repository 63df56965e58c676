"""Provider limits of one model, shared by every run that calls it.

A :class:`ModelLimiter` admits a model's calls under its :class:`ModelLimits`: requests per
minute, tokens per minute and calls in flight. Each per-minute limit is a sliding one-minute
window of what was admitted (a token bucket whose refill is the expiry of what the window
holds), so no 60 seconds ever hold more than the limit; a bucket refilled at a constant
rate would let up to twice the limit through in the minute after an idle one. Tokens are
estimated before the call (a quarter of the request's characters, plus the largest recent
reply) and corrected from the reply's usage afterwards. A rate limit's ``retry_after``
pauses the model for every run that calls it, not only the one that got the 429.

Calls are admitted in arrival order: a waiter queues behind the ones before it, so a
ticket that needs a large share of the window is served in its turn and small ones never
starve it, nor it them. The clock and the sleep are injectable, so tests never wait.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

import anyio

from engine._base import Clock, Sleep
from engine.models import Request, Usage

__all__ = ["ModelLimiter", "ModelLimits", "Ticket", "nap"]


#: What the window is: a minute, in seconds.
WINDOW_S = 60.0
#: How long a rate limit without ``retry_after`` pauses the model.
DEFAULT_PAUSE_S = 1.0
#: The reply size assumed before any reply of the model was seen (tokens).
FIRST_REPLY_GUESS = 256
#: How many recent replies the reply estimate looks back over.
_RECENT_REPLIES = 16


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """Provider limits of one model; ``None`` leaves one unlimited.

    Attributes:
        rpm: Requests per minute.
        tpm: Tokens per minute, input and output together.
        max_in_flight: Calls waiting for a reply at once.
    """

    rpm: int | None = None
    tpm: int | None = None
    max_in_flight: int | None = None

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm", "max_in_flight"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"ModelLimits({name}={value!r}) must be an integer >= 1 or None")


class _Entry:
    """What one admitted call holds in a window, until it expires."""

    __slots__ = ("amount", "at", "live")

    def __init__(self, at: float, amount: int) -> None:
        self.at = at
        self.amount = amount
        self.live = True


class _Window:
    """A sliding one-minute window of admitted amounts, under ``limit``."""

    __slots__ = ("entries", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.entries: deque[_Entry] = deque()
        self.total = 0

    def expire(self, now: float) -> None:
        entries = self.entries
        while entries and entries[0].at + WINDOW_S <= now:
            entry = entries.popleft()
            entry.live = False
            self.total -= entry.amount

    def wait_s(self, need: int, now: float) -> float:
        """Seconds until ``need`` fits (0 when it fits now); call :meth:`expire` first."""
        # A call larger than the whole limit goes alone, in an empty window.
        need = min(need, self.limit)
        excess = self.total + need - self.limit
        if excess <= 0:
            return 0.0
        for entry in self.entries:
            excess -= entry.amount
            if excess <= 0:
                return entry.at + WINDOW_S - now
        return WINDOW_S  # only corrections in flight can free it; look again then

    def add(self, now: float, amount: int) -> _Entry:
        entry = _Entry(now, amount)
        self.entries.append(entry)
        self.total += amount
        return entry

    def correct(self, entry: _Entry, amount: int) -> None:
        if entry.live:
            self.total += amount - entry.amount
            entry.amount = amount


class Ticket:
    """One admitted call: its window entries, and whether it holds an in-flight slot."""

    __slots__ = ("slot", "tokens")

    def __init__(self) -> None:
        self.slot = False
        self.tokens: _Entry | None = None


class ModelLimiter:
    """Admit one model's calls under its limits; pause them all after a rate limit.

    Args:
        limits: The model's limits, or ``None`` (then only rate-limit pauses apply).
        clock: Monotonic seconds (inject one in tests).
        sleep: The sleep used while waiting (inject one in tests).
    """

    def __init__(
        self,
        limits: ModelLimits | None = None,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        self.limits = limits or ModelLimits()
        self.clock = clock
        self.sleep = sleep
        self.paused_until = 0.0
        self.pauses = 0
        self._requests = _Window(self.limits.rpm) if self.limits.rpm else None
        self._tokens = _Window(self.limits.tpm) if self.limits.tpm else None
        self._slots = (
            anyio.CapacityLimiter(self.limits.max_in_flight) if self.limits.max_in_flight else None
        )
        self._lock = anyio.Lock()  # FIFO: waiters are admitted in arrival order
        self._changed: anyio.Event | None = None
        self._replies: deque[int] = deque(maxlen=_RECENT_REPLIES)

    @property
    def tokens_in_window(self) -> int:
        """Tokens the last minute's calls hold (estimates until their replies correct them)."""
        if self._tokens is None:
            return 0
        self._tokens.expire(self.clock())
        return self._tokens.total

    def pause(self, seconds: float | None) -> None:
        """Admit no call of this model for ``seconds`` (a 429's ``retry_after``)."""
        wait = DEFAULT_PAUSE_S if seconds is None else max(0.0, seconds)
        self.paused_until = max(self.paused_until, self.clock() + wait)
        self.pauses += 1

    async def admit(self, request: Request) -> Ticket | None:
        """Wait for this call's turn; return its ticket (``None`` when nothing is limited)."""
        if self._slots is None and self._requests is None and self._tokens is None:
            if self.paused_until == 0.0:
                return None  # the hot path: no limits, no pause
            ticket = None
        else:
            ticket = Ticket()
        if self._slots is not None:
            assert ticket is not None
            await self._slots.acquire_on_behalf_of(ticket)
            ticket.slot = True
        try:
            async with self._lock:
                await self._wait_turn(ticket, request)
        except BaseException:
            self.release(ticket)
            raise
        return ticket

    async def _wait_turn(self, ticket: Ticket | None, request: Request) -> None:
        need = self._estimate(request) if self._tokens is not None else 0
        while True:
            now = self.clock()
            wait = self._wait_s(need, now)
            if wait <= 0:
                break
            await self._nap(wait)
        if self.paused_until and now >= self.paused_until:
            self.paused_until = 0.0
        if ticket is None:
            return
        if self._requests is not None:
            self._requests.add(now, 1)
        if self._tokens is not None:
            ticket.tokens = self._tokens.add(now, need)

    def _wait_s(self, need: int, now: float) -> float:
        wait = self.paused_until - now if self.paused_until else 0.0
        for window, amount in ((self._requests, 1), (self._tokens, need)):
            if window is not None:
                window.expire(now)
                wait = max(wait, window.wait_s(amount, now))
        return wait

    async def _nap(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when a reply's usage frees part of the token window."""
        if self._tokens is None:
            await self.sleep(seconds)
            return
        self._changed = anyio.Event()
        await nap(self.sleep, seconds, self._changed)

    def settle(self, ticket: Ticket | None, usage: Usage) -> None:
        """Correct the call's token estimate from the usage its reply reports."""
        if ticket is None or ticket.tokens is None or self._tokens is None:
            return
        actual = usage.input_tokens + usage.output_tokens
        if actual <= 0:
            return  # the provider reported no usage: the estimate stands
        self._replies.append(usage.output_tokens)
        freed = actual < ticket.tokens.amount
        self._tokens.correct(ticket.tokens, actual)
        if freed and self._changed is not None:
            self._changed.set()

    def release(self, ticket: Ticket | None) -> None:
        """Give back the call's in-flight slot (its window entries stay until they expire)."""
        if ticket is not None and ticket.slot and self._slots is not None:
            ticket.slot = False
            self._slots.release_on_behalf_of(ticket)

    def _estimate(self, request: Request) -> int:
        chars = sum(len(m.text) for m in request.messages)
        for tool in request.tools or ():
            chars += len(tool.name) + len(tool.description) + len(str(tool.parameters))
        reply = max(self._replies) if self._replies else FIRST_REPLY_GUESS
        settings = request.settings
        bound = settings.max_tokens if settings is not None else None
        if bound is None:
            bound = request.max_tokens
        if bound is not None:
            # A reply never outgrows its bound; a loose one (a decision's default) would
            # only hold tokens back that the reply never takes.
            reply = min(reply, bound)
        return math.ceil(chars / 4) + reply


async def nap(sleep: Sleep, seconds: float, event: anyio.Event) -> None:
    """Sleep ``seconds`` with ``sleep``, or until ``event`` is set, whichever comes first."""
    async with anyio.create_task_group() as tg:

        async def timer() -> None:
            await sleep(seconds)
            tg.cancel_scope.cancel()

        tg.start_soon(timer)
        await event.wait()
        tg.cancel_scope.cancel()
