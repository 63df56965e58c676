"""Decision overhead: one ``decision.make`` round trip against the floor any engine pays.

Prints medians of repeated runs in one process, side by side:

* the hand-written transition: the same async fake model (the ``ScriptedModel`` whose
  reply function yields once), then ``json.loads``, a dict lookup and a call (the floor);
* for reference, the same transition calling the bare reply function, without the
  ``ScriptedModel`` around it (a lower floor than the one the target is set against);
* ``decision.make`` on a 3-option menu (render + call + extract + validate + resolve +
  trace), and on a 20-option menu with nested schemas;
* extraction time on adversarial replies.

Run with ``make bench`` or ``python bench/decision_overhead.py``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Runtime, decision
from engine.models import Message, Request, ScriptedModel, TextBlock

ROUNDS = 15
CALLS = 2000


async def refund(amount: float, reason: str) -> str:
    """Refund the customer."""
    return "refunded"


async def escalate(summary: str) -> str:
    """Escalate to a human."""
    return "escalated"


THREE = {"refund": refund, "escalate": escalate, "close": "CLOSED"}
PICK3 = {"call": "refund", "args": {"amount": 12.5, "reason": "broken on arrival"}}


def twenty_options() -> dict[str, object]:
    options: dict[str, object] = {}
    for i in range(20):
        options[f"plan_{i}"] = (
            f"Produce plan {i}.",
            {
                "steps": [{"action": {"type": str, "options": ["read", "write"]}, "target": str}],
                "rationale": "why this plan",
                "priority": {"type": int, "options": [1, 2, 3]},
            },
        )
    return options


PICK20 = {
    "call": "plan_17",
    "args": {
        "steps": [{"action": "read", "target": "db"}, {"action": "write", "target": "log"}],
        "rationale": "because",
        "priority": 2,
    },
}


def fake_model(pick: dict[str, object]) -> Callable[[Request], Awaitable[str]]:
    reply = json.dumps(pick)

    async def answer(request: Request) -> str:
        await asyncio.sleep(0)  # yield once to the event loop, like a real network call
        return reply

    return answer


async def hand_written() -> float:
    """The floor: the same async fake model as ``decision.make`` gets, one fixed request."""
    model = ScriptedModel(fake_model(PICK3))
    request = Request(messages=[Message(role="user", content=[TextBlock(text="Pick.")])])
    table = {"refund": refund, "escalate": escalate}
    t0 = time.perf_counter()
    for _ in range(CALLS):
        model.requests.clear()  # as in engine_make
        data = json.loads((await model.complete(request)).text)
        await table[data["call"]](**data["args"])
    return (time.perf_counter() - t0) / CALLS * 1e6


async def bare_reply() -> float:
    """The same transition on the bare reply function: no ScriptedModel, no request."""
    answer = fake_model(PICK3)
    table = {"refund": refund, "escalate": escalate}
    t0 = time.perf_counter()
    for _ in range(CALLS):
        data = json.loads(await answer(None))  # type: ignore[arg-type]
        await table[data["call"]](**data["args"])
    return (time.perf_counter() - t0) / CALLS * 1e6


async def engine_make(
    options_factory: Callable[[], dict[str, object]], pick: dict[str, object]
) -> float:
    model = ScriptedModel(fake_model(pick))
    runtime = Runtime(model=model)
    t0 = time.perf_counter()
    for _ in range(CALLS):
        # Keep memory flat, as the hand-written loop does: in real use the trace is per run,
        # and a provider model keeps no log of the requests it answered.
        runtime.trace.nodes.clear()
        model.requests.clear()
        await decision.make("Pick the next step.", options_factory(), runtime=runtime)
    return (time.perf_counter() - t0) / CALLS * 1e6


def medians(*fns: Callable[[], Awaitable[float]]) -> list[float]:
    """Run the rounds interleaved (each round runs every fn once), so that a change in the
    machine's load falls on every figure alike; return each fn's median."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(ROUNDS):
        for fn, runs in zip(fns, samples, strict=True):
            runs.append(asyncio.run(fn()))
    return [statistics.median(runs) for runs in samples]


def main() -> None:
    floor, bare, three, twenty = medians(
        hand_written,
        bare_reply,
        lambda: engine_make(lambda: dict(THREE), PICK3),
        lambda: engine_make(twenty_options, PICK20),
    )
    print(f"decision round trip (median of {ROUNDS} x {CALLS} calls, µs per call)")
    rows = [
        ("hand-written transition (floor)", floor),
        ("  the same on the bare reply function", bare),
        ("decision.make, 3 options", three),
        ("decision.make, 20 nested-schema options", twenty),
    ]
    for name, us in rows:
        print(f"  {name:<40} {us:8.1f}   {us / floor:5.1f}x floor   {us / bare:5.1f}x bare")
    try:
        from _extraction import run_extraction_bench
    except ImportError:
        return
    print("\nextraction on adversarial replies (median ms; ms per MB)")
    for name, size, ms in run_extraction_bench():
        print(f"  {name:<44} {size / 1e3:8.0f} KB {ms:8.2f} ms {ms / (size / 1e6):8.1f} ms/MB")


if __name__ == "__main__":
    main()
