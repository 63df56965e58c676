"""The ticket-routing flow: classify, per-item checks, route, investigate, act."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import flows.ticket_routing as tr
from engine import DecisionError, Engine, Runtime
from engine.models import Request, Response, ScriptedModel, ToolCall
from engine.store import MemoryStore
from flows._backoffice import LEDGER

Reply = str | Callable[[Request], str]


@pytest.fixture(autouse=True)
def _clean_ledger() -> Iterator[None]:
    LEDGER.clear()
    yield
    LEDGER.clear()


def pick(call: str, **args: Any) -> str:
    return "Done.\n" + json.dumps({"call": call, "args": args})


def menu_model(answers: dict[str, Reply]) -> ScriptedModel:
    """Answer each decision by its menu, named by its first option (a fake model)."""

    def reply(request: Request) -> str:
        assert request.choices is not None
        answer = answers[request.choices[0].name]
        return answer(request) if callable(answer) else answer

    return ScriptedModel(reply)


def ticket(**overrides: Any) -> tr.Ticket:
    data: dict[str, Any] = {
        "id": "T-1",
        "customer_id": "C-7",
        "subject": "Broken mug",
        "body": "My order A-10042 arrived, one mug is broken.",
        "order_id": "A-10042",
        "line_items": [
            {"sku": "MUG-1", "name": "Mug", "price": 12.0},
            {"sku": "TEA-2", "name": "Tea", "quantity": 2, "price": 4.5},
        ],
    }
    return tr.Ticket.model_validate({**data, **overrides})


def verdict_by_sku(request: Request) -> str:
    text = request.messages[-1].text
    return pick("damaged" if "MUG-1" in text else "ok")


ORDER_TICKET = {
    "billing": pick("shipping"),
    "ok": verdict_by_sku,
    "look_up_order": pick("look_up_order", order_id="A-10042", topic="broken mug"),
    "refund": pick(
        "refund", order_id="A-10042", amount=12.0, reason="damaged", customer_id="C-EVIL"
    ),
}


async def test_order_ticket_checks_items_concurrently_and_refunds() -> None:
    model = menu_model(ORDER_TICKET)
    outcome = await tr.route_ticket(ticket(), runtime=Runtime(model=model))
    assert outcome.category == "shipping"
    assert outcome.items == [
        tr.ItemCheck(sku="MUG-1", verdict="damaged"),
        tr.ItemCheck(sku="TEA-2", verdict="ok"),
    ]
    assert outcome.action.kind == "refund"
    assert outcome.action.detail == {"order_id": "A-10042", "amount": 12.0, "reason": "damaged"}
    assert model.calls == 5  # classify, two items, route, investigate


async def test_hidden_customer_id_comes_from_context_never_from_the_model() -> None:
    model = menu_model(ORDER_TICKET)
    await tr.route_ticket(ticket(), runtime=Runtime(model=model))
    assert LEDGER == [
        {
            "kind": "refund",
            "customer_id": "C-7",
            "order_id": "A-10042",
            "amount": 12.0,
            "reason": "damaged",
        }
    ]
    for request in model.requests:
        assert "customer_id" not in request.messages[-1].text
        for choice in request.choices or []:
            assert "customer_id" not in choice.parameters.get("properties", {})


async def test_investigation_without_native_tools_puts_the_facts_in_the_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tr, "NATIVE_TOOLS", False)
    model = menu_model(ORDER_TICKET)
    await tr.route_ticket(ticket(), runtime=Runtime(model=model))
    investigation = model.requests[-1]
    text = investigation.messages[-1].text
    assert "A-10042" in text
    assert "Refunds and returns" in text  # the help-center article on broken items
    assert [c.name for c in investigation.choices or []] == [
        "refund",
        "escalate",
        "ask_customer",
        "close",
    ]


async def test_account_ticket_skips_item_checks_and_closes() -> None:
    model = menu_model(
        {
            "billing": pick("account"),
            "look_up_order": pick("close", resolution="answered", note="see help center"),
        }
    )
    outcome = await tr.route_ticket(
        ticket(subject="Email", body="How do I change my email?", line_items=[], order_id=None),
        runtime=Runtime(model=model),
    )
    assert outcome.category == "account"
    assert outcome.items == []
    assert outcome.action == tr.Action(
        kind="close", detail={"resolution": "answered", "note": "see help center"}
    )
    assert model.calls == 2


async def test_escalate_and_ask_customer_record_their_side_effects() -> None:
    for answer, kind in [
        (pick("escalate", summary="angry", queue="vip", priority="urgent"), "escalation"),
        (pick("ask_customer", question="Which order?"), "question"),
    ]:
        LEDGER.clear()
        model = menu_model({"billing": pick("feedback"), "look_up_order": answer})
        outcome = await tr.route_ticket(ticket(line_items=[]), runtime=Runtime(model=model))
        assert [e["kind"] for e in LEDGER] == [kind]
        assert LEDGER[0]["customer_id"] == "C-7"
        assert outcome.action.kind in {"escalate", "ask_customer"}


@pytest.mark.parametrize(
    ("amount", "kind"),
    [(5000, "type_mismatch"), (0, "type_mismatch"), ("12", "type_mismatch")],
    ids=["above-limit", "zero", "string"],
)
async def test_refund_amount_is_schema_validated(amount: object, kind: str) -> None:
    bad = pick("refund", order_id="A-1", amount=amount, reason="damaged")
    model = menu_model({"billing": pick("billing"), "look_up_order": bad})
    eng = Engine(model=model, store=MemoryStore())
    run = await eng.run(tr.route_ticket, ticket(line_items=[]), run_id="t")
    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.options == ["look_up_order", "refund", "escalate", "ask_customer", "close"]
    assert LEDGER == []


async def test_suspended_ticket_resumes_with_a_human_pick_without_asking_again() -> None:
    store = MemoryStore()
    first = menu_model({**ORDER_TICKET, "refund": "I am not sure what to do here."})
    run = await Engine(model=first, store=store).run(tr.route_ticket, ticket(), run_id="t")
    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "no_action"
    assert run.error.options == ["refund", "escalate", "ask_customer", "close"]

    second = ScriptedModel([])
    human = {"call": "escalate", "args": {"summary": "broken mug", "queue": "logistics"}}
    resumed = await Engine(model=second, store=store).resume("t", pick=human)
    assert resumed.status == "completed"
    assert second.calls == 0
    assert resumed.result["action"]["kind"] == "escalate"
    assert resumed.result["items"] == [
        {"sku": "MUG-1", "verdict": "damaged"},
        {"sku": "TEA-2", "verdict": "ok"},
    ]
    assert [e["kind"] for e in LEDGER] == ["escalation"]


class ToolsThenPick:
    """A model that calls both lookup tools in one turn, then picks a refund."""

    name = "tools-then-pick"

    def __init__(self) -> None:
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Response:
        self.requests.append(request)
        if request.choices and request.choices[0].name == "look_up_order":
            return Response(text=pick("look_up_order", order_id="A-10042", topic="broken mug"))
        if request.choices and request.choices[0].name == "billing":
            return Response(text=pick("returns"))
        if request.choices and request.choices[0].name == "ok":
            return Response(text=pick("damaged"))
        if request.messages[-1].role != "tool":
            calls = [
                ToolCall(id="c1", name="get_order", arguments={"order_id": "A-10042"}),
                ToolCall(id="c2", name="search_help_center", arguments={"query": "broken"}),
            ]
            return Response(tool_calls=calls, finish_reason="tool_calls")
        return Response(text=pick("refund", order_id="A-10042", amount=12.0, reason="damaged"))


async def test_investigation_with_native_tools_reads_then_picks() -> None:
    model = ToolsThenPick()
    runtime = Runtime(model=model)
    outcome = await tr.route_ticket(ticket(line_items=[]), runtime=runtime)
    assert outcome.action.kind == "refund"
    turn = model.requests[-2]
    assert [t.name for t in turn.tools or []] == ["get_order", "search_help_center"]
    assert "Order: " not in turn.messages[-1].text  # the facts come from tools, not the prompt
    results = [m for m in model.requests[-1].messages if m.role == "tool"]
    assert len(results) == 2
    assert "A-10042" in results[0].text
    assert "Refunds and returns" in results[1].text
    assert [n.name for n in runtime.trace.find("tool_call")] == ["get_order", "search_help_center"]
    assert LEDGER[0]["customer_id"] == "C-7"


# -- a refund above the limit waits for a person ------------------------------------------------

BIG_REFUND = {
    **ORDER_TICKET,
    "refund": pick("refund", order_id="A-10042", amount=900.0, reason="damaged"),
}


async def waiting_refund(store: MemoryStore) -> None:
    run = await Engine(model=menu_model(BIG_REFUND), store=store).run(
        tr.route_ticket, ticket(), run_id="t"
    )
    assert run.status == "waiting"
    assert run.error is not None
    (question,) = run.error.questions or []
    assert question["kind"] == "approval"
    assert question["pick"]["call"] == "refund"
    assert question["pick"]["args"]["amount"] == 900.0
    assert "customer_id" not in question["pick"]["args"]  # hidden: never shown, never set
    assert LEDGER == []  # nothing refunded before a person approved


async def test_a_refund_under_the_limit_runs_without_approval() -> None:
    run = await Engine(model=menu_model(ORDER_TICKET), store=MemoryStore()).run(
        tr.route_ticket, ticket(), run_id="t"
    )
    assert run.status == "completed"
    assert [e["amount"] for e in LEDGER] == [12.0]


async def test_a_refund_above_the_limit_waits_and_an_approval_runs_it() -> None:
    store = MemoryStore()
    await waiting_refund(store)

    later = ScriptedModel([])
    done = await Engine(model=later, store=store).answer("t", approve=True)

    assert done.status == "completed"
    assert later.calls == 0  # nothing before the approval is asked again
    assert done.result["action"]["detail"]["amount"] == 900.0
    assert [(e["kind"], e["amount"], e["customer_id"]) for e in LEDGER] == [
        ("refund", 900.0, "C-7")
    ]


async def test_an_edited_refund_is_validated_again_and_runs_as_edited() -> None:
    store = MemoryStore()
    await waiting_refund(store)
    engine = Engine(model=ScriptedModel([]), store=store)
    edit = {"order_id": "A-10042", "amount": 400.0, "reason": "damaged"}

    with pytest.raises(DecisionError, match="amount"):
        await engine.answer("t", edit={**edit, "amount": 5000})
    with pytest.raises(DecisionError, match="customer_id"):  # a person sets no hidden field
        await engine.answer("t", edit={**edit, "customer_id": "C-EVIL"})
    done = await engine.answer("t", edit=edit)

    assert done.status == "completed"
    assert [(e["amount"], e["customer_id"]) for e in LEDGER] == [(400.0, "C-7")]


async def test_a_rejected_refund_asks_the_model_again_with_the_reason() -> None:
    store = MemoryStore()
    await waiting_refund(store)
    seen: list[str] = []

    def again(request: Request) -> str:
        seen.append(request.messages[-1].text)
        return pick("close", resolution="no_action_needed")

    done = await Engine(model=ScriptedModel(again), store=store).answer(
        "t", reject="refunds above 500 go through the store credit desk"
    )

    assert done.status == "completed"
    assert done.result["action"]["kind"] == "close"
    assert "refunds above 500 go through the store credit desk" in seen[0]
    assert LEDGER == []


@pytest.mark.parametrize(
    ("limit", "status"), [("inf", "completed"), ("1000", "completed"), ("800", "waiting")]
)
async def test_the_environment_sets_the_approval_limit(
    monkeypatch: pytest.MonkeyPatch, limit: str, status: str
) -> None:
    monkeypatch.setenv("TICKET_REFUND_APPROVAL_LIMIT", limit)
    run = await Engine(model=menu_model(BIG_REFUND), store=MemoryStore()).run(
        tr.route_ticket, ticket(), run_id="t"
    )
    assert run.status == status
