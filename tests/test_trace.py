"""docs/decisions.md §12: what a decision leaves in the trace."""

from __future__ import annotations

import json

import pytest

from engine import DecisionError, Node, Runtime, Trace, agentic_function, decision, render_trace
from engine._base import StoredNode
from engine.models import ScriptedModel

OPTIONS: dict[str, object] = {"approve": "APPROVED", "reject": "REJECTED"}


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


def kinds(trace: Trace) -> list[tuple[str, str | None]]:
    """Each node's kind with its parent's kind, in opening order."""
    by_id = {n.id: n for n in trace.nodes}
    return [
        (n.kind, by_id[n.parent_id].kind if n.parent_id is not None else None) for n in trace.nodes
    ]


def only(trace: Trace, kind: str) -> Node:
    [node] = trace.find(kind)  # type: ignore[arg-type]
    return node


async def test_trace_decision_node_holds_options_attempts_and_pick() -> None:
    runtime = Runtime(ScriptedModel([pick("reject")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime)

    assert kinds(runtime.trace) == [("decision", None), ("model_call", "decision")]
    node = only(runtime.trace, "decision")
    assert node.status == "ok"
    assert node.data["options"] == ["approve", "reject"]
    assert node.data["attempts"] == 1
    assert node.data["failures"] == []
    assert node.data["pick"] == "reject"


async def test_trace_decision_records_the_pick_arguments() -> None:
    async def book(city: str, nights: int) -> str:
        return city

    runtime = Runtime(ScriptedModel([pick("book", city="Oslo", nights=2)]))

    await decision.make("Pick one.", [book], runtime=runtime)

    assert "Oslo" in str(only(runtime.trace, "decision").data["args"])


async def test_trace_repicks_are_child_nodes_with_their_failure_kind() -> None:
    runtime = Runtime(ScriptedModel(["prose", '{"call": "merge"}', pick("approve")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime, max_retries=2)

    assert kinds(runtime.trace) == [
        ("decision", None),
        ("model_call", "decision"),
        ("repick", "decision"),
        ("repick", "decision"),
    ]
    node = only(runtime.trace, "decision")
    assert node.data["failures"] == ["no_action", "unknown_call"]
    assert node.data["attempts"] == 3
    calls = runtime.trace.children(node)
    assert [c.data.get("failure") for c in calls] == ["no_action", "unknown_call", None]


async def test_trace_decision_records_each_attempt_reply_head() -> None:
    long_reply = "x" * 5000
    runtime = Runtime(ScriptedModel(["prose", long_reply, pick("approve")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime, max_retries=2)

    replies = only(runtime.trace, "decision").data["replies"]
    assert replies[0] == "prose"
    assert long_reply.startswith(replies[1])
    assert len(replies[1]) < len(long_reply)
    assert replies[2] == pick("approve")


async def test_trace_failed_decision_is_closed_with_an_error() -> None:
    runtime = Runtime(ScriptedModel(["a", "b"]))

    with pytest.raises(DecisionError):
        await decision.make("Pick one.", OPTIONS, runtime=runtime)

    node = only(runtime.trace, "decision")
    assert node.status == "error"
    assert node.data["error"] == "DecisionError"
    assert node.data["failures"] == ["no_action", "no_action"]
    assert node.data["attempts"] == 2
    assert node.data["replies"] == ["a", "b"]


async def test_trace_model_calls_carry_usage_and_latency() -> None:
    runtime = Runtime(ScriptedModel(["prose " * 20, pick("approve")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime)

    calls = [n for n in runtime.trace.nodes if n.kind in {"model_call", "repick"}]
    assert len(calls) == 2
    for node in calls:
        assert node.usage["input_tokens"] > 0
        assert node.usage["output_tokens"] > 0
        assert node.duration_s is not None
        assert node.status == "ok"
        assert node.data["model"] == "scripted"


async def test_trace_exec_text_turn_is_a_model_call() -> None:
    runtime = Runtime(ScriptedModel(["hello there"]))

    await runtime.exec("Greet.")

    node = only(runtime.trace, "model_call")
    assert node.parent_id is None
    assert node.usage["output_tokens"] > 0


async def test_trace_picked_function_is_a_step_under_the_decision() -> None:
    @agentic_function
    async def refund(amount: int) -> int:
        return amount

    runtime = Runtime(ScriptedModel([pick("refund", amount=5)]))

    await decision.make("Pick one.", [refund], runtime=runtime)

    assert kinds(runtime.trace) == [
        ("decision", None),
        ("model_call", "decision"),
        ("step", "decision"),
        ("frame", "step"),
    ]
    step = only(runtime.trace, "step")
    assert (step.name, step.status, step.data["result"]) == ("refund", "ok", 5)
    assert only(runtime.trace, "frame").name == "refund"


async def test_trace_failing_step_is_closed_with_an_error() -> None:
    async def explode() -> None:
        raise OSError("disk")

    runtime = Runtime(ScriptedModel([pick("explode")]))

    with pytest.raises(OSError, match="disk"):
        await decision.make("Pick one.", [explode], runtime=runtime)

    assert only(runtime.trace, "decision").status == "ok"
    step = only(runtime.trace, "step")
    assert (step.status, step.data["error"]) == ("error", "OSError")


async def test_trace_agentic_function_is_a_frame_around_its_decisions() -> None:
    @agentic_function
    async def route(runtime: Runtime | None = None) -> tuple[object, object]:
        first = await decision.make("Pick one.", OPTIONS)
        second = await decision.make("Pick again.", OPTIONS)
        return first, second

    runtime = Runtime(ScriptedModel([pick("approve"), pick("reject")]))

    assert await route(runtime=runtime) == ("APPROVED", "REJECTED")

    frame = only(runtime.trace, "frame")
    assert (frame.name, frame.parent_id, frame.status) == ("route", None, "ok")
    decisions = runtime.trace.find("decision")
    assert [d.parent_id for d in decisions] == [frame.id, frame.id]
    assert [d.key for d in decisions] == ["route/decision:0", "route/decision:1"]


async def test_trace_frame_of_a_function_without_runtime_lands_in_the_runtime_trace() -> None:
    runtime = Runtime(ScriptedModel([pick("approve")]))

    @agentic_function
    async def route(rt: Runtime) -> object:
        return await decision.make("Pick one.", OPTIONS, runtime=rt)

    await route(runtime)

    # With no runtime to hold the frame, the decision is a root of the runtime's trace
    # instead of a child of a frame nobody can reach.
    assert kinds(runtime.trace) == [("decision", None), ("model_call", "decision")]


async def test_trace_keys_are_deterministic_paths() -> None:
    runtime = Runtime(ScriptedModel(["prose", pick("approve")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime)

    assert [n.key for n in runtime.trace.nodes] == [
        "decision",
        "decision/model_call:0",
        "decision/repick:0",
    ]


async def test_trace_to_json_is_valid_json_with_every_node() -> None:
    runtime = Runtime(ScriptedModel(["x" * 1000, pick("approve")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime)

    exported = json.loads(runtime.trace.to_json())
    nodes = exported["nodes"]
    assert [n["kind"] for n in nodes] == ["decision", "model_call", "repick"]
    assert [n["parent_id"] for n in nodes] == [None, nodes[0]["id"], nodes[0]["id"]]
    assert nodes[0]["data"]["options"] == ["approve", "reject"]
    assert nodes[0]["data"]["failures"] == ["no_action"]
    assert len(nodes[1]["data"]["reply"]) < 1000


async def test_trace_renders_as_a_tree_of_its_nesting() -> None:
    runtime = Runtime(ScriptedModel([pick("approve")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime)

    lines = render_trace(runtime.trace.to_dict()).splitlines()
    assert lines[0].startswith("decision [approve, reject] → approve in 1 attempt(s)")
    assert lines[1].startswith("└─ model call #0 scripted")


async def test_trace_export_writes_every_key_of_a_stored_node() -> None:
    runtime = Runtime(ScriptedModel([pick("approve")]))

    await decision.make("Pick one.", OPTIONS, runtime=runtime)

    exported = runtime.trace.to_dict()
    assert set(exported) == {"nodes"}  # no earlier executions outside a resumed run
    decision_node, call = exported["nodes"]
    assert set(decision_node) == set(StoredNode.__annotations__)
    assert call["parent_id"] == decision_node["id"]
    assert decision_node["ended_at"] == decision_node["started_at"] + decision_node["duration_s"]


async def test_trace_each_runtime_keeps_its_own_trace() -> None:
    one, two = Runtime(ScriptedModel([pick("approve")])), Runtime(ScriptedModel([pick("reject")]))

    await decision.make("Pick one.", OPTIONS, runtime=one)
    await decision.make("Pick one.", OPTIONS, runtime=two)

    assert only(one.trace, "decision").data["pick"] == "approve"
    assert only(two.trace, "decision").data["pick"] == "reject"


def test_trace_export_keeps_short_json_arguments_as_json() -> None:
    trace = Trace()
    node = trace.open("decision", "decision", parent=None)
    node.close("ok", args={"item": "box", "n": [1, 2]}, blob={"text": "x" * 500}, odd={1: {2}})
    data = json.loads(trace.to_json())["nodes"][0]["data"]
    assert data["args"] == {"item": "box", "n": [1, 2]}
    assert data["blob"].startswith('{"text": "xxx')
    assert data["blob"].endswith("…")
    assert data["odd"] == "{1: {2}}"  # not JSON: its repr
