"""The hooks seam: a subclass sees exactly the work it overrides, the rest passes through."""

from __future__ import annotations

import json
from typing import Any

from engine import Runtime, decision
from engine._runtime._hooks import Hooks, current_hooks
from engine.models import ScriptedModel

PICK = json.dumps({"call": "double", "args": {"n": 4}})


async def double(n: int) -> int:
    """Double a number."""
    return 2 * n


class Counting(Hooks):
    """Count the model calls only; decisions and steps are left to the base class."""

    def __init__(self) -> None:
        self.calls = 0

    async def model_call(self, node: Any, model: Any, request: Any, call: Any) -> Any:
        self.calls += 1
        return await call(model, request)


class Steps(Hooks):
    """See every step and its return annotation."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    async def step(self, node: Any, fn: Any, run: Any, returns: object) -> Any:
        self.seen.append((node.name, returns))
        return await run()


def test_only_overridden_methods_are_marked() -> None:
    assert (Hooks.passes_model_call, Hooks.passes_decision, Hooks.passes_step) == (True,) * 3
    assert (Counting.passes_model_call, Counting.passes_decision) == (False, True)
    assert (Steps.passes_step, Steps.passes_model_call) == (False, True)


async def test_a_subclass_sees_the_model_calls_it_overrides() -> None:
    hooks = Counting()
    token = current_hooks.set(hooks)
    try:
        runtime = Runtime(ScriptedModel([PICK]))
        assert await decision.make("Pick.", [double], runtime=runtime) == 8
    finally:
        current_hooks.reset(token)
    assert hooks.calls == 1


async def test_a_subclass_sees_the_steps_it_overrides() -> None:
    hooks = Steps()
    token = current_hooks.set(hooks)
    try:
        runtime = Runtime(ScriptedModel([PICK]))
        assert await decision.make("Pick.", [double], runtime=runtime) == 8
    finally:
        current_hooks.reset(token)
    assert hooks.seen == [("double", int)]
