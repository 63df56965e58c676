"""A batch whose inputs raise: the error comes out as it is, and what started is recorded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine import Engine, JournalError, Runtime, agentic_function, decision
from engine.models import ScriptedModel
from engine.store import MemoryStore


@agentic_function
async def answer(ticket: str, runtime: Runtime | None = None) -> str:
    result: str = await decision.make(f"Answer {ticket}.", ["yes", "no"])
    return result


def tickets() -> Iterator[str]:
    yield "t1"
    raise OSError("the input file went away")


async def test_batch_inputs_that_raise_propagate_their_error_unwrapped() -> None:
    eng = Engine(model=ScriptedModel(lambda request: '{"call": "yes"}'), store=MemoryStore())

    with pytest.raises(OSError, match="the input file went away"):
        await eng.run_many(answer, tickets(), concurrency=1)


async def test_batch_input_that_cannot_be_journaled_raises_its_error_unwrapped() -> None:
    eng = Engine(model=ScriptedModel(lambda request: '{"call": "yes"}'), store=MemoryStore())

    with pytest.raises(JournalError, match="cannot be journaled as JSON; use JSON data"):
        await eng.run_many(answer, ["t1", object()], concurrency=1)
