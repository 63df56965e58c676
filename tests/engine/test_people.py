"""People in the loop: human decisions, approvals of a model's pick, deadlines, notifications."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import people_flows as pf
import pytest

from engine import (
    DecisionError,
    Engine,
    RunNotFoundError,
    Runtime,
    WaitingForAnswer,
    decision,
)
from engine.models import ScriptedModel
from engine.store import PostgresStore, Run, SQLiteStore, Store

HERE = Path(__file__).parent


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


@pytest.fixture(autouse=True)
def _clean() -> None:
    pf.DONE.clear()


@pytest.fixture(params=["sqlite", "postgres"])
async def shared(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A store two engines share: SQLite, and PostgreSQL where one answers."""
    s: Store
    if request.param == "sqlite":
        s = SQLiteStore(tmp_path / "runs.db")
    else:
        dsn = request.getfixturevalue("pg_dsn")
        s = PostgresStore(dsn, schema=request.getfixturevalue("pg_schema"))
    yield s
    await s.close()


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def stored_state(store: Store, run_id: str) -> tuple[Run | None, int]:
    return await store.get_run(run_id), len(await store.load_journal(run_id))


# -- a human decision ----------------------------------------------------------------------------


async def test_a_human_step_waits_and_is_answered_from_another_engine(shared: Store) -> None:
    first = ScriptedModel([pick("billing")])
    run = await Engine(first, store=shared).run(pf.triage, "T-1", run_id="r1")

    assert run.status == "waiting"
    assert run.error is not None
    assert run.error.kind == "waiting"
    assert run.error.where == "run/triage:0/decision:1"
    (question,) = run.error.questions or []
    assert question["name"] == "triage"
    assert question["kind"] == "decision"
    assert question["prompt"] == "Ticket 'T-1' (billing): escalate or close?"
    assert question["options"] == ["escalate", "close_ticket"]
    assert [o["name"] for o in question["menu"]] == ["escalate", "close_ticket"]
    assert run.input == {"args": ["T-1"], "kwargs": {}}
    assert pf.DONE == []

    answerer = ScriptedModel([])  # a model call would raise: nothing may be asked again
    done = await Engine(answerer, store=shared).answer(
        "r1", {"call": "escalate", "args": {"queue": "vip"}}
    )

    assert (done.status, done.result) == ("completed", "escalated to vip")
    assert answerer.requests == []
    assert len(first.requests) == 1
    assert pf.DONE == ["escalate:vip"]
    picks = [r for r in await shared.load_journal("r1") if r.kind == "pick"]
    assert [(p.key, p.actor) for p in picks] == [
        ("run/triage:0/decision:0", "model"),
        ("run/triage:0/decision:1", "human"),
    ]


@pytest.mark.parametrize(
    ("answer", "kind", "says"),
    [
        ({"call": "refund", "args": {}}, "unknown_call", "'refund' is not an option"),
        ({"call": "escalate", "args": {"queue": "gold"}}, "enum_violation", "gold"),
        (
            {"call": "escalate", "args": {"queue": "vip", "queu": "x"}},
            "bad_args",
            "unknown argument 'queu' for option 'escalate'",
        ),
        ({"call": "escalate", "args": {}}, "missing_required", "queue"),
        ({"args": {}}, "no_action", ""),
    ],
)
async def test_a_wrong_answer_leaves_the_run_waiting_and_unchanged(
    shared: Store, answer: dict[str, Any], kind: str, says: str
) -> None:
    await Engine(ScriptedModel([pick("tech")]), store=shared).run(pf.triage, "T-2", run_id="r2")
    before = await stored_state(shared, "r2")

    with pytest.raises(DecisionError) as caught:
        await Engine(ScriptedModel([]), store=shared).answer("r2", answer)

    assert caught.value.kind == kind
    assert says in caught.value.message
    assert caught.value.human_pick
    assert await stored_state(shared, "r2") == before
    assert pf.DONE == []


