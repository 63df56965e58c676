"""Per-run timeouts: a run past its time is recorded cancelled (timeout) and resumes."""

from __future__ import annotations

import anyio
import pytest

from engine import Engine, Runtime, agentic_function, decision
from engine.models import SimulatedModel
from engine.store import MemoryStore

PAUSE = {"s": 10.0}


@agentic_function
async def stalls(ticket: str, runtime: Runtime | None = None) -> str:
    """A decision, then a wait that only a timeout cuts short."""
    picked: str = await decision.make(f"Route {ticket}.", ["billing", "shipping"])
    await anyio.sleep(PAUSE["s"])
    return picked


@pytest.fixture(autouse=True)
def _long_pause() -> None:
    PAUSE["s"] = 10.0


async def test_a_run_past_its_timeout_is_cancelled_with_the_reason_and_resumes() -> None:
    store = MemoryStore()
    model = SimulatedModel(seed=1)
    eng = Engine(model=model, store=store, timeout_s=0.05)

    run = await eng.run(stalls, "t1", run_id="r1")

    assert run.status == "cancelled"
    assert run.error is not None
    assert run.error.kind == "timeout"
    assert "timeout_s=0.05" in run.error.message
    assert [r.kind for r in await store.load_journal("r1")] == ["model", "pick"]
    PAUSE["s"] = 0.0
    resumed = await eng.resume("r1")
    assert resumed.status == "completed"
    assert model.calls == 1  # the decision came back from the journal


async def test_run_many_timeout_applies_to_each_run_of_the_batch() -> None:
    eng = Engine(model=SimulatedModel(seed=2), store=MemoryStore())

    with anyio.fail_after(5):
        runs = await eng.run_many(stalls, ["a", "b", "c"], timeout_s=0.05)

    assert [(r.status, r.error.kind if r.error else None) for r in runs] == [
        ("cancelled", "timeout")
    ] * 3


async def test_a_timeout_set_on_the_engine_after_it_was_built_applies_to_later_runs() -> None:
    eng = Engine(model=SimulatedModel(seed=1), store=MemoryStore())
    eng.timeout_s = 0.05

    run = await eng.run(stalls, "t1", run_id="r1")

    assert eng.timeout_s == 0.05
    assert run.status == "cancelled"
    assert run.error is not None
    assert run.error.kind == "timeout"


def test_a_timeout_set_on_the_engine_is_checked() -> None:
    eng = Engine(model=SimulatedModel(seed=1), store=MemoryStore())

    with pytest.raises(ValueError, match="timeout_s must be a number of seconds > 0"):
        eng.timeout_s = -1
