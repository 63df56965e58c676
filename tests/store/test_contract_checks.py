"""What every store refuses and what it hands back: JSON only, copies only, nothing after close.

Runs over every store of the contract suite, so the memory store checks what the SQL ones do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import test_contract
from test_contract import keys, new_run, record

from engine import JournalError
from engine.store import Store

store = test_contract.store  # the contract suite's fixture: one run per store factory

NOT_JSON = object()


# -- JSON only ---------------------------------------------------------------------------------


async def test_append_of_data_that_is_not_json_raises_and_stores_none_of_the_batch(
    store: Store,
) -> None:
    await store.create_run(new_run("r1"))
    await store.append("r1", [record("a")])
    with pytest.raises(
        JournalError, match="journal record 'bad' of run 'r1' holds a value that is not JSON"
    ):
        await store.append("r1", [record("b"), record("bad", data=NOT_JSON), record("c")])
    assert await keys(store, "r1") == ["a"]


@pytest.mark.parametrize("field", ["input", "result"])
async def test_create_run_holding_a_value_that_is_not_json_raises_and_stores_nothing(
    store: Store, field: str
) -> None:
    value: Any = {"x": NOT_JSON} if field == "input" else NOT_JSON
    with pytest.raises(JournalError, match="run 'r1' holds a value that is not JSON"):
        await store.create_run(new_run("r1", **{field: value}))
    assert await store.get_run("r1") is None


async def test_update_run_holding_a_value_that_is_not_json_raises_and_changes_nothing(
    store: Store,
) -> None:
    stored, _ = await store.create_run(new_run("r1"))
    bad = stored.model_copy(update={"status": "completed", "result": NOT_JSON})
    with pytest.raises(JournalError, match="run 'r1' holds a value that is not JSON"):
        await store.update_run(bad, expected_version=0)
    assert await store.get_run("r1") == stored


@pytest.mark.parametrize("what", ["record", "trace", "result"])
async def test_finish_run_with_a_value_that_is_not_json_raises_and_writes_nothing(
    store: Store, what: str
) -> None:
    stored, _ = await store.create_run(new_run("r1", status="running"))
    final = stored.model_copy(
        update={"status": "completed", "result": NOT_JSON if what == "result" else 1}
    )
    records = [record("a"), record("b", data=NOT_JSON if what == "record" else 2)]
    trace = {"nodes": [NOT_JSON if what == "trace" else 3]}
    with pytest.raises(JournalError, match="holds a value that is not JSON"):
        await store.finish_run(final, expected_version=0, records=records, trace=trace)
    assert await store.get_run("r1") == stored
    assert await store.load_journal("r1") == []
    assert await store.load_trace("r1") is None


async def test_save_trace_that_is_not_json_raises_and_keeps_the_old_trace(store: Store) -> None:
    await store.create_run(new_run("r1"))
    await store.save_trace("r1", {"nodes": []})
    with pytest.raises(JournalError, match="the trace of run 'r1' holds a value that is not JSON"):
        await store.save_trace("r1", {"nodes": [NOT_JSON]})
    assert await store.load_trace("r1") == {"nodes": []}


async def test_values_come_back_as_json_whatever_python_type_went_in(store: Store) -> None:
    await store.create_run(new_run("r1", result=("a", 1)))
    await store.append("r1", [record("k", data={"pair": (1, 2)})])
    await store.save_trace("r1", {"span": (0.5, 1.5)})
    run = await store.get_run("r1")
    assert run is not None
    assert run.result == ["a", 1]
    assert [r.data for r in await store.load_journal("r1")] == [{"pair": [1, 2]}]
    assert await store.load_trace("r1") == {"span": [0.5, 1.5]}


# -- copies, both ways -------------------------------------------------------------------------


async def test_a_caller_changing_what_it_wrote_changes_nothing_stored(store: Store) -> None:
    run = new_run("r1", input={"items": [1]})
    await store.create_run(run)
    data: dict[str, Any] = {"seen": [1]}
    await store.append("r1", [record("k", data=data)])
    trace: dict[str, Any] = {"nodes": [1]}
    await store.save_trace("r1", trace)
    run.input["items"].append(2)
    data["seen"].append(2)
    trace["nodes"].append(2)
    stored = await store.get_run("r1")
    assert stored is not None
    assert stored.input == {"items": [1]}
    assert [r.data for r in await store.load_journal("r1")] == [{"seen": [1]}]
    assert await store.load_trace("r1") == {"nodes": [1]}


async def test_a_caller_changing_what_it_read_changes_nothing_stored(store: Store) -> None:
    await store.create_run(new_run("r1", input={"items": [1]}))
    await store.append("r1", [record("k", data={"seen": [1]})])
    await store.save_trace("r1", {"nodes": [1]})
    listed = await store.list_runs()
    listed[0].input["items"].append(2)
    again, _ = await store.create_run(new_run("r1"))
    again.input["items"].append(3)
    journal = await store.load_journal("r1")
    journal[0].data["seen"].append(2)
    trace = await store.load_trace("r1")
    assert trace is not None
    trace["nodes"].append(2)
    stored = await store.get_run("r1")
    assert stored is not None
    assert stored.input == {"items": [1]}
    assert [r.data for r in await store.load_journal("r1")] == [{"seen": [1]}]
    assert await store.load_trace("r1") == {"nodes": [1]}


# -- prune's arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        pytest.param({"keep_last": -1}, r"keep_last must be an integer >= 0.* got -1", id="keep"),
        pytest.param({"keep_last": 1.5}, r"keep_last must be an integer", id="keep-float"),
        pytest.param({"keep_last": True}, r"keep_last must be an integer", id="keep-bool"),
        pytest.param({"older_than_s": -1.0}, r"older_than_s must be a number >= 0", id="age"),
        pytest.param({"older_than_s": float("nan")}, r"older_than_s must be a", id="age-nan"),
        pytest.param({"older_than_s": "1h"}, r"older_than_s must be a number", id="age-str"),
    ],
)
async def test_prune_with_a_bad_rule_raises_and_deletes_nothing(
    store: Store, kwargs: dict[str, Any], match: str
) -> None:
    await store.create_run(new_run("done", status="completed", finished_at=1.0))
    with pytest.raises(ValueError, match=match):
        await store.prune(**kwargs)
    assert [r.run_id for r in await store.list_runs()] == ["done"]


# -- after close -------------------------------------------------------------------------------

CALLS: dict[str, Callable[[Store], Awaitable[object]]] = {
    "create_run": lambda s: s.create_run(new_run("r2")),
    "get_run": lambda s: s.get_run("r1"),
    "list_runs": lambda s: s.list_runs(),
    "update_run": lambda s: s.update_run(new_run("r1"), expected_version=0),
    "finish_run": lambda s: s.finish_run(new_run("r1"), expected_version=0),
    "append": lambda s: s.append("r1", [record("a")]),
    "load_journal": lambda s: s.load_journal("r1"),
    "save_trace": lambda s: s.save_trace("r1", {}),
    "load_trace": lambda s: s.load_trace("r1"),
    "delete_runs": lambda s: s.delete_runs(["r1"]),
    "prune": lambda s: s.prune(keep_last=0),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
async def test_a_closed_store_refuses_every_call(
    store: Store, call: Callable[[Store], Awaitable[object]]
) -> None:
    await store.create_run(new_run("r1"))
    await store.close()
    await store.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="is closed; open a new store"):
        await call(store)
