"""Run ids a store cannot keep are refused before anything is stored."""

from __future__ import annotations

import pytest

from engine import Engine, agentic_function
from engine.models import ScriptedModel
from engine.store import MemoryStore


@agentic_function
async def echo(item: str) -> str:
    return item


@pytest.mark.parametrize("run_id", ["t\ud800", "t\x00"], ids=["lone-surrogate", "nul"])
async def test_a_run_id_no_store_can_keep_is_refused_before_anything_is_stored(run_id: str) -> None:
    store = MemoryStore()
    eng = Engine(model=ScriptedModel([]), store=store)

    with pytest.raises(ValueError, match="run id"):
        await eng.run(echo, "x", run_id=run_id)

    assert await store.list_runs() == []


async def test_a_batch_hands_a_run_id_no_store_can_keep_to_on_error_and_goes_on() -> None:
    eng = Engine(model=ScriptedModel([]), store=MemoryStore())
    refused: list[object] = []

    runs = await eng.run_many(
        echo,
        ["a", "b\ud800"],
        run_id=lambda item: item,
        on_error=lambda item, run_id, error: refused.append(item),
    )

    assert [r.run_id for r in runs] == ["a"]
    assert refused == ["b\ud800"]
