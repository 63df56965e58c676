"""The contract of ``finish_run``, over every store of the contract suite."""

from __future__ import annotations

import pytest
import test_contract
from test_contract import keys, new_run, record

from engine.store import Store

store = test_contract.store  # the contract suite's fixture: one run per store factory


async def test_finish_run_writes_outcome_journal_tail_and_trace_together(store: Store) -> None:
    stored, _ = await store.create_run(new_run("r1", status="running", owner="w1"))
    await store.append("r1", [record("a")], owner="w1")
    final = stored.model_copy(update={"status": "completed", "owner": None, "result": 3})
    done = await store.finish_run(
        final, expected_version=stored.version, records=[record("b")], trace={"nodes": []}
    )
    assert done is not None
    assert done.version == stored.version + 1
    assert (await store.get_run("r1")) == done
    assert await keys(store, "r1") == ["a", "b"]
    assert await store.load_trace("r1") == {"nodes": []}


async def test_finish_run_that_loses_its_compare_and_set_writes_nothing(store: Store) -> None:
    stored, _ = await store.create_run(new_run("r1", status="running"))
    moved = await store.update_run(stored, expected_version=stored.version)
    assert moved is not None
    final = stored.model_copy(update={"status": "completed"})
    lost = await store.finish_run(
        final, expected_version=stored.version, records=[record("b")], trace={"x": 1}
    )
    assert lost is None
    assert (await store.get_run("r1")) == moved
    assert await keys(store, "r1") == []
    assert await store.load_trace("r1") is None


@pytest.mark.parametrize("trace", [None, {"nodes": [1]}], ids=["no-trace", "trace"])
async def test_finish_run_without_records(store: Store, trace: dict[str, object] | None) -> None:
    stored, _ = await store.create_run(new_run("r1"))
    done = await store.finish_run(stored, expected_version=stored.version, trace=trace)
    assert done is not None
    assert await keys(store, "r1") == []
    assert await store.load_trace("r1") == trace
