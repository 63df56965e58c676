"""Where a decision's time goes: the floor, the same steps inline, and ``decision.make``.

Three loops over the 3-option menu of ``decision_overhead.py``, rounds interleaved, medians
in µs per decision:

* the floor: the fake model, ``json.loads``, a dict lookup and a call;
* inline: the steps a decision cannot skip, written out with no runtime around them (menu
  lookup, request, three trace nodes, the scripted reply, extraction, validation, the call);
* ``decision.make`` itself.

Beside each, the time one ``await asyncio.sleep(0)`` in the reply function takes to come
back, which grows with what the decision around it touches.

    python bench/decision_breakdown.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from decision_overhead import PICK3, THREE, escalate, refund

from engine import Runtime, decision
from engine._base._trace import Trace
from engine._decision._extract import find_pick
from engine._decision._menu import build_menu
from engine._decision._validate import validate
from engine._runtime._requests import build_request
from engine.models import Request, ScriptedModel, TextBlock

ROUNDS = 9
CALLS = 3000
REPLY = json.dumps(PICK3)
_sleep_s: list[float] = []


async def answer(request: Request | None = None) -> str:
    t0 = time.perf_counter()
    await asyncio.sleep(0)  # yield once to the event loop, like a network call
    _sleep_s.append(time.perf_counter() - t0)
    return REPLY


async def floor() -> None:
    table = {"refund": refund, "escalate": escalate}
    for _ in range(CALLS):
        data = json.loads(await answer())
        await table[data["call"]](**data["args"])


async def inline() -> None:
    model, trace = ScriptedModel(answer), Trace()
    for _ in range(CALLS):
        trace.nodes.clear()
        model.requests.clear()
        menu = build_menu(dict(THREE))
        request = build_request(None, [TextBlock(text=f"Pick.\n\n{menu.text}")], menu=menu)
        node = trace.open("decision", "decision", parent=None, options=menu.names)
        call = node.child("model_call", "model_call", attempt=0)
        response = await model.complete(request)
        call.close("ok", model=response.model, reply=response.text)
        pick = validate(find_pick(response.text, menu.by_name), menu)
        node.close("ok", pick=pick.option.name, args=pick.args)
        step = node.child("step", pick.option.name)
        handler = pick.option.handler
        assert callable(handler)
        step.close("ok", result=await handler(**pick.args))


async def make() -> None:
    model = ScriptedModel(answer)
    runtime = Runtime(model=model)
    for _ in range(CALLS):
        runtime.trace.nodes.clear()
        model.requests.clear()
        await decision.make("Pick.", dict(THREE), runtime=runtime)


def timed(loop: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    _sleep_s.clear()
    t0 = time.perf_counter()
    asyncio.run(loop())
    total = (time.perf_counter() - t0) / CALLS * 1e6
    return total, statistics.median(_sleep_s) * 1e6


def main() -> None:
    loops = {"floor": floor, "the same steps inline": inline, "decision.make": make}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in loops}
    for _ in range(ROUNDS):
        for name, loop in loops.items():
            samples[name].append(timed(loop))
    base = statistics.median(t for t, _ in samples["floor"])
    print(f"µs per decision (median of {ROUNDS} x {CALLS}), and µs for one sleep(0) to return")
    for name, rows in samples.items():
        total = statistics.median(t for t, _ in rows)
        yielded = statistics.median(s for _, s in rows)
        print(f"  {name:<24} {total:7.1f}  {total / base:5.1f}x floor   sleep(0) {yielded:5.1f}")


if __name__ == "__main__":
    main()
