"""Durable runs: run, suspend, resume (fresh, other model, human pick), fail and fix, replay."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import anyio
import pytest
import support_flows as sf
from down_provider import Down
from pydantic import BaseModel

from engine import (
    DecisionError,
    Engine,
    NonDeterminismError,
    Runtime,
    agentic_function,
    decision,
    transport_policy,
)
from engine.models import Request, ScriptedModel
from engine.store import Store


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args} if args else {"call": call})


async def test_run_completes_and_get_returns_the_same_run(store: Store) -> None:
    model = ScriptedModel([pick("billing"), pick("ship", item="box"), pick("close")])
    eng = Engine(model=model, store=store)
    run = await eng.run(sf.three_decisions, "t1", run_id="r1")
    assert run.status == "completed"
    assert run.result == {"kind": "billing", "action": "shipped box", "close": "close"}
    assert await eng.get("r1") == run
    assert run.model_calls == 3
    assert run.transitions == 4  # three picks and one step
    assert run.error is None


async def test_run_suspends_on_third_decision_and_resumes_with_a_human_pick(store: Store) -> None:
    first = ScriptedModel([pick("billing"), pick("ship", item="box"), "no idea", "still none"])
    run = await Engine(model=first, store=store).run(sf.three_decisions, "t1", run_id="r1")
    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "no_action"
    assert run.error.where is not None
    assert run.error.where.endswith("decision:2")
    assert run.error.options == ["close", "reopen"]
    assert run.error.replies == ["no idea", "still none"]

    second = ScriptedModel([])
    resumed = await Engine(model=second, store=store).resume("r1", pick={"call": "reopen"})
    assert resumed.status == "completed"
    assert resumed.result == {"kind": "billing", "action": "shipped box", "close": "reopen"}
    assert second.calls == 0
    assert sf.EFFECTS == ["ship:box"]


async def test_a_replayed_step_returns_its_model_under_a_postponed_annotation(
    store: Store,
) -> None:
    model = ScriptedModel([pick("ship_parcel", item="box"), "no idea", "still none"])
    run = await Engine(model=model, store=store).run(sf.parcel_then_close, "t1", run_id="r1")
    assert run.status == "suspended"

    resumed = await Engine(model=ScriptedModel([]), store=store).resume("r1", pick={"call": "keep"})

    assert resumed.status == "completed", resumed.error
    assert resumed.result == {"carrier": "post", "item": "box", "close": "keep"}
    assert sf.EFFECTS == ["parcel:box"]  # replayed, not run again


async def test_a_step_annotation_that_cannot_be_resolved_fails_its_replay_clearly(
    store: Store,
) -> None:
    class Local(BaseModel):  # defined in a function: its postponed name cannot be resolved
        item: str

    async def make_local(item: str) -> Local:
        """Make a local thing."""
        return Local(item=item)

    @agentic_function
    async def local_flow(ticket: str, runtime: Runtime | None = None) -> str:
        made = await decision.make("Make.", [make_local])
        await decision.make("Close?", ["close"])
        return str(made.item)

    model = ScriptedModel([pick("make_local", item="box"), "no idea", "still none"])
    run = await Engine(model=model, store=store).run(local_flow, "t1", run_id="r1")
    assert run.status == "suspended"

    resumed = await Engine(model=ScriptedModel([]), store=store).resume(
        "r1", pick={"call": "close"}, flow=local_flow
    )

    assert resumed.status == "failed"
    assert resumed.error is not None
    assert resumed.error.kind == "JournalError"
    assert "'Local'" in resumed.error.message
    assert "module level" in resumed.error.message


async def test_resume_asks_afresh_on_another_model(store: Store) -> None:
    first = ScriptedModel([pick("billing"), pick("ship", item="box"), "?", "??"])
    await Engine(model=first, store=store).run(sf.three_decisions, "t1", run_id="r1")
    other = ScriptedModel([pick("close")])
    resumed = await Engine(model=ScriptedModel([]), store=store).resume("r1", model=other)
    assert resumed.status == "completed"
    assert other.calls == 1
    # Asked afresh: the original request alone, not the failed conversation.
    assert [m.role for m in other.requests[0].messages] == ["user"]
    assert other.requests[0].messages[0].text.startswith("Close?")
    assert sf.EFFECTS == ["ship:box"]
    assert resumed.model_calls == 5


async def test_resume_max_retries_gives_a_new_budget(store: Store) -> None:
    first = ScriptedModel([pick("billing"), pick("ship", item="box"), "?", "??"])
    await Engine(model=first, store=store).run(sf.three_decisions, "t1", run_id="r1")
    again = ScriptedModel(["nope", "nope", pick("close")])
    resumed = await Engine(model=again, store=store).resume("r1", max_retries=2)
    assert resumed.status == "completed"
    assert again.calls == 3


async def test_invalid_human_pick_raises_and_leaves_the_run_as_it_was(store: Store) -> None:
    first = ScriptedModel([pick("billing"), pick("ship", item="box"), "?", "??"])
    eng = Engine(model=first, store=store)
    await eng.run(sf.three_decisions, "t1", run_id="r1")
    before = await eng.get("r1")
    journal_before = await store.load_journal("r1")
    with pytest.raises(DecisionError, match="unknown_call") as info:
        await eng.resume("r1", pick={"call": "explode"})
    assert info.value.kind == "unknown_call"
    assert await eng.get("r1") == before
    assert await store.load_journal("r1") == journal_before


async def test_human_pick_without_a_call_is_no_action_and_not_a_dict_is_type_error(
    store: Store,
) -> None:
    first = ScriptedModel([pick("billing"), pick("ship", item="box"), "?", "??"])
    eng = Engine(model=first, store=store)
    await eng.run(sf.three_decisions, "t1", run_id="r1")
    before = await eng.get("r1")
    with pytest.raises(DecisionError) as info:
        await eng.resume("r1", pick={"args": {}})
    assert info.value.kind == "no_action"
    with pytest.raises(TypeError, match="pick= must be a dict"):
        await eng.resume("r1", pick='{"call": "close"}')  # type: ignore[arg-type]
    assert await eng.get("r1") == before


async def test_invalid_human_pick_inside_an_unfinished_step_raises_at_once(
    store: Store,
) -> None:
    # The failing decision lies inside the picked step: its menu is only known in there.
    model = ScriptedModel([pick("refund", order="o1"), "?", "??"])
    eng = Engine(model=model, store=store)
    suspended = await eng.run(sf.refund_flow, "t1", run_id="r1")
    assert suspended.status == "suspended"
    assert suspended.error is not None
    assert suspended.error.options == ["email", "call"]
    before = await eng.get("r1")
    journal_before = await store.load_journal("r1")
    with pytest.raises(DecisionError, match="unknown_call"):
        await eng.resume("r1", pick={"call": "fax"})
    assert await eng.get("r1") == before
    assert await store.load_journal("r1") == journal_before
    resumed = await eng.resume("r1", pick={"call": "email"})
    assert resumed.status == "completed"
    assert resumed.result == "refunded o1 by email"
    assert model.calls == 3  # nothing was asked again


async def test_invalid_human_pick_in_a_branch_beside_an_unfinished_one_raises_at_once(
    store: Store,
) -> None:
    async def reply(request: Request) -> str:
        if "slow" in request.messages[0].text:
            await anyio.sleep(0.2)  # still answering when its sibling fails the run
            return pick("ok")
        return "no pick here"

    model = ScriptedModel(reply)
    eng = Engine(model=model, store=store)
    suspended = await eng.run(sf.two_checks, "t1", run_id="r1")
    assert suspended.status == "suspended"
    before = await eng.get("r1")
    calls = model.calls
    with pytest.raises(DecisionError, match="unknown_call"):
        await eng.resume("r1", pick={"call": "maybe"})
    assert await eng.get("r1") == before
    assert model.calls == calls  # the unfinished sibling was not asked live by the check


async def test_failed_step_resumes_after_the_fix(store: Store) -> None:
    sf.BROKEN["value"] = True
    eng = Engine(model=ScriptedModel([pick("go", item="x")]), store=store)
    run = await eng.run(sf.fragile_flow, "t", run_id="f1")
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "RuntimeError"
    assert run.error.where == "run/fragile_flow:0/decision:0/go:0"  # the step that raised
    assert "bug in fragile_step" in (run.error.traceback or "")
    sf.BROKEN["value"] = False
    model = ScriptedModel([])
    resumed = await Engine(model=model, store=store).resume("f1")
    assert resumed.status == "completed"
    assert resumed.result == "ok x"
    assert model.calls == 0  # the pick was journaled; only the step ran again


async def test_a_failure_in_the_flow_itself_is_where_its_frame_is(store: Store) -> None:
    @agentic_function
    async def caught_then_raised(ticket: str, runtime: Runtime | None = None) -> str:
        with contextlib.suppress(RuntimeError):  # handled: not where the run failed
            await decision.make("Go?", {"go": sf.fragile_step})
        raise RuntimeError("the flow's own bug")

    sf.BROKEN["value"] = True
    eng = Engine(model=ScriptedModel([pick("go", item="x")]), store=store)
    run = await eng.run(caught_then_raised, "t", run_id="c1")
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.where == "run/caught_then_raised:0"


async def test_a_step_result_that_does_not_match_its_annotation_fails_at_the_step(
    store: Store,
) -> None:
    async def count(item: str) -> int:
        """Count an item (but returns text: a bug)."""
        return f"many {item}"  # type: ignore[return-value]

    @agentic_function
    async def counting(ticket: str, runtime: Runtime | None = None) -> int:
        result: int = await decision.make("Count?", {"count": count})
        return result

    eng = Engine(model=ScriptedModel([pick("count", item="x")]), store=store)
    run = await eng.run(counting, "t", run_id="a1")
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "JournalError"
    assert "does not match its return annotation" in run.error.message
    assert run.error.where == "run/counting:0/decision:0/count:0"
    assert not [r for r in await store.load_journal("a1") if r.kind == "step"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {"x": -float("inf")}])
async def test_a_result_that_is_not_finite_fails_clearly_instead_of_being_lost(
    store: Store, value: object
) -> None:
    @agentic_function
    async def odd(ticket: str, runtime: Runtime | None = None) -> object:
        await decision.make("Go?", ["go"])
        return value

    eng = Engine(model=ScriptedModel([pick("go")]), store=store)
    run = await eng.run(odd, "t", run_id="n1")
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "JournalError"
    assert "not finite" in run.error.message
    assert await eng.get("n1") == run


async def test_same_run_id_runs_once(store: Store) -> None:
    model = ScriptedModel([pick("billing"), pick("hold"), pick("close")])
    eng = Engine(model=model, store=store)
    first = await eng.run(sf.three_decisions, "t1", run_id="same")
    second = await eng.run(sf.three_decisions, "t1", run_id="same")
    assert first == second
    assert model.calls == 3


async def test_changed_menu_on_resume_fails_the_run_with_non_determinism(store: Store) -> None:
    model = ScriptedModel([pick("a"), "?", "??"])
    run = await Engine(model=model, store=store).run(sf.menu_flow, "t", run_id="m1")
    assert run.status == "suspended"
    sf.MENU["value"] = ["a", "b", "c"]  # the journaled first decision now offers another menu
    eng = Engine(model=ScriptedModel([pick("close")]), store=store)
    failed = await eng.resume("m1")
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.kind == "NonDeterminismError"
    assert failed.error.where == "run/menu_flow:0/decision:0"
    assert "run/menu_flow:0/decision:0" in failed.error.message
    assert "['a', 'b']" in failed.error.message
    assert "['a', 'b', 'c']" in failed.error.message
    sf.MENU["value"] = ["a", "b"]  # the fix: the code asks what it asked before
    fixed = await eng.resume("m1")
    assert fixed.status == "completed"
    assert fixed.result == ["a", "close"]


def test_non_determinism_error_is_an_engine_error() -> None:
    err = NonDeterminismError("k/decision:0", "the menu changed")
    assert "k/decision:0" in str(err)
    assert "the menu changed" in str(err)


async def test_map_branches_replay_when_they_finish_in_another_order(store: Store) -> None:
    delays = {"a": 0.03, "b": 0.0, "c": 0.015}

    async def first_run(request: Request) -> str:
        text = request.messages[0].text
        for item, delay in delays.items():
            if f"Check {item}." in text:
                await anyio.sleep(delay)
                return pick("ok" if item != "b" else "bad")
        return "?"  # the closing decision fails: the run suspends

    run = await Engine(model=ScriptedModel(first_run), store=store).run(
        sf.fan_out, ["a", "b", "c"], run_id="fan"
    )
    assert run.status == "suspended"
    delays.update({"a": 0.0, "b": 0.03, "c": 0.01})  # replay finishes in another order
    resumed = await Engine(model=ScriptedModel([pick("close")]), store=store).resume("fan")
    assert resumed.status == "completed"
    assert resumed.result == ["a:ok", "b:bad", "c:ok"]


async def test_resume_of_unknown_run_raises_key_error(store: Store) -> None:
    with pytest.raises(KeyError, match="nope"):
        await Engine(model=ScriptedModel([]), store=store).resume("nope")


async def test_get_of_unknown_run_is_none(store: Store) -> None:
    assert await Engine(model=ScriptedModel([]), store=store).get("nope") is None


async def test_resume_of_completed_run_returns_it_unchanged(store: Store) -> None:
    eng = Engine(model=ScriptedModel([pick("billing"), pick("hold"), pick("close")]), store=store)
    run = await eng.run(sf.three_decisions, "t", run_id="c1")
    assert await eng.resume("c1") == run


async def test_resume_of_a_local_flow_needs_flow_argument(store: Store) -> None:
    from engine import agentic_function, decision

    @agentic_function
    async def local(ticket: str, runtime: object = None) -> str:
        result: str = await decision.make("Pick.", ["x"])
        return result

    eng = Engine(model=ScriptedModel(["?", "??"]), store=store)
    run = await eng.run(local, "t", run_id="l1")
    assert run.status == "suspended"
    from engine._run._flows import FLOWS

    FLOWS._flows.pop(run.flow)  # a new process has not run it
    with pytest.raises(LookupError, match="pass flow="):
        await eng.resume("l1", pick={"call": "x"})
    resumed = await eng.resume("l1", pick={"call": "x"}, flow=local)
    assert resumed.result == "x"


async def test_list_runs_by_status(store: Store) -> None:
    eng = Engine(model=ScriptedModel([pick("a"), pick("close"), pick("a"), "?", "??"]), store=store)
    await eng.run(sf.menu_flow, "t", run_id="ok")
    await eng.run(sf.menu_flow, "t", run_id="stuck")
    assert [r.run_id for r in await eng.list_runs(status="suspended")] == ["stuck"]
    assert {r.run_id for r in await eng.list_runs()} == {"ok", "stuck"}


async def test_list_runs_refuses_a_status_that_does_not_exist(store: Store) -> None:
    eng = Engine(model=ScriptedModel([]), store=store)
    with pytest.raises(ValueError, match="suspended"):
        await eng.list_runs(status="suspend")  # type: ignore[arg-type]


async def test_run_many_returns_runs_in_input_order_with_stopped_ones(store: Store) -> None:
    in_flight = peak = 0

    async def reply(request: Request) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.001)
        in_flight -= 1
        return pick("close") if "Second?" in request.messages[0].text else pick("a")

    eng = Engine(model=ScriptedModel(reply), store=store)
    runs = await eng.run_many(
        sf.menu_flow, [f"t{i}" for i in range(6)], concurrency=2, run_id=lambda t: f"id-{t}"
    )
    assert [r.run_id for r in runs] == [f"id-t{i}" for i in range(6)]
    assert all(r.status == "completed" for r in runs)
    assert peak <= 2


async def test_run_many_with_two_inputs_naming_one_run_runs_it_once(store: Store) -> None:
    async def reply(request: Request) -> str:
        await anyio.sleep(0.01)  # both inputs are in flight together
        return pick("close") if "Second?" in request.messages[0].text else pick("a")

    model = ScriptedModel(reply)
    eng = Engine(model=model, store=store)
    runs = await eng.run_many(sf.menu_flow, ["x", "x", "y"], run_id=lambda t: f"id-{t}")
    assert [r.run_id for r in runs] == ["id-x", "id-x", "id-y"]
    assert runs[0].status == "completed"
    assert runs[1].status in ("running", "completed")  # the stored run, as it was found
    assert model.calls == 4  # two decisions each for x and y, none for the duplicate
    stored = await eng.get("id-x")
    assert stored is not None
    assert stored.status == "completed"


def _three_decisions_answer(request: Request) -> str:
    """Pick for sf.three_decisions by its prompt: classify, act, close."""
    text = request.messages[0].text
    return pick("billing" if "Classify" in text else "hold" if "Act" in text else "close")


async def test_provider_error_after_transport_retries_fails_the_run_and_it_resumes(
    store: Store,
) -> None:
    async def no_wait(seconds: float) -> None:
        return None

    model = Down(_three_decisions_answer)
    runtime = Runtime(model=model, transport=transport_policy(attempts=3, sleep=no_wait))
    eng = Engine(runtime=runtime, store=store, breaker=None)
    run = await eng.run(sf.three_decisions, "t1", run_id="p1")
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "ProviderUnavailableError"
    assert model.calls == 3
    model.up = True
    resumed = await eng.resume("p1")
    assert resumed.status == "completed"


async def test_stored_trace_root_says_how_the_run_ended(store: Store) -> None:
    eng = Engine(model=ScriptedModel([pick("billing"), pick("hold"), "?", "??"]), store=store)
    await eng.run(sf.three_decisions, "t1", run_id="s1")
    trace = await eng.trace("s1")
    assert trace is not None
    roots = [n for n in trace["nodes"] if n["parent_id"] is None]
    assert [(n["kind"], n["status"]) for n in roots] == [("run", "suspended")]


async def test_resume_takes_a_model_string(store: Store) -> None:
    first = ScriptedModel([pick("billing"), pick("hold"), "?", "??"])
    await Engine(model=first, store=store).run(sf.three_decisions, "t1", run_id="r1")
    resumed = await Engine(model=ScriptedModel([]), store=store).resume("r1", model="simulated:3")
    assert resumed.status == "completed"
    assert resumed.result["close"] in ("close", "reopen")


async def test_engine_as_context_manager_closes_the_store_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with Engine(model=ScriptedModel([pick("a"), pick("close")])) as eng:
        run = await eng.run(sf.menu_flow, "t", run_id="c1")
    assert run.status == "completed"
    assert (tmp_path / "engine.db").exists()
    with pytest.raises(RuntimeError):
        await eng.get("c1")  # the default store was closed on the way out


def double(n: int) -> int:
    """A plain def flow: no decision, just work."""
    return n * 2


async def test_plain_def_flow_runs_on_a_worker_thread(store: Store) -> None:
    run = await Engine(model=ScriptedModel([]), store=store).run(double, 21, run_id="d1")
    assert run.status == "completed"
    assert run.result == 42


async def test_cancelling_a_suspended_run_keeps_what_its_decision_offered(store: Store) -> None:
    eng = Engine(
        model=ScriptedModel([pick("billing"), pick("ship", item="box"), "?", "??"]), store=store
    )
    suspended = await eng.run(sf.three_decisions, "t1", run_id="c1")
    assert suspended.error is not None

    cancelled = await eng.cancel("c1")

    assert cancelled.status == "cancelled"
    assert cancelled.error is not None
    assert cancelled.error.kind == "cancelled"
    assert cancelled.error.where == suspended.error.where
    assert cancelled.error.options == ["close", "reopen"]
    assert cancelled.error.replies == ["?", "??"]
    resumed = await Engine(model=ScriptedModel([pick("close")]), store=store).resume("c1")
    assert resumed.status == "completed"


async def test_a_sibling_branchs_failure_is_asked_again_on_resume(store: Store) -> None:
    asked = 0
    both_asked_again = anyio.Event()

    async def nope(request: Request) -> str:
        # Both branches' re-picks are answered in the same turn of the loop, so both fail
        # before either failure stops the run (a branch cancelled while it waits would
        # journal no failure of its own).
        nonlocal asked
        asked += 1
        if asked <= 2:  # each branch's first ask
            await anyio.sleep(0.01)
        elif asked == 3:
            await both_asked_again.wait()
        else:
            both_asked_again.set()
        return "no pick here"

    eng = Engine(model=ScriptedModel(nope), store=store)
    both = await eng.run(sf.two_checks, "t", run_id="b1")
    journal = await store.load_journal("b1")
    failures = [r.key for r in journal if r.kind == "decision_failed"]
    assert len(failures) == 2  # both branches failed before the run stopped
    # The same journal, stopped at the second failure: the first one is followed by records of
    # the other branch only, which is not the flow moving past it.
    assert both.error is not None
    error = both.error.model_copy(update={"where": failures[1]})
    copy = both.model_copy(update={"run_id": "b2", "error": error, "version": 0})
    await store.create_run(copy)
    await store.append("b2", journal)

    resumed = await Engine(model=ScriptedModel(lambda r: pick("ok")), store=store).resume("b2")

    assert resumed.status == "completed"
    assert resumed.result == ["slow:ok", "fast:ok"]


async def test_a_flow_of_variable_arguments_gets_them_back_as_they_were(store: Store) -> None:
    first = Engine(model=ScriptedModel(["?", "??"]), store=store)
    run = await first.run(
        sf.many_items, sf.Item(sku="a"), sf.Item(sku="b"), run_id="v1", gift=sf.Note(text="wrap")
    )
    assert run.status == "suspended"  # the flow got its arguments as models the first time

    resumed = await Engine(model=ScriptedModel([pick("close")]), store=store).resume("v1")

    assert resumed.status == "completed"
    assert resumed.result == "a,b|gift=wrap|close"
