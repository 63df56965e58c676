"""The routing graph: decision points, picks, failures and routes over many stored runs."""

from __future__ import annotations

import json
import re
from typing import Any

import support_flows as sf

import engine
from engine import DecisionError, Engine, Runtime, agentic_function, decision
from engine._observe._graph import RoutingGraph
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


@agentic_function
async def a_then_b(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Two decisions, one after the other."""
    return [
        await decision.make("A?", ["a1", "a2"]),
        await decision.make("B?", ["b1", "b2"]),
    ]


@agentic_function
async def caught_then_b(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """A decision whose failure the flow catches and moves past, then another."""
    try:
        first: str = await decision.make("A?", ["a1", "a2"])
    except DecisionError:
        first = "none"
    return [first, await decision.make("B?", ["b1", "b2"])]


@agentic_function
async def severity_and_team(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Two different decisions in the branches of one gather."""
    return await engine.gather(
        decision.make("Severity?", ["low", "high"]), decision.make("Team?", ["db", "net"])
    )


@agentic_function
async def one_menu(options: list[str], runtime: Runtime | None = None) -> str:
    """One decision offering the given options."""
    picked: str = await decision.make("Pick.", options)
    return picked


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
    assert second.next_failed[("DecisionError", "end:suspended")] == 1
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
            _decision(6, 5, "run/f:0/gather:0/1:0/decision:0", "b", ["a", "b"]),
            _decision(7, 4, "run/f:0/gather:0/0:0/decision:0", "a", ["a", "b"]),
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


def _decision(
    node_id: int, parent: int, key: str, picked: str, options: list[str] | None = None
) -> dict[str, Any]:
    return {
        "id": node_id,
        "parent_id": parent,
        "kind": "decision",
        "name": "decision",
        "key": key,
        "status": "ok",
        "data": {"options": options or [picked, "other"], "pick": picked, "attempts": 1},
    }


async def test_mermaid_shows_offered_picked_and_failed() -> None:
    script = [pick("billing"), pick("hold"), pick("close"), pick("billing"), "x", "y"]
    graph = await graph_of(sf.three_decisions, ["t1", "t2"], script)
    text = graph.to_mermaid()
    assert text.startswith("%% routing graph of every flow over 2 run(s)\nflowchart TD\n")
    assert '{{"three_decisions #35;0<br/>2 visit(s)"}}:::decision' in text
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
    assert last.next_failed == {
        ("DecisionError", "resumed"): 1,
        ("DecisionError", "end:suspended"): 1,
    }


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
    assert last.next_failed[("DecisionError", "resumed")] == 1
    text = graph.to_mermaid()
    assert "1 by hand" in text
    assert 'resumed(["resumed · 1"])' in text
    assert (await RoutingGraph.from_store(store, "nope:flow")).runs == 0


async def test_each_resumed_failure_keeps_its_own_kind() -> None:
    store = MemoryStore()
    runs = Engine(model=ScriptedModel([pick("zzz")] * 2), store=store)
    first = await runs.run(a_then_b, "t", run_id="r")
    assert first.error is not None
    assert first.error.kind == "unknown_call"
    again = await runs.resume("r", model=ScriptedModel(["x", "x"]))
    assert again.error is not None
    assert again.error.kind == "no_action"
    graph = await RoutingGraph.from_store(store)
    (point,) = graph.points.values()
    assert (point.visits, point.errors) == (2, 2)
    assert point.error_kinds == {"unknown_call": 1, "no_action": 1}
    assert point.error_attempts == [2, 2]
    assert point.next_failed == {
        ("DecisionError", "end:suspended"): 1,
        ("DecisionError", "resumed"): 1,
    }


async def test_every_visit_offers_its_options() -> None:
    store = MemoryStore()
    runs = Engine(model=ScriptedModel(["?", "??", pick("b1")]), store=store)
    await runs.run(a_then_b, "t", run_id="r")
    await runs.resume("r", pick={"call": "a2"})
    graph = await RoutingGraph.from_store(store)
    first, second = graph.points.values()
    assert first.visits == 2
    assert {o.name: o.offered for o in first.options.values()} == {"a1": 2, "a2": 2}
    assert {o.name: o.offered for o in second.options.values()} == {"b1": 1, "b2": 1}
    assert first.options["a2"].by_human == 1


async def test_a_caught_failure_replayed_after_a_resume_keeps_its_kind() -> None:
    store = MemoryStore()
    runs = Engine(model=ScriptedModel(["x"] * 4), store=store)
    await runs.run(caught_then_b, "t", run_id="r")  # A fails and is caught, B suspends
    done = await runs.resume("r", pick={"call": "b1"})
    assert done.status == "completed"
    graph = await RoutingGraph.from_store(store)
    first, second = graph.points.values()
    assert (first.visits, first.errors) == (1, 1)
    assert first.error_kinds == {"no_action": 1}
    assert first.error_attempts == [2]
    assert first.next_failed == {("DecisionError", second.key): 1}
    assert (second.visits, second.errors) == (2, 1)
    assert {o.name: o.offered for o in second.options.values()} == {"b1": 2, "b2": 2}
    trace = await runs.trace("r")
    assert trace is not None
    replayed = next(n for n in trace["nodes"] if n["kind"] == "decision")
    assert replayed["data"]["replayed"] is True  # the caught failure, replayed as it was
    assert (replayed["data"]["attempts"], replayed["data"]["failures"]) == (2, ["no_action"])


async def test_different_decisions_in_one_gather_are_points_of_their_own() -> None:
    def reply(request: Request) -> str:
        return pick(request.choices[-1].name if request.choices else "?")

    graph = await graph_of(severity_and_team, ["t1", "t2"], reply)
    assert len(graph.points) == 2
    severity, team = sorted(graph.points.values(), key=lambda p: "low" not in p.options)
    assert list(severity.options) == ["low", "high"]
    assert list(team.options) == ["db", "net"]
    assert (severity.visits, team.visits) == (2, 2)
    assert severity.options["high"].picked == 2
    assert team.next == {("net", "end:completed"): 2}
    labels = graph.labels()
    assert len(set(labels.values())) == 2
    assert labels[severity.key] == "severity_and_team #0 [low, high]"
    assert graph.starts == {severity.key: 2, team.key: 2}


async def test_an_option_named_decision_error_is_not_the_failure() -> None:
    store = MemoryStore()
    runs = Engine(model=ScriptedModel([pick("DecisionError"), "?", "??"]), store=store)
    await runs.run(one_menu, ["DecisionError", "fine"])
    await runs.run(one_menu, ["DecisionError", "fine"])
    graph = await RoutingGraph.from_store(store)
    (point,) = graph.points.values()
    assert point.next == {("DecisionError", "end:completed"): 1}
    assert point.next_failed == {("DecisionError", "end:suspended"): 1}
    text = graph.to_mermaid()
    assert '    p0_o0("DecisionError")' in text
    assert "    p0_o0 -->|1| end_completed" in text
    assert "    p0_err -.->|1| end_suspended" in text
    data = graph.to_dict()["points"][0]["next"]
    assert {(n["outcome"], n["failed"]) for n in data} == {
        ("DecisionError", False),
        ("DecisionError", True),
    }


async def test_mermaid_shows_any_option_name_as_written() -> None:
    names = ["a#b", "<b>bold</b>", 'say "hi"', "x&amp;y", "`code`", "#35;"]
    graph = await graph_of(one_menu, [names], [pick("<b>bold</b>")])
    text = graph.to_mermaid()
    assert '("a#35;b"):::unpicked' in text
    assert '    p0_o1("#60;b#62;bold#60;/b#62;")' in text
    assert '("say #quot;hi#quot;"):::unpicked' in text
    assert '("x#38;amp;y"):::unpicked' in text
    assert '("#96;code#96;"):::unpicked' in text
    assert '("#35;35;"):::unpicked' in text
    # The only HTML is the engine's own line breaks.
    assert set(re.findall(r"<[^>]*>", text)) == {"<br/>"}
    # Every entity code is one Mermaid reads: #name; or #number;.
    assert all(
        re.fullmatch(r"#(\w+);", m) for m in re.findall(r"#\w*;?", text.split("classDef")[0])
    )


async def test_a_replayed_pick_keeps_who_made_it() -> None:
    store = MemoryStore()
    runs = Engine(model=ScriptedModel(["?", "??", "!", "!!"]), store=store)
    await runs.run(a_then_b, "t", run_id="r")
    await runs.resume("r", pick={"call": "a2"})  # A by hand, then B fails
    done = await runs.resume("r", pick={"call": "b1"})  # A replayed, B by hand
    assert done.status == "completed"
    graph = await RoutingGraph.from_store(store)
    first, second = graph.points.values()
    assert first.options["a2"].by_human == 1
    assert first.options["a2"].actors == ["human"]
    assert second.options["b1"].by_human == 1
    assert (first.visits, second.visits) == (2, 2)
    assert first.error_kinds == second.error_kinds == {"no_action": 1}


def test_an_older_trace_without_status_or_data_counts_an_unfinished_visit() -> None:
    trace = {
        "nodes": [
            {"id": 0, "kind": "run", "name": "f", "key": "run"},
            {"id": 1, "parent_id": 0, "kind": "frame", "name": "f", "key": "run/f:0"},
            {"id": 2, "parent_id": 1, "kind": "decision", "key": "run/f:0/decision:0"},
        ]
    }
    graph = RoutingGraph("f")
    graph.add(trace, "failed")
    (point,) = graph.points.values()
    assert (point.key, point.frame, point.visits) == ("f:0/decision:0", "f", 1)
    assert point.other == {"unfinished": 1}
    assert point.next_failed == {("unfinished", "end:failed"): 1}
    assert graph.starts == {point.key: 1}