async def test_a_waiting_run_survives_its_process(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    child = f"""
import anyio, sys
sys.path.insert(0, {str(HERE)!r})
import people_flows as pf
from engine import Engine
from engine.models import ScriptedModel
from engine.store import SQLiteStore

async def main():
    async with SQLiteStore({str(db)!r}) as store:
        run = await Engine(ScriptedModel(['{{"call": "billing"}}']), store=store).run(
            pf.triage, "T-3", run_id="r3"
        )
        print(run.status)

anyio.run(main)
"""
    out = await anyio.run_process([sys.executable, "-c", child], check=True)
    assert out.stdout.decode().strip() == "waiting"

    store = SQLiteStore(db)
    try:
        done = await Engine(ScriptedModel([]), store=store).answer("r3", {"call": "close_ticket"})
    finally:
        await store.close()
    assert (done.status, done.result) == ("completed", "closed")


async def test_resume_with_a_pick_answers_a_waiting_run(shared: Store) -> None:
    eng = Engine(ScriptedModel([pick("billing")]), store=shared)
    await eng.run(pf.triage, "T-4", run_id="r4")

    done = await eng.resume("r4", pick={"call": "escalate", "args": {"queue": "standard"}})

    assert done.result == "escalated to standard"


async def test_a_resume_without_an_answer_leaves_the_run_waiting(shared: Store) -> None:
    model = ScriptedModel([pick("billing")])
    eng = Engine(model, store=shared)
    await eng.run(pf.triage, "T-5", run_id="r5")

    again = await eng.resume("r5")

    assert again.status == "waiting"
    assert again.error is not None
    assert again.error.questions is not None
    assert len(again.error.questions) == 1
    assert len(model.requests) == 1  # the first decision was replayed, not asked again


# -- parallel branches ---------------------------------------------------------------------------


@pytest.mark.parametrize("order", [("legal", "billing"), ("billing", "legal")])
async def test_waiting_branches_are_answered_each_on_its_own(
    shared: Store, order: tuple[str, str]
) -> None:
    eng = Engine(ScriptedModel([]), store=shared)
    run = await eng.run(pf.two_people, "T-6", run_id="r6")
    assert run.status == "waiting"
    assert run.error is not None
    assert run.error.questions is not None
    assert sorted(q["name"] for q in run.error.questions) == ["billing", "legal"]

    with pytest.raises(ValueError, match="waits at 2 steps: say which one"):
        await eng.answer("r6", {"call": "close_ticket"})

    picks = {
        "legal": {"call": "close_ticket"},
        "billing": {"call": "escalate", "args": {"queue": "vip"}},
    }
    half = await eng.answer("r6", picks[order[0]], where=order[0])
    assert half.status == "waiting"
    assert half.error is not None
    assert half.error.questions is not None
    assert [q["name"] for q in half.error.questions] == [order[1]]

    done = await eng.answer("r6", picks[order[1]], where=order[1])
    assert (done.status, done.result) == ("completed", ["closed", "escalated to vip"])
    assert sorted(pf.DONE) == ["close", "escalate:vip"]


# -- approvals -----------------------------------------------------------------------------------


async def test_a_pick_under_the_limit_needs_no_approval(shared: Store) -> None:
    run = await Engine(ScriptedModel([pick("refund", amount=20)]), store=shared).run(
        pf.pay_back, "T-7"
    )
    assert (run.status, run.result) == ("completed", "refunded 20")


async def test_a_refund_over_the_limit_waits_and_is_approved(shared: Store) -> None:
    model = ScriptedModel([pick("refund", amount=900)])
    eng = Engine(model, store=shared)
    run = await eng.run(pf.pay_back, "T-8", run_id="r8")

    assert run.status == "waiting"
    assert run.error is not None
    assert run.error.questions is not None
    (question,) = run.error.questions
    assert question["kind"] == "approval"
    assert question["pick"] == {"call": "refund", "args": {"amount": 900}}
    assert pf.DONE == []

    done = await Engine(ScriptedModel([]), store=shared).answer("r8", approve=True)

    assert (done.status, done.result) == ("completed", "refunded 900")
    assert pf.DONE == ["refund:900"]
    assert len(model.requests) == 1


async def test_an_approval_can_edit_the_arguments_which_are_validated_again(
    shared: Store,
) -> None:
    eng = Engine(ScriptedModel([pick("refund", amount=900)]), store=shared)
    await eng.run(pf.pay_back, "T-9", run_id="r9")
    before = await stored_state(shared, "r9")

    with pytest.raises(DecisionError, match="unknown argument 'amont'"):
        await eng.answer("r9", edit={"amont": 400})
    with pytest.raises(DecisionError) as caught:
        await eng.answer("r9", edit={"amount": "lots"})
    assert caught.value.kind == "type_mismatch"
    assert await stored_state(shared, "r9") == before

    done = await eng.answer("r9", edit={"amount": 450, "reason": "goodwill"})
    assert (done.status, done.result) == ("completed", "refunded 450")
    assert pf.DONE == ["refund:450"]


async def test_a_rejected_pick_is_asked_again_with_the_reason(shared: Store) -> None:
    model = ScriptedModel([pick("refund", amount=900), pick("apologise")])
    eng = Engine(model, store=shared)
    await eng.run(pf.pay_back, "T-10", run_id="r10")

    done = await eng.answer("r10", reject="over the customer's total spend")

    assert (done.status, done.result) == ("completed", "apologised")
    assert pf.DONE == ["apologise"]
    assert len(model.requests) == 2
    told = model.requests[1].messages[-1].text
    assert "A person rejected your pick of 'refund'" in told
    assert "over the customer's total spend" in told


async def test_a_rejected_pick_can_settle_on_the_flows_fallback(shared: Store) -> None:
    model = ScriptedModel([pick("refund", amount=900)])
    eng = Engine(model, store=shared)
    await eng.run(pf.pay_back_or_apologise, "T-11", run_id="r11")

    done = await eng.answer("r11", reject="no")

    assert (done.status, done.result) == ("completed", "apologised")
    assert len(model.requests) == 1


async def test_an_approval_question_takes_no_pick_and_a_decision_takes_no_approval(
    shared: Store,
) -> None:
    eng = Engine(ScriptedModel([pick("refund", amount=900), pick("billing")]), store=shared)
    await eng.run(pf.pay_back, "T-12", run_id="r12")
    await eng.run(pf.triage, "T-13", run_id="r13")

    with pytest.raises(ValueError, match="for the approval of the model's pick"):
        await eng.answer("r12", {"call": "apologise"})
    with pytest.raises(ValueError, match="for a person's pick"):
        await eng.answer("r13", approve=True)
    with pytest.raises(ValueError, match="answer with one of"):
        await eng.answer("r12", approve=True, reject="both")


# -- deadlines -----------------------------------------------------------------------------------


async def test_a_passed_deadline_takes_the_fallback_option(shared: Store) -> None:
    clock = Clock()
    eng = Engine(ScriptedModel([]), store=shared, clock=clock)
    run = await eng.run(pf.timed, "T-14", run_id="r14")
    assert run.error is not None
    assert run.error.questions is not None
    assert run.error.questions[0]["deadline_at"] == clock.now + 3600

    clock.now += 3599
    assert await eng.resume_expired() == []
    assert (await eng.resume("r14")).status == "waiting"

    clock.now += 2
    (done,) = await eng.resume_expired()

    assert (done.status, done.result) == ("completed", "closed")
    picks = [r for r in await shared.load_journal("r14") if r.kind == "pick"]
    assert [p.actor for p in picks] == ["deadline"]


async def test_a_passed_deadline_can_hand_the_question_to_the_model(shared: Store) -> None:
    clock = Clock()
    model = ScriptedModel([pick("escalate", queue="standard")])
    eng = Engine(model, store=shared, clock=clock)
    await eng.run(pf.timed_to_model, "T-15", run_id="r15")
    assert model.requests == []

    clock.now += 61
    done = await eng.resume("r15")

    assert (done.status, done.result) == ("completed", "escalated to standard")
    assert len(model.requests) == 1


# -- the notification seam -----------------------------------------------------------------------


@pytest.mark.parametrize("flavour", ["sync", "async"])
async def test_on_waiting_is_told_of_each_run_that_starts_waiting(
    shared: Store, flavour: str
) -> None:
    told: list[Run] = []

    def sync(run: Run) -> None:
        told.append(run)

    async def async_(run: Run) -> None:
        told.append(run)

    eng = Engine(
        ScriptedModel([pick("billing")]),
        store=shared,
        on_waiting=sync if flavour == "sync" else async_,
    )
    await eng.run(pf.triage, "T-16", run_id="r16")
    await eng.answer("r16", {"call": "close_ticket"})

    assert [(r.run_id, r.status) for r in told] == [("r16", "waiting")]


async def test_a_failing_on_waiting_does_not_touch_the_run(shared: Store) -> None:
    def broken(run: Run) -> None:
        raise RuntimeError("chat is down")

    eng = Engine(ScriptedModel([pick("billing")]), store=shared, on_waiting=broken)
    run = await eng.run(pf.triage, "T-17")
    assert run.status == "waiting"


# -- outside a run, and bad declarations ---------------------------------------------------------


async def test_outside_a_run_a_human_decision_raises_its_question() -> None:
    rt = Runtime(model=ScriptedModel([]))
    with pytest.raises(WaitingForAnswer) as caught:
        await decision.make("Who?", ["ann", "bob"], runtime=rt, by="human")
    (question,) = caught.value.questions
    assert (question["prompt"], question["options"]) == ("Who?", ["ann", "bob"])


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"by": "robot"}, 'by must be "model" or "human"'),
        ({"by": "human", "deadline_s": 10}, "deadline_s= needs on_deadline="),
        ({"by": "human", "deadline_s": 10, "on_deadline": "carol"}, "'carol', which is not"),
        ({"by": "human", "deadline_s": 0, "on_deadline": "ann"}, "number of seconds > 0"),
        ({"deadline_s": 10, "on_deadline": "ann"}, 'for by="human" decisions'),
        ({"by": "human", "timeout_s": 5}, "deadline_s="),
        ({"on_reject": "carol"}, "on_reject names 'carol'"),
    ],
)
async def test_bad_declarations_are_refused_before_anyone_is_asked(
    kwargs: dict[str, Any], says: str
) -> None:
    model = ScriptedModel([])
    with pytest.raises(ValueError, match=says):
        await decision.make("Who?", ["ann", "bob"], runtime=Runtime(model=model), **kwargs)
    assert model.requests == []


