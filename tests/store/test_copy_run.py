"""A run's end and its next version are copied in one step: the same run model_copy makes."""

from __future__ import annotations

import pytest

from engine import RunConflictError
from engine._base import copy_model
from engine._run._outcome import ended
from engine._run._spending import Counts
from engine.store import Run, RunErrorInfo, TokenUsage
from engine.store._checks import next_version


def _run() -> Run:
    return Run(
        run_id="r1",
        flow="f",
        status="running",
        input={"args": ["T1"], "kwargs": {}},
        owner="me",
        lease_expires_at=10.0,
        started_at=1.0,
        retries={"run": 1},
        cost_usd=0.5,
    )


def _same(a: Run, b: Run) -> None:
    assert type(a) is type(b)
    assert a == b
    assert a.model_dump_json() == b.model_dump_json()
    assert a.model_fields_set == b.model_fields_set
    assert list(a.__dict__) == list(b.__dict__)


def test_copy_model_is_model_copy() -> None:
    run = _run()
    update = {"version": 3, "updated_at": 5.0}
    copied = copy_model(run, update)
    _same(copied, run.model_copy(update=update))
    assert copied is not run
    assert copied.__dict__ is not run.__dict__
    assert run.version == 0  # the original is unchanged
    _same(copy_model(run, {}), run.model_copy())


def test_next_version_is_one_higher() -> None:
    run = _run()
    new = next_version(run, 4)
    assert new.version == 5
    assert new.updated_at >= run.updated_at
    assert new.model_fields_set == run.model_fields_set | {"version", "updated_at"}


def test_ended_is_the_released_run() -> None:
    run = _run()
    counts = Counts(model_calls=3, transitions=4, input_tokens=5, output_tokens=6, cost_usd=0.25)
    error = RunErrorInfo(kind="KeyError", message="boom")
    end = ended(run, "failed", None, error, counts, {"run": 2}, 0.7)
    assert end.finished_at is not None
    expected = run.model_copy(
        update={
            "status": "failed",
            "error": error,
            "owner": None,
            "lease_expires_at": None,
            "finished_at": end.finished_at,
            "result": None,
            "usage": TokenUsage(input_tokens=5, output_tokens=6),
            "cost_usd": 0.75,
            "transitions": 4,
            "model_calls": 3,
            "retries": {"run": 2},
            "active_s": 0.7,
        }
    )
    _same(end, expected)


def test_ended_refuses_a_move_the_state_machine_has_not() -> None:
    done = ended(_run(), "completed", 1, None, Counts(), {}, 0.1)
    with pytest.raises(RunConflictError, match="cannot become failed"):
        ended(done, "failed", None, RunErrorInfo(kind="k", message="m"), Counts(), {}, 0.1)


@pytest.mark.parametrize("given", range(2, len(Run.model_fields) + 1))
def test_copy_model_keeps_every_size_of_fields_set_as_model_copy_does(given: int) -> None:
    # A run with any number of fields set explicitly (the set is sized by how it is built).
    names = [n for n in Run.model_fields if n not in ("run_id", "flow")][: given - 2]
    template = _run().model_dump()
    run = Run(run_id="r1", flow="f", **{n: template[n] for n in names})
    for update in ({}, {"version": 1}, {"version": 2, "updated_at": 3.0, "owner": "you"}):
        copied = copy_model(run, update)
        _same(copied, run.model_copy(update=update))
        # Each version has a set of its own: setting a field on one leaves the other's alone.
        assert copied.model_fields_set is not run.model_fields_set
        before = set(run.model_fields_set)
        copied.error = RunErrorInfo(kind="k", message="m")
        assert "error" in copied.model_fields_set
        assert run.model_fields_set == before
        assert copied.model_dump(exclude_unset=True).keys() == copied.model_fields_set
