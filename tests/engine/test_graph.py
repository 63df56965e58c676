"""The routing graph: decision points, picks, failures and routes over many stored runs."""

from __future__ import annotations

import json
from typing import Any

import support_flows as sf

from engine import Engine
from engine._graph import RoutingGraph
from engine.models import Request, ScriptedModel
from engine.store import MemoryStore


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args} if args else {"call": call})


async def graph_of(flow: Any, inputs: list[Any], replies: Any) -> RoutingGraph:
    store = MemoryStore()
    engine = Engine(model=ScriptedModel(replies), store=store)
    for item in inputs:
        await engine.run(flow, item)
    return await RoutingGraph.from_store(store)


def by_label(graph: RoutingGraph) -> dict[str, Any]:
    labels = graph.labels()
    return {labels[k]: p for k, p in graph.points.items()}


async def test_counts_visits_picks_attempts_and_routes() -> None:
    script = [
        *(pick("billing"), pick("ship", item="a"), pick("close")),
        *("no pick", pick("tech"), pick("hold"), pick("reopen")),
        *(pick("billing"), "?", "??"),
    ]
    graph = await graph_of(sf.three_decisions, ["t1", "t2", "t3"], script)
    assert graph.runs == 3
    assert graph.statuses == {"completed": 2, "suspended": 1}
    first, second, third = by_label(graph).values()
    assert list(by_label(graph)) == [
        "three_decisions #0",
        "three_decisions #1",
        "three_decisions #2",
    ]
    assert first.visits == 3
    assert first.options["billing"].picked == 2
    assert first.options["tech"].attempts == [2]
    assert first.options["tech"].repicked == 1
    assert second.errors == 1
    assert second.error_kinds == {"no_action": 1}
    assert second.error_rate == 1 / 3
    assert second.options["ship"].median_attempts == 1
    assert third.options["reopen"].picked == 1
    assert graph.starts == {first.key: 3}
    assert first.next[("billing", second.key)] == 2
    assert second.next[("DecisionError", "end:suspended")] == 1
    assert third.next[("close", "end:completed")] == 1


async def test_map_branches_fold_into_one_point_and_fan_out() -> None:
    def reply(request: Request) -> str:
        names = [c.name for c in request.choices or []]
        return pick("bad" if "Check b" in request.messages[-1].text else names[0])

    graph = await graph_of(sf.fan_out, [["a", "b", "c"], ["d"]], reply)
    check, close = by_label(graph).values()
    assert "*" in check.key
    assert check.visits == 4
    assert check.options["ok"].picked == 3
    assert check.options["bad"].picked == 1
    # Every branch starts the run (no decision before the fan-out) and joins at close.
    assert graph.starts == {check.key: 4}
    assert sum(n for (_, to), n in check.next.items() if to == close.key) == 4
    assert close.next == {("close", "end:completed"): 2}


async def test_fan_out_after_a_decision_reaches_every_branch() -> None:
    trace = {
        "nodes": [
            {"id": 0, "parent_id": None, "kind": "run", "name": "f", "key": "run"},
            {"id": 1, "parent_id": 0, "kind": "frame", "name": "f", "key": "run/f:0"},
            _decision(2, 1, "run/f:0/decision:0", "go"),
            {
                "id": 3,
                "parent_id": 1,
                "kind": "branch",
                "name": "gather",
                "key": "run/f:0/gather:0",
            },
            {"id": 4, "parent_id": 3, "kind": "branch", "name": "0", "key": "run/f:0/gather:0/0:0"},
            {"id": 5, "parent_id": 3, "kind": "branch", "name": "1", "key": "run/f:0/gather:0/1:0"},
            _decision(6, 5, "run/f:0/gather:0/1:0/decision:0", "b"),
            _decision(7, 4, "run/f:0/gather:0/0:0/decision:0", "a"),
            _decision(8, 1, "run/f:0/decision:1", "end"),
        ]
    }
    graph = RoutingGraph("f")
    graph.add(trace, "completed")
    go, branch, end = graph.points.values()
    assert go.next == {("go", branch.key): 2}
    assert branch.visits == 2
    assert branch.next == {("b", end.key): 1, ("a", end.key): 1}
    assert graph.starts == {go.key: 1}


