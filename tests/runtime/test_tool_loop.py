"""The native tool loop of runtime.exec(tools=...): schemas, validation, concurrency, picks."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest

from engine import (
    DecisionError,
    Engine,
    MaxIterationsError,
    Runtime,
    agentic_function,
    decision,
)
from engine.models import Message, Request, Response, SimulatedModel, ToolCall
from engine.store import MemoryStore

Reply = Response | str | Callable[[Request], Response | str]


class ToolScript:
    """A model answering from a script of replies: text, or responses with tool calls."""

    name = "tool-script"

    def __init__(self, replies: Sequence[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Response:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if callable(reply):
            reply = reply(request)
        if isinstance(reply, str):
            return Response(text=reply, finish_reason="stop")
        return reply


def calls(*items: tuple[str, dict[str, Any] | str]) -> Response:
    """A reply that calls tools: ``(name, arguments)`` pairs, ids ``c0``, ``c1``, ..."""
    return Response(
        tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(items)],
        finish_reason="tool_calls",
    )


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


def tool_messages(request: Request) -> list[Message]:
    return [m for m in request.messages if m.role == "tool"]


# -- tools --------------------------------------------------------------------------------------

LOG: list[str] = []


async def get_order(order_id: int) -> dict[str, Any]:
    """Look up an order by its id."""
    LOG.append(f"order:{order_id}")
    return {"order_id": order_id, "total": 40.0}


def get_customer(name: str, vip_only: bool = False) -> str:
    """Find a customer by name (a plain def: it runs on a worker thread)."""
    LOG.append(f"customer:{name}")
    return f"{name} is a customer since 2019"


@agentic_function(input={"account": {"hidden": True}})
async def notes(topic: str, account: str = "main", runtime: Runtime | None = None) -> str:
    """Read the notes on a topic."""
    assert isinstance(runtime, Runtime)
    return f"notes on {topic} from {account}"


async def broken(reason: str) -> str:
    """A tool that fails."""
    raise RuntimeError(f"backend down: {reason}")


async def refund(amount: float) -> str:
    """Refund the customer."""
    LOG.append(f"refund:{amount}")
    return f"refunded {amount}"


async def close() -> str:
    """Close the ticket."""
    return "closed"


@pytest.fixture(autouse=True)
def _clear_log() -> None:
    LOG.clear()


# -- the loop ----------------------------------------------------------------------------------


async def test_tool_loop_two_tools_in_one_turn_then_a_pick() -> None:
    model = ToolScript(
        [
            calls(("get_order", {"order_id": 7}), ("get_customer", {"name": "ann"})),
            pick("refund", amount=40.0),
        ]
    )
    runtime = Runtime(model)

    result = await runtime.exec(
        "Handle the ticket.", tools=[get_order, get_customer], choices=[refund, close]
    )

    assert result == "refunded 40.0"
    assert sorted(LOG) == ["customer:ann", "order:7", "refund:40.0"]
    second = model.requests[1]
    results = tool_messages(second)
    assert [(m.tool_call_id, m.name) for m in results] == [
        ("c0", "get_order"),
        ("c1", "get_customer"),
    ]
    assert json.loads(results[0].text) == {"order_id": 7, "total": 40.0}
    assert results[1].text == "ann is a customer since 2019"
    assistant = [m for m in second.messages if m.role == "assistant"]
    assert [c.name for c in assistant[0].tool_calls] == ["get_order", "get_customer"]
    nodes = runtime.trace.find("tool_call")
    assert [(n.name, n.status) for n in nodes] == [("get_order", "ok"), ("get_customer", "ok")]


async def test_tool_loop_runs_the_tools_of_one_reply_concurrently() -> None:
    first_started = anyio.Event()
    second_started = anyio.Event()

    async def first() -> str:
        """Wait for the second tool."""
        first_started.set()
        await second_started.wait()
        return "one"

    async def second() -> str:
        """Wait for the first tool."""
        second_started.set()
        await first_started.wait()
        return "two"

    model = ToolScript([calls(("first", {}), ("second", {})), "both done"])

    with anyio.fail_after(5):  # run one after the other, they would wait for ever
        text = await Runtime(model).exec("Go.", tools=[first, second])

    assert text == "both done"
    assert [m.text for m in tool_messages(model.requests[1])] == ["one", "two"]


async def test_tool_loop_schemas_come_from_the_parameter_specs() -> None:
    model = ToolScript(["nothing to do"])

    await Runtime(model).exec("Go.", tools=[get_customer, notes])

    specs = {t.name: t for t in model.requests[0].tools or []}
    customer = specs["get_customer"].parameters
    assert customer["required"] == ["name"]
    assert customer["properties"]["vip_only"] == {"anyOf": [{"type": "boolean"}, {"type": "null"}]}
    assert specs["get_customer"].description.startswith("Find a customer by name")
    assert set(specs["notes"].parameters["properties"]) == {"topic"}  # hidden, runtime out


async def test_tool_loop_agentic_tool_gets_the_runtime_and_hidden_context() -> None:
    model = ToolScript([calls(("notes", {"topic": "refunds", "account": "evil"})), "ok"])

    await Runtime(model).exec("Go.", tools=[notes], context={"account": "vip"})

    assert tool_messages(model.requests[1])[0].text == "notes on refunds from vip"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        pytest.param(("get_order", {"order_id": "seven"}), "error: type_mismatch", id="bad-type"),
        pytest.param(("get_order", {}), "error: missing_required", id="missing"),
        pytest.param(("get_order", "{not json"), "error: bad_args", id="bad-json"),
        pytest.param(("delete_all", {}), "error: unknown_call", id="unknown-tool"),
        pytest.param(("broken", {"reason": "x"}), "error: RuntimeError: backend down", id="raises"),
    ],
)
async def test_tool_loop_errors_go_back_to_the_model(
    call: tuple[str, dict[str, Any] | str], expected: str
) -> None:
    model = ToolScript([calls(call), "recovered"])

    text = await Runtime(model).exec("Go.", tools=[get_order, broken])

    assert text == "recovered"
    assert tool_messages(model.requests[1])[0].text.startswith(expected)
    assert LOG == []


async def test_tool_loop_max_iterations_caps_the_model_calls() -> None:
    model = ToolScript([calls(("get_order", {"order_id": i})) for i in range(10)])

    with pytest.raises(MaxIterationsError, match="max_iterations=3"):
        await Runtime(model).exec("Go.", tools=[get_order], max_iterations=3)

    assert len(model.requests) == 3
    assert LOG == ["order:0", "order:1"]  # the last reply's tool calls never ran


async def test_tool_loop_bad_max_iterations_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="max_iterations"):
        await Runtime(ToolScript([])).exec("Go.", tools=[get_order], max_iterations=0)


@pytest.mark.parametrize(
    "tools",
    [pytest.param(["get_order"], id="string"), pytest.param([{"name": "x"}], id="dict")],
)
async def test_tool_loop_tools_must_be_functions(tools: list[object]) -> None:
    with pytest.raises(TypeError, match=r"tools\[0\] must be a function"):
        await Runtime(ToolScript([])).exec("Go.", tools=tools)


async def test_tool_loop_option_function_is_never_also_a_tool() -> None:
    model = ToolScript(
        [
            lambda req: calls(("refund", {"amount": 1.0})),  # refused: not a tool here
            pick("refund", amount=2.0),
        ]
    )

    result = await Runtime(model).exec("Go.", tools=[get_order, refund], choices=[refund, close])

    assert [t.name for t in model.requests[0].tools or []] == ["get_order"]
    assert tool_messages(model.requests[1])[0].text.startswith("error: unknown_call")
    assert result == "refunded 2.0"
    assert LOG == ["refund:2.0"]  # the pick ran once; the tool call never did


async def test_tool_loop_only_option_functions_as_tools_offers_no_tools() -> None:
    model = ToolScript([pick("close")])

    assert await Runtime(model).exec("Go.", tools=[close], choices=[refund, close]) == "closed"
    assert model.requests[0].tools is None


async def test_tool_loop_tool_and_other_option_with_one_name_is_an_error() -> None:
    async def refund(amount: float) -> str:  # another function named like the option
        return "other"

    with pytest.raises(ValueError, match="different functions with one name"):
        await Runtime(ToolScript([])).exec(
            "Go.", tools=[refund], choices={"refund": globals()["refund"]}
        )


async def test_tool_loop_repick_continues_the_conversation_with_tool_results() -> None:
    model = ToolScript([calls(("get_order", {"order_id": 1})), "I think a refund.", pick("close")])
    events: list[str] = []

    result = await Runtime(model).exec(
        "Go.",
        tools=[get_order],
        choices=[refund, close],
        on_retry=lambda e: events.append(f"{e.layer}:{e.kind}"),
    )

    assert result == "closed"
    roles = [m.role for m in model.requests[2].messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert events == ["parse:no_action"]


async def test_tool_loop_decision_that_never_picks_raises_decision_error() -> None:
    model = ToolScript([calls(("get_order", {"order_id": 1})), "hmm", "still hmm"])

    with pytest.raises(DecisionError, match="no_action"):
        await Runtime(model).exec("Go.", tools=[get_order], choices=[refund, close])


async def test_tool_loop_with_simulated_model_tools_then_pick() -> None:
    model = SimulatedModel(3, tool_rate=1.0)

    result = await Runtime(model).exec("Go.", tools=[get_order], choices=[refund, close])

    assert result in ("closed",) or result.startswith("refunded")
    assert any(entry.startswith("order:") for entry in LOG)


# -- journaled runs ----------------------------------------------------------------------------


@agentic_function
async def tool_flow(ticket: str, runtime: Runtime | None = None) -> dict[str, Any]:
    """Look the ticket up with a tool, pick, then confirm."""
    assert runtime is not None
    first = await runtime.exec(f"Ticket {ticket}.", tools=[get_order], choices=[refund, close])
    confirm = await decision.make("Confirm? Pick one.", ["yes", "no"], runtime=runtime)
    return {"first": first, "confirm": confirm}


async def test_tool_loop_tool_results_replay_on_resume() -> None:
    store = MemoryStore()
    model = ToolScript([calls(("get_order", {"order_id": 9})), pick("close"), "?", "??"])
    run = await Engine(model=model, store=store).run(tool_flow, "t1", run_id="r1")
    assert run.status == "suspended"
    assert LOG == ["order:9"]

    resumed = await Engine(model=ToolScript([]), store=store).resume("r1", pick={"call": "yes"})

    assert resumed.status == "completed"
    assert resumed.result == {"first": "closed", "confirm": "yes"}
    assert LOG == ["order:9"]  # replayed from the journal, not run again
    await store.close()