def test_approve_takes_a_bool_or_a_predicate() -> None:
    from engine import agentic_function

    with pytest.raises(TypeError, match="approve= takes True"):
        agentic_function(approve="yes")  # type: ignore[call-overload]


async def test_only_a_waiting_run_can_be_answered(shared: Store) -> None:
    eng = Engine(ScriptedModel([pick("refund", amount=5)]), store=shared)
    await eng.run(pf.pay_back, "T-18", run_id="r18")

    with pytest.raises(ValueError, match="is completed, not waiting"):
        await eng.answer("r18", approve=True)
    with pytest.raises(RunNotFoundError):
        await eng.answer("nope", approve=True)


async def test_a_model_that_fails_after_the_deadline_suspends_the_run_where_a_pick_settles_it(
    shared: Store,
) -> None:
    clock = Clock()
    eng = Engine(ScriptedModel(["no idea", "still none"]), store=shared, clock=clock)
    await eng.run(pf.timed_to_model, "T-19", run_id="r19")
    clock.now += 61

    suspended = await eng.resume("r19")
    assert suspended.status == "suspended"
    assert suspended.error is not None
    assert suspended.error.where == "run/timed_to_model:0/decision:0"

    done = await eng.resume("r19", pick={"call": "close_ticket"})
    assert (done.status, done.result) == ("completed", "closed")
