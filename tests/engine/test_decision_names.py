"""Named decisions (``name="classify"``) in the trace tree, the routing graph and its Mermaid."""

from __future__ import annotations

import json
import re
from typing import Any

import people_flows as pf

import engine
from engine import Engine, Runtime, agentic_function, decision
from engine._observe import RoutingGraph, render_trace
from engine.models import ScriptedModel
from engine.store import MemoryStore


def pick(call: str) -> str:
    return json.dumps({"call": call})


@agentic_function
async def moderate(post: str, runtime: Runtime | None = None) -> list[str]:
    """Two named decisions, one after the other."""
    return [
        await decision.make("Classify?", ["spam", "ham"], name="classify"),
        await decision.make("Route?", ["keep", "remove"], name="route"),
    ]


@agentic_function
async def half_named(post: str, runtime: Runtime | None = None) -> list[str]:
    """A named decision, an unnamed one, and one name given twice."""
    return [
        await decision.make("A?", ["a1", "a2"], name="check"),
        await decision.make("B?", ["b1", "b2"]),
        await decision.make("C?", ["c1", "c2"], name="check"),
    ]


@agentic_function
async def branches(post: str, runtime: Runtime | None = None) -> list[str]:
    """One name in two branches of a gather, with other options."""
    return await engine.gather(
        decision.make("Severity?", ["low", "high"], name="rate"),
        decision.make("Team?", ["db", "net"], name="rate"),
    )


async def stored(flow: Any, replies: list[str], runs: int = 1) -> MemoryStore:
    store = MemoryStore()
    runner = Engine(model=ScriptedModel(replies), store=store)
    for i in range(runs):
        await runner.run(flow, f"post {i}")
    return store


async def test_names_label_the_graph_as_frame_slash_name() -> None:
    store = await stored(moderate, [pick("spam"), pick("keep"), pick("ham"), pick("remove")], 2)
    graph = await RoutingGraph.from_store(store)
    labels = graph.labels()
    assert sorted(labels.values()) == ["moderate/classify", "moderate/route"]
    points = {p["label"]: p for p in graph.to_dict()["points"]}
    assert points["moderate/classify"]["name"] == "classify"
    assert points["moderate/classify"]["visits"] == 2
    # The name never changes a point's key: the journal key holds no name.
    assert all("classify" not in key and "route" not in key for key in graph.points)


async def test_unnamed_and_twice_named_decisions_stay_apart() -> None:
    store = await stored(half_named, [pick("a1"), pick("b1"), pick("c1")])
    graph = await RoutingGraph.from_store(store)
    assert sorted(graph.labels().values()) == [
        "half_named",
        "half_named/check #0",
        "half_named/check #2",
    ]


async def test_one_name_in_gather_branches_adds_the_options() -> None:
    store = await stored(branches, [pick("low"), pick("db")])
    graph = await RoutingGraph.from_store(store)
    assert sorted(graph.labels().values()) == [
        "branches/rate [db, net]",
        "branches/rate [low, high]",
    ]


async def test_mermaid_draws_the_names() -> None:
    store = await stored(moderate, [pick("spam"), pick("keep")])
    text = (await RoutingGraph.from_store(store)).to_mermaid()
    assert 'p0{{"moderate/classify<br/>1 visit(s)"}}:::decision' in text
    assert 'p1{{"moderate/route<br/>1 visit(s)"}}:::decision' in text


async def test_trace_tree_shows_the_name_of_a_decision() -> None:
    store = await stored(half_named, [pick("a1"), pick("b1"), "no", "still no"])
    (run,) = await store.list_runs()
    trace = await store.load_trace(run.run_id)
    assert trace is not None
    lines = [re.sub(r"  [\d.]+ m?s$", "", line) for line in render_trace(trace).splitlines()]
    assert [line for line in lines if "─ decision" in line] == [
        "   ├─ decision check [a1, a2] → a1 in 1 attempt(s)",
        "   ├─ decision [b1, b2] → b1 in 1 attempt(s)",
        "   └─ decision check [c1, c2] ✗ DecisionError after 2 attempt(s); failed attempts: "
        "no_action, no_action",
    ]


async def test_trace_tree_shows_steps_waiting_for_a_person() -> None:
    store = await stored(pf.two_people, [])
    approval = await stored(pf.pay_back, ['{"call": "refund", "args": {"amount": 900}}'])
    lines = []
    for kept in (store, approval):
        (run,) = await kept.list_runs()
        trace = await kept.load_trace(run.run_id)
        assert trace is not None
        lines += [re.sub(r"  [\d.]+ m?s$", "", line) for line in render_trace(trace).splitlines()]
    assert [line for line in lines if "⏸" in line and "decision" in line] == [
        "      │  └─ decision legal [escalate, close_ticket] ⏸ waiting for a person's pick",
        "         └─ decision billing [escalate, close_ticket] ⏸ waiting for a person's pick",
        "   └─ decision settle [refund, apologise] ⏸ waiting for a person's approval of the"
        " model's pick",
    ]
    assert "✗" not in "\n".join(lines)
    assert lines[0] == "run people_flows:two_people ⏸ waiting"
