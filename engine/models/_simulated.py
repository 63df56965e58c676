"""An offline model for demos, benchmarks and chaos tests.

:class:`SimulatedModel` reads the menu a decision offers from ``request.choices`` (never from
the prompt text), picks an option, fills its arguments with values valid under the option's
JSON Schema, and injects faults and latency at configured rates. Everything it does is a
function of its seed and the request: each call draws from a ``random.Random`` seeded by the
model's seed, a digest of the request, and how many times that same request came before.
So the same seed and the same requests give the same replies, whatever order concurrent
runs ask them in, and a retried request (a transport retry) gets a fresh draw.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import random
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import anyio

from engine._base import ModelTimeoutError, ProviderUnavailableError, RateLimitError, Sleep
from engine.models._fill import fill, wrong_value
from engine.models._price import Price, check_price
from engine.models._settings import ModelSettings
from engine.models._types import ChoiceSpec, Request, Response, ToolCall, trusted_response

__all__ = ["Faults", "SimulatedModel"]

Latency = float | tuple[float, float] | Callable[[random.Random], float]
Policy = Callable[[Request], "str | Mapping[str, Any] | Awaitable[str | Mapping[str, Any]]"]

# Requests remembered for their repeat counts; beyond this the oldest are forgotten (a
# request repeated after that many others counts as new).
_REMEMBERED = 100_000
_LEADS = (
    "Having weighed the options, the next step is {name}.",
    "The request fits {name} best.",
    "Going with {name}.",
)
_PROSE = (
    "The request has been reviewed and the relevant details are noted.",
    "Summary: the input is clear and nothing blocks the next step.",
    "Done: the task was worked through and the result is ready.",
)


@dataclass(frozen=True, slots=True)
class Faults:
    """Fault rates of a :class:`SimulatedModel`, each the share of calls in ``[0, 1]``.

    At most one fault hits a call, so the rates may add up to 1 at most. Reply faults
    (``no_json``, ``unknown_option``, ``wrong_types``) hit decision calls only; the others
    hit any call.

    Attributes:
        no_json: A prose reply with no JSON in it.
        unknown_option: A pick of an option that was not offered.
        wrong_types: A pick whose arguments have the wrong JSON types.
        truncated: A reply cut off mid-pick, reported with ``finish_reason="length"``.
        rate_limit: A :class:`~engine.RateLimitError` with ``retry_after``.
        server_error: A :class:`~engine.ProviderUnavailableError` (a 5xx).
        timeout: A :class:`~engine.ModelTimeoutError`.
        retry_after: The seconds a rate limit asks to wait.
    """

    no_json: float = 0.0
    unknown_option: float = 0.0
    wrong_types: float = 0.0
    truncated: float = 0.0
    rate_limit: float = 0.0
    server_error: float = 0.0
    timeout: float = 0.0
    retry_after: float = 1.0

    def __post_init__(self) -> None:
        for name, rate in self.rates().items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"fault rate {name}={rate!r} must lie in [0, 1]")
        if sum(self.rates().values()) > 1.0 + 1e-9:
            raise ValueError("fault rates add up to more than 1; at most one fault hits a call")
        if self.retry_after < 0:
            raise ValueError(f"retry_after must be >= 0, got {self.retry_after!r}")

    def rates(self) -> dict[str, float]:
        """Return the fault rates by name, in the order they are drawn."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "retry_after"}


