"""Recovery of orphaned runs: each is taken over alone, and one that cannot be is skipped."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import structlog
import support_flows as sf

from engine import Engine, Runtime, agentic_function, decision
from engine._run._flows import flow_name
from engine.models import ScriptedModel
from engine.store import JournalRecord, MemoryStore, Run, Store

GO = '{"call": "go", "args": {"item": "box"}}'
GONE = "gone_module:flow"


async def orphan(store: Store, run_id: str, flow: str) -> Run:
    """Store a run as a process that died mid-run leaves it: running, its lease run out."""
    now = time.time()
    run = Run(
        run_id=run_id,
        flow=flow,
        status="running",
        input={"args": [run_id], "kwargs": {}},
        owner="dead-worker",
        lease_expires_at=now - 1,
        started_at=now - 2,
    )
    stored, _ = await store.create_run(run)
    return stored


async def test_recover_resumes_the_orphans_it_can_and_skips_one_whose_flow_is_gone(
    store: Store,
) -> None:
    await orphan(store, "a1", flow_name(sf.fragile_flow))
    gone = await orphan(store, "gone", GONE)
    await orphan(store, "a2", flow_name(sf.fragile_flow))
    eng = Engine(model=ScriptedModel([GO] * 2), store=store)

    with structlog.testing.capture_logs() as logs:
        recovered = await eng.recover()

    assert sorted((r.run_id, r.status) for r in recovered) == [
        ("a1", "completed"),
        ("a2", "completed"),
    ]
    assert sorted(sf.EFFECTS) == ["fragile:box", "fragile:box"]
    assert await eng.get("gone") == gone  # left exactly as it was, for a later recover
    [skipped] = [e for e in logs if e["event"] == "recover_skipped"]
    assert skipped["log_level"] == "warning"
    assert skipped["run_id"] == "gone"
    assert skipped["flow"] == GONE
    assert "cannot find flow 'gone_module:flow'" in skipped["reason"]


async def test_recover_with_only_unfindable_orphans_recovers_nothing(store: Store) -> None:
    gone = await orphan(store, "gone", GONE)
    eng = Engine(model=ScriptedModel([]), store=store)
    assert await eng.recover() == []
    assert await eng.get("gone") == gone


async def test_recover_finds_a_flow_defined_inside_a_function_among_flows(store: Store) -> None:
    @agentic_function
    async def local(ticket: str, runtime: Runtime | None = None) -> str:
        verdict: str = await decision.make(f"Close {ticket}?", ["close", "keep"])
        return verdict

    # A name of its own: the flows a process has run stay known to it, across tests too.
    local.__qualname__ += f"_{uuid.uuid4().hex}"
    await orphan(store, "l1", flow_name(local))
    await orphan(store, "a1", flow_name(sf.fragile_flow))

    first = await Engine(model=ScriptedModel([GO]), store=store).recover()
    assert [(r.run_id, r.status) for r in first] == [("a1", "completed")]
    skipped = await store.get_run("l1")
    assert skipped is not None
    assert (skipped.status, skipped.owner) == ("running", "dead-worker")

    eng = Engine(model=ScriptedModel(['{"call": "close"}']), store=store)
    second = await eng.recover(flows=[sf.fragile_flow, local])
    assert [(r.run_id, r.status, r.result) for r in second] == [("l1", "completed", "close")]


async def test_recover_flows_must_be_functions(store: Store) -> None:
    await orphan(store, "a1", flow_name(sf.fragile_flow))
    eng = Engine(model=ScriptedModel([]), store=store)
    with pytest.raises(TypeError, match="a flow must be a function"):
        await eng.recover(flows=["support_flows:fragile_flow"])  # type: ignore[list-item]
    stored = await eng.get("a1")
    assert stored is not None
    assert stored.owner == "dead-worker"


async def test_recover_counts_the_retries_the_dead_execution_journaled(store: Store) -> None:
    # The process died before it stored its counts, but its retries are in the journal.
    await orphan(store, "r1", flow_name(sf.fragile_flow))
    attempts = [
        JournalRecord(
            key="run/fragile_flow:0/decision:0/model_call:0",
            kind="retry",
            actor="transport",
            data={"layer": "transport", "attempt": n, "kind": "RateLimitError", "message": ""},
        )
        for n in (2, 3)
    ]
    await store.append("r1", attempts)
    eng = Engine(model=ScriptedModel([GO]), store=store)

    (recovered,) = await eng.recover()

    assert recovered.status == "completed"
    assert recovered.retries == {"transport": 2}


async def died_mid_resume(store: Store, picked: str) -> None:
    """Leave run "t1" as a resume that died does: it journaled its fresh reply, then died.

    The same run goes through the same journal on a scratch store to get that reply's record.
    """
    replies = [pick_json("billing"), pick_json("ship", item="box"), "?", "??"]
    scratch = MemoryStore()
    for target in (store, scratch):
        await Engine(model=ScriptedModel(replies), store=target).run(
            sf.three_decisions, "t1", run_id="t1"
        )
    await Engine(model=ScriptedModel([pick_json(picked)]), store=scratch).resume("t1")
    fresh = [r for r in await scratch.load_journal("t1") if "@1/" in r.key and r.kind == "model"]
    run = await store.get_run("t1")
    assert run is not None
    taken = run.model_copy(
        update={"status": "running", "owner": "dead-worker", "lease_expires_at": time.time() - 1}
    )
    claimed = await store.update_run(taken, expected_version=run.version)
    assert claimed is not None
    await store.append("t1", fresh)


async def test_recover_carries_on_a_resume_that_died_after_its_fresh_reply(store: Store) -> None:
    await died_mid_resume(store, "close")
    model = ScriptedModel([])  # everything it needs is journaled

    (recovered,) = await Engine(model=model, store=store).recover()

    assert recovered.status == "completed"
    assert recovered.result == {"kind": "billing", "action": "shipped box", "close": "close"}
    assert model.calls == 0


async def test_a_resume_by_pick_that_died_is_taken_over_with_its_pick(store: Store) -> None:
    replies = [pick_json("billing"), pick_json("ship", item="box"), "?", "??"]
    eng = Engine(model=ScriptedModel(replies), store=store)
    await eng.run(sf.three_decisions, "t1", run_id="t1")
    run = await store.get_run("t1")
    assert run is not None
    taken = run.model_copy(
        update={"status": "running", "owner": "dead-worker", "lease_expires_at": time.time() - 1}
    )
    assert await store.update_run(taken, expected_version=run.version) is not None

    # A worker that takes the run over passes the queued pick again.
    resumed = await Engine(model=ScriptedModel([]), store=store).resume(
        "t1", pick={"call": "reopen"}
    )

    assert resumed.status == "completed"
    assert resumed.result["close"] == "reopen"


def pick_json(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args} if args else {"call": call})
