"""A batch with ``on_error``: an input whose run cannot start is handed over, the rest run."""

from __future__ import annotations

from typing import Any

import pytest
from batch_support import engine, one_step

from engine import BatchProgress, JournalError
from engine.models import SimulatedModel
from engine.store import MemoryStore


async def test_on_error_gets_each_input_whose_run_cannot_start_and_the_batch_goes_on() -> None:
    store = MemoryStore()
    eng = engine(SimulatedModel(seed=4), store)
    refused: list[tuple[Any, str | None, Exception]] = []
    seen: list[BatchProgress] = []
    tickets: list[Any] = ["t1", object(), "", "t4"]  # not JSON; no valid run id

    runs = await eng.run_many(
        one_step,
        tickets,
        run_id=lambda t: t if isinstance(t, str) else "odd",
        on_error=lambda item, run_id, exc: refused.append((item, run_id, exc)),
        progress=seen.append,
    )

    assert [r.run_id for r in runs] == ["t1", "t4"]
    assert {r.status for r in runs} == {"completed"}
    [(_, odd_id, odd), (empty, empty_id, bad_id)] = refused
    assert (odd_id, type(odd)) == ("odd", JournalError)
    assert (empty, empty_id, type(bad_id)) == ("", "", ValueError)
    assert (seen[-1].started, seen[-1].not_started, seen[-1].completed) == (2, 2, 2)
    assert sorted(r.run_id for r in await store.list_runs()) == ["t1", "t4"]


async def test_without_on_error_such_an_input_stops_the_batch_with_its_error() -> None:
    eng = engine(SimulatedModel(seed=4))

    with pytest.raises(ValueError, match="a run id must be a non-empty string"):
        await eng.run_many(one_step, ["t1", "", "t3"], run_id=lambda t: t, concurrency=1)


async def test_an_error_of_the_inputs_themselves_stops_the_batch_even_with_on_error() -> None:
    eng = engine(SimulatedModel(seed=4))

    def tickets() -> Any:
        yield "t1"
        raise OSError("the input file went away")

    with pytest.raises(OSError, match="went away"):
        await eng.run_many(one_step, tickets(), on_error=lambda *_: None, concurrency=1)