class SimulatedModel:
    """A seeded offline model that picks valid options and injects faults.

    Args:
        seed: The seed every draw derives from.
        faults: A :class:`Faults` or a dict of its fields (``{"rate_limit": 0.1}``).
        latency: Seconds per call: a fixed number, a ``(low, high)`` uniform range, or a
            function of the call's ``random.Random``. ``None``: no latency.
        policy: ``policy(request)`` returns the option to pick, by name (its arguments are
            filled) or as a whole pick ``{"call": ..., "args": {...}}`` used as it is.
        weights: ``{option: weight}``. When any offered option is named, unnamed ones weigh
            0; a menu that names none is picked from uniformly.
        name: The model name reported on replies.
        sleep: The sleep used for latency (inject one in tests so they never wait).
        tool_rate: The share of turns offering native tools in which the model calls one
            (with filled arguments) before it answers; it never calls one twice in a row.
        settings: The model's own :class:`~engine.models.ModelSettings`, kept as
            :attr:`settings`; its replies do not depend on them.
        price: What the model's calls cost (:class:`~engine.Price`, dollars per million
            tokens); ``None`` (the default): unknown, unless ``Engine(prices=)`` names the model.

    Attributes:
        calls: How many calls were made.
        fault_counts: How many calls each fault hit.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        faults: Faults | Mapping[str, float] | None = None,
        latency: Latency | None = None,
        policy: Policy | None = None,
        weights: Mapping[str, float] | None = None,
        name: str = "simulated",
        sleep: Sleep | None = None,
        tool_rate: float = 0.0,
        settings: ModelSettings | None = None,
        price: Price | None = None,
    ) -> None:
        self.seed = seed
        self.settings = settings if settings is not None else ModelSettings()
        self.faults = faults if isinstance(faults, Faults) else Faults(**dict(faults or {}))
        self.latency = _check_latency(latency)
        self.policy = policy
        self.weights = dict(weights or {})
        self.name = name
        self.price = check_price(price)
        self.tool_rate = tool_rate
        self._sleep = sleep or anyio.sleep
        self._seen: OrderedDict[bytes, int] = OrderedDict()
        self.calls = 0
        self.fault_counts: Counter[str] = Counter()

    def __repr__(self) -> str:
        faults = {k: v for k, v in asdict(self.faults).items() if v and k != "retry_after"}
        return f"SimulatedModel(seed={self.seed!r}, faults={faults!r})"

    async def complete(self, request: Request) -> Response:
        """Answer one request: a pick when it offers choices, else a short prose reply."""
        self.calls += 1
        rng = self._rng(request)
        # Draw in a fixed order, whatever the call turns out to need, so one draw never
        # shifts another.
        delay = self._delay(rng)
        fault = self._fault(rng.random())
        if fault is not None:
            self.fault_counts[fault] += 1
        if delay > 0:
            await self._sleep(delay)
        self._raise_transport(fault)
        if request.tools and self._wants_tool(request, rng):
            return self._tool_reply(request, rng, delay)
        if request.choices:
            text = await self._decision_reply(request, rng, fault)
        else:
            text = f"{rng.choice(_PROSE)} (simulated reply {rng.randrange(10_000)})"
        finish = "stop"
        if fault == "truncated":
            text, finish = text[: max(1, len(text) // 2)], "length"
        return self._response(request, text, finish, delay)

    def _rng(self, request: Request) -> random.Random:
        digest = _digest(request)
        count = self._seen.pop(digest, 0)
        self._seen[digest] = count + 1
        if len(self._seen) > _REMEMBERED:
            self._seen.popitem(last=False)
        material = f"{self.seed}:{count}:".encode() + digest
        return random.Random(int.from_bytes(hashlib.blake2b(material, digest_size=8).digest()))

    def _delay(self, rng: random.Random) -> float:
        latency = self.latency
        if latency is None:
            return 0.0
        if isinstance(latency, int | float):
            return float(latency)
        if isinstance(latency, tuple):
            return rng.uniform(*latency)
        return float(latency(rng))

    def _fault(self, draw: float) -> str | None:
        edge = 0.0
        for name, rate in _rates(self.faults):
            edge += rate
            if draw < edge:
                return name
        return None

    def _raise_transport(self, fault: str | None) -> None:
        if fault == "rate_limit":
            wait = self.faults.retry_after
            raise RateLimitError(
                f"simulated rate limit; retry after {wait:g}s",
                retry_after=wait,
                provider="simulated",
            )
        if fault == "server_error":
            raise ProviderUnavailableError("simulated 503", provider="simulated")
        if fault == "timeout":
            raise ModelTimeoutError("simulated timeout", provider="simulated")

    async def _decision_reply(self, request: Request, rng: random.Random, fault: str | None) -> str:
        choices = request.choices or []
        if fault == "no_json":
            return "I looked at the options but I am not sure which one applies here."
        pick = await self._pick(request, choices, rng)
        if fault == "unknown_option":
            names = {c.name for c in choices}
            call = f"{pick['call']}_other"
            while call in names:
                call += "_x"
            pick = {"call": call, "args": pick.get("args", {})}
        elif fault == "wrong_types":
            pick = _wrong_types(pick, choices)
        body = json.dumps(pick, ensure_ascii=False)
        if rng.random() < 0.5:
            return body
        lead = rng.choice(_LEADS).format(name=pick.get("call"))
        return f"{lead}\n\n```json\n{body}\n```"

    async def _pick(
        self, request: Request, choices: list[ChoiceSpec], rng: random.Random
    ) -> dict[str, Any]:
        if self.policy is not None:
            chosen = self.policy(request)
            if inspect.isawaitable(chosen):
                chosen = await chosen
            if isinstance(chosen, Mapping):
                return dict(chosen)
            by_name = {c.name: c for c in choices}
            if chosen not in by_name:
                return {"call": chosen, "args": {}}
            choice = by_name[chosen]
        else:
            choice = self._choose(choices, rng)
        return {"call": choice.name, "args": fill(choice.parameters, rng)}

    def _choose(self, choices: list[ChoiceSpec], rng: random.Random) -> ChoiceSpec:
        if any(c.name in self.weights for c in choices):
            weights = [max(0.0, self.weights.get(c.name, 0.0)) for c in choices]
            if sum(weights) > 0:
                return rng.choices(choices, weights=weights)[0]
        return rng.choice(choices)

    def _wants_tool(self, request: Request, rng: random.Random) -> bool:
        draw = rng.random()  # drawn even when unused, so the draws stay aligned
        last = request.messages[-1] if request.messages else None
        return draw < self.tool_rate and (last is None or last.role != "tool")

    def _tool_reply(self, request: Request, rng: random.Random, delay: float) -> Response:
        tool = rng.choice(request.tools or [])
        call = ToolCall(
            id=f"call_{rng.randrange(16**8):08x}",
            name=tool.name,
            arguments=fill(tool.parameters, rng),
        )
        response = self._response(request, "", "tool_calls", delay)
        response.tool_calls.append(call)
        return response

    def _response(self, request: Request, text: str, finish: str, delay: float) -> Response:
        return trusted_response(
            text,
            finish_reason=finish,
            input_tokens=sum(len(m.text) for m in request.messages) // 4,
            output_tokens=len(text) // 4,
            model=self.name,
            latency_s=delay,
        )


@functools.lru_cache(maxsize=64)
def _rates(faults: Faults) -> tuple[tuple[str, float], ...]:
    return tuple(faults.rates().items())


def _wrong_types(pick: dict[str, Any], choices: list[ChoiceSpec]) -> dict[str, Any]:
    """Break one argument's type; an option without fields gets args that are no object."""
    choice = next((c for c in choices if c.name == pick["call"]), None)
    properties = (choice.parameters.get("properties") or {}) if choice else {}
    if not properties:
        return {"call": pick["call"], "args": "not an object"}
    name = next(iter(properties))
    args = dict(pick.get("args") or {})
    assert choice is not None
    args[name] = wrong_value(properties[name], choice.parameters.get("$defs"))
    return {"call": pick["call"], "args": args}


def _digest(request: Request) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for message in request.messages:
        h.update(message.role.encode())
        h.update(b"\x1f")
        h.update(message.text.encode())
        for call in message.tool_calls:
            h.update(f"\x1e{call.id}\x1e{call.name}".encode())
        h.update(b"\x1d")
    for choice in request.choices or ():
        h.update(f"\x1c{choice.name}".encode())
    return h.digest()


def _check_latency(latency: Latency | None) -> Latency | None:
    if isinstance(latency, tuple):
        low, high = latency
        if not 0 <= low <= high:
            raise ValueError(
                f"latency range must be (low, high) with 0 <= low <= high, got {latency!r}"
            )
    elif isinstance(latency, int | float) and latency < 0:
        raise ValueError(f"latency must be >= 0, got {latency!r}")
    return latency
