"""The run state machine: unknown run ids, the moves a run may make, the status groups."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
import support_flows as sf

import engine.store
from engine import Engine, EngineError, RunConflictError, RunNotFoundError
from engine._base import (
    CANCELLABLE,
    CLAIMABLE,
    ENDED_BY_FLOW,
    ENDED_IN_ERROR,
    MOVES,
    STATUSES,
    STOPPED,
    UNFINISHED,
    can_move,
    claim,
    move,
    release,
)
from engine.models import ScriptedModel
from engine.store import JournalRecord, Run, RunErrorInfo, RunStatus, Store


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args} if args else {"call": call})


# -- unknown run ids ---------------------------------------------------------------------------


async def test_resume_of_an_unknown_run_raises_run_not_found_which_is_a_key_error(
    store: Store,
) -> None:
    eng = Engine(model=ScriptedModel([]), store=store)

    with pytest.raises(RunNotFoundError) as info:
        await eng.resume("nope")

    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, EngineError)
    assert info.value.run_id == "nope"
    assert str(info.value) == "unknown run 'nope'"  # a sentence, not KeyError's quoted repr


async def test_callers_catching_key_error_still_catch_an_unknown_run(store: Store) -> None:
    eng = Engine(model=ScriptedModel([]), store=store)

    with pytest.raises(KeyError, match="unknown run 'ghost'"):
        await eng.cancel("ghost")
    with pytest.raises(KeyError, match="ghost"):
        await store.append("ghost", [JournalRecord(key="k", kind="step")])
    assert await eng.get("ghost") is None  # a read of an unknown id is not an error


async def test_an_unknown_run_error_keeps_its_run_id_across_processes() -> None:
    error = RunNotFoundError("r-1", detail="it was deleted while being submitted")

    again = pickle.loads(pickle.dumps(error))

    assert isinstance(again, RunNotFoundError)
    assert again.run_id == "r-1"
    assert str(again) == "unknown run 'r-1': it was deleted while being submitted"


# -- the moves ---------------------------------------------------------------------------------


def stored(status: RunStatus, **fields: Any) -> Run:
    return Run(run_id="r1", flow="f", status=status, **fields)


def test_a_completed_run_moves_nowhere() -> None:
    with pytest.raises(RunConflictError, match="run 'r1' is completed") as info:
        move(stored("completed"), "running")

    assert info.value.run_id == "r1"
    assert MOVES["completed"] == frozenset()
    assert not can_move("completed", "cancelled")


@pytest.mark.parametrize(
    ("source", "target"),
    [("queued", "completed"), ("suspended", "failed"), ("cancelled", "cancelled")],
)
def test_a_move_the_state_machine_forbids_raises_and_changes_nothing(
    source: RunStatus, target: RunStatus
) -> None:
    run = stored(source)

    with pytest.raises(RunConflictError, match=f"a {source} run cannot become {target}"):
        move(run, target)

    assert run.status == source


def test_a_claim_takes_the_run_running_and_counts_a_resume_unless_it_was_queued() -> None:
    first = claim(stored("queued"), owner="w1", lease_expires_at=130.0, now=100.0)
    assert (first.status, first.owner, first.lease_expires_at) == ("running", "w1", 130.0)
    assert (first.started_at, first.resumes) == (100.0, 0)

    was = stored("suspended", started_at=50.0, resumes=2)
    again = claim(was, owner="w2", lease_expires_at=230.0, now=200.0)
    assert (again.status, again.started_at, again.resumes) == ("running", 50.0, 3)
    assert was.status == "suspended"  # a copy: the record given is left as it was


def test_a_release_lets_go_of_the_owner_and_the_lease() -> None:
    running = stored("running", owner="w1", lease_expires_at=130.0)
    error = RunErrorInfo(kind="ValueError", message="bad")

    failed = release(running, "failed", error=error, finished_at=140.0, model_calls=3)

    assert (failed.status, failed.error, failed.finished_at) == ("failed", error, 140.0)
    assert (failed.owner, failed.lease_expires_at, failed.model_calls) == (None, None, 3)


def test_the_groups_follow_from_the_statuses_and_the_moves() -> None:
    def order(group: frozenset[RunStatus]) -> list[RunStatus]:
        return [s for s in STATUSES if s in group]

    assert set(STATUSES) == engine.store.FINISHED | UNFINISHED
    assert order(UNFINISHED) == ["queued", "running"]
    assert order(STOPPED) == ["waiting", "suspended", "failed", "cancelled"]
    assert order(ENDED_IN_ERROR) == ["suspended", "failed"]
    assert order(ENDED_BY_FLOW) == ["completed", "waiting", "suspended", "failed"]
    assert order(CLAIMABLE) == [
        "queued",
        "running",
        "waiting",
        "suspended",
        "failed",
        "cancelled",
    ]
    assert order(CANCELLABLE) == ["queued", "running", "waiting", "suspended", "failed"]
    assert engine.store.PRUNABLE == ("completed", "failed", "cancelled")


# -- the moves the engine makes ----------------------------------------------------------------


async def test_a_suspended_run_cancelled_by_hand_keeps_its_decision_and_resumes(
    store: Store,
) -> None:
    eng = Engine(
        model=ScriptedModel([pick("billing"), pick("ship", item="box"), "?", "?"]), store=store
    )
    suspended = await eng.run(sf.three_decisions, "t1", run_id="r1")
    assert suspended.status == "suspended"

    cancelled = await eng.cancel("r1")

    assert (cancelled.status, cancelled.owner, cancelled.lease_expires_at) == (
        "cancelled",
        None,
        None,
    )
    assert cancelled.error is not None
    assert cancelled.error.kind == "cancelled"
    assert cancelled.error.options == ["close", "reopen"]
    assert cancelled.finished_at == suspended.finished_at
    resumed = await Engine(model=ScriptedModel([pick("close")]), store=store).resume("r1")
    assert (resumed.status, resumed.resumes) == ("completed", 1)


async def test_a_completed_run_is_neither_cancelled_nor_resumed(store: Store) -> None:
    replies = [pick("billing"), pick("hold"), pick("close")]
    eng = Engine(model=ScriptedModel(replies), store=store)
    done = await eng.run(sf.three_decisions, "t1", run_id="r1")
    assert done.status == "completed"

    assert await eng.cancel("r1") == done
    assert await eng.resume("r1") == done


async def test_exporting_the_trace_of_an_unknown_run_raises_run_not_found() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from engine.otel import export_run

    with pytest.raises(RunNotFoundError, match="unknown run 'nope'"):
        await export_run(engine.store.MemoryStore(), "nope")
