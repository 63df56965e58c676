"""What the engine refuses before it touches the store: bad prune rules, bad run ids."""

from __future__ import annotations

from typing import Any

import pytest
import support_flows as sf

from engine import Engine
from engine.models import ScriptedModel
from engine.store import MemoryStore, Store

GO = '{"call": "go", "args": {"item": "box"}}'


async def finished(eng: Engine, *run_ids: str) -> None:
    for run_id in run_ids:
        run = await eng.run(sf.fragile_flow, run_id, run_id=run_id)
        assert run.status == "completed"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"keep_last": -1}, "keep_last must be an integer >= 0", id="keep-last"),
        pytest.param({"older_than_s": -5.0}, "older_than_s must be a number >= 0", id="age"),
        pytest.param({"older_than_s": 60.0, "keep_last": -1}, "keep_last must be", id="one-of-two"),
    ],
)
async def test_engine_prune_with_a_negative_rule_raises_and_deletes_nothing(
    store: Store, kwargs: dict[str, Any], match: str
) -> None:
    eng = Engine(model=ScriptedModel([GO] * 2), store=store)
    await finished(eng, "r1", "r2")
    with pytest.raises(ValueError, match=match):
        await eng.prune(**kwargs)
    assert {r.run_id for r in await eng.list_runs()} == {"r1", "r2"}


async def test_engine_prune_keep_last_zero_deletes_every_finished_run(store: Store) -> None:
    eng = Engine(model=ScriptedModel([GO] * 2), store=store)
    await finished(eng, "r1", "r2")
    assert await eng.prune(keep_last=0) == 2
    assert await eng.list_runs() == []


@pytest.mark.parametrize(
    "run_id",
    [pytest.param("", id="empty"), pytest.param(7, id="int"), pytest.param(b"r1", id="bytes")],
)
async def test_engine_run_with_a_run_id_that_is_not_a_non_empty_string_raises(
    store: Store, run_id: Any
) -> None:
    eng = Engine(model=ScriptedModel([GO]), store=store)
    with pytest.raises(ValueError, match="a run id must be a non-empty string, got"):
        await eng.run(sf.fragile_flow, "t1", run_id=run_id)
    assert await eng.list_runs() == []
    assert sf.EFFECTS == []


async def test_engine_run_without_a_run_id_makes_a_new_one_each_time(store: Store) -> None:
    eng = Engine(model=ScriptedModel([GO] * 2), store=store)
    first = await eng.run(sf.fragile_flow, "t1")
    second = await eng.run(sf.fragile_flow, "t1")
    assert first.run_id != second.run_id
    assert len(await eng.list_runs()) == 2


@pytest.mark.parametrize("run_id", [pytest.param("", id="empty"), pytest.param(None, id="none")])
async def test_engine_run_many_with_a_run_id_function_giving_no_id_raises(
    store: Store, run_id: Any
) -> None:
    eng = Engine(model=ScriptedModel([GO]), store=store)
    with pytest.raises(ValueError, match="a run id must be a non-empty string, got"):
        await eng.run_many(sf.fragile_flow, ["t1"], run_id=lambda item: run_id)
    assert await eng.list_runs() == []


@pytest.mark.parametrize(
    "timeout_s", [0, -1.0, True, "5"], ids=["zero", "negative", "bool", "text"]
)
async def test_engine_timeout_that_is_not_a_positive_number_raises(timeout_s: Any) -> None:
    with pytest.raises(ValueError, match="timeout_s must be a number of seconds > 0"):
        Engine(model=ScriptedModel([]), store=MemoryStore(), timeout_s=timeout_s)
    eng = Engine(model=ScriptedModel([]), store=MemoryStore())
    with pytest.raises(ValueError, match="timeout_s must be a number of seconds > 0"):
        await eng.run_many(sf.menu_flow, ["t"], timeout_s=timeout_s)
    assert await eng.list_runs() == []
