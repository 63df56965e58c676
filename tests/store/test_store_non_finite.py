"""A float JSON cannot carry (NaN, infinity) in a run's input or result is refused whole.

A run's own JSON would write it as ``null``: stored, the run would read back changed.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from engine import JournalError
from engine.store import MemoryStore, Run, SQLiteStore, Store


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    s: Store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "runs.db")
    yield s
    await s.close()


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
async def test_a_non_finite_input_is_refused_and_nothing_stored(store: Store, value: float) -> None:
    with pytest.raises(
        JournalError,
        match=r"run 'r1' holds .* a float that is not finite .* at \['input'\]\['v'\]\[1\]",
    ):
        await store.create_run(Run(run_id="r1", flow="f", input={"v": [1, value]}))
    assert await store.get_run("r1") is None


@pytest.mark.parametrize("value", [math.inf, math.nan])
async def test_a_non_finite_result_is_refused_and_the_run_left_as_it_was(
    store: Store, value: float
) -> None:
    created, _ = await store.create_run(Run(run_id="r1", flow="f", input={"v": 1.5}))
    changed = created.model_copy(update={"result": {"score": value}, "status": "completed"})
    with pytest.raises(JournalError, match=r"run 'r1' holds .* at \['result'\]\['score'\]"):
        await store.update_run(changed, expected_version=created.version)
    assert await store.get_run("r1") == created
    changed = created.model_copy(update={"result": value})
    with pytest.raises(JournalError, match=r"run 'r1' holds .* at \['result'\]"):
        await store.finish_run(changed, expected_version=created.version, records=[], trace={})
    assert await store.get_run("r1") == created