def _decision(node_id: int, parent: int, key: str, picked: str) -> dict[str, Any]:
    return {
        "id": node_id,
        "parent_id": parent,
        "kind": "decision",
        "name": "decision",
        "key": key,
        "status": "ok",
        "data": {"options": [picked, "other"], "pick": picked, "attempts": 1},
    }


async def test_mermaid_shows_offered_picked_and_failed() -> None:
    script = [pick("billing"), pick("hold"), pick("close"), pick("billing"), "x", "y"]
    graph = await graph_of(sf.three_decisions, ["t1", "t2"], script)
    text = graph.to_mermaid()
    assert text.startswith("%% routing graph of every flow over 2 run(s)\nflowchart TD\n")
    assert '{{"three_decisions #0<br/>2 visit(s)"}}:::decision' in text
    assert '-->|"2 · 100% · 1 att"|' in text
    assert '("tech"):::unpicked' in text
    assert '-.->|"0 of 2"|' in text
    assert "DecisionError<br/>no_action 1" in text
    assert '-.->|"1 · 50.0%"|' in text
    assert 'end_completed(["completed · 1"]):::done' in text
    assert 'end_suspended(["suspended · 1"]):::stopped' in text
    assert text.endswith("\n")
    assert graph.to_mermaid(direction="LR").splitlines()[1] == "flowchart LR"


async def test_a_still_suspended_run_counts_its_failure_once() -> None:
    store = MemoryStore()
    engine = Engine(
        model=ScriptedModel([pick("tech"), pick("hold"), "?", "??", "!", "!!"]), store=store
    )
    await engine.run(sf.three_decisions, "t", run_id="r")
    await engine.resume("r")  # asked again, fails again: still suspended
    graph = await RoutingGraph.from_store(store)
    last = list(graph.points.values())[-1]
    assert (last.visits, last.errors) == (2, 2)
    assert last.next == {("DecisionError", "resumed"): 1, ("DecisionError", "end:suspended"): 1}


async def test_to_dict_is_json_and_labels_are_unique() -> None:
    graph = await graph_of(sf.three_decisions, ["t"], [pick("tech"), pick("hold"), pick("close")])
    data = json.loads(json.dumps(graph.to_dict()))
    assert data["runs"] == 1
    assert [p["label"] for p in data["points"]] == [
        "three_decisions #0",
        "three_decisions #1",
        "three_decisions #2",
    ]
    tech = next(o for o in data["points"][0]["options"] if o["name"] == "tech")
    assert tech == {
        "name": "tech",
        "offered": 1,
        "picked": 1,
        "median_attempts": 1,
        "repicked": 0,
        "by_human": 0,
    }


async def test_human_picks_are_counted_as_such() -> None:
    store = MemoryStore()
    engine = Engine(model=ScriptedModel([pick("tech"), pick("hold"), "?", "??"]), store=store)
    await engine.run(sf.three_decisions, "t", run_id="r")
    await engine.resume("r", pick={"call": "close"})
    graph = await RoutingGraph.from_store(store, "support_flows:three_decisions")
    last = list(graph.points.values())[-1]
    assert last.options["close"].by_human == 1
    # The failure that stopped the run is in the journal, not in the final trace.
    assert last.visits == 2
    assert last.errors == 1
    assert last.error_kinds == {"no_action": 1}
    assert last.next[("DecisionError", "resumed")] == 1
    text = graph.to_mermaid()
    assert "1 by hand" in text
    assert 'resumed(["resumed · 1"])' in text
    assert (await RoutingGraph.from_store(store, "nope:flow")).runs == 0
