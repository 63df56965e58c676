"""A stored trace as a readable tree."""

from __future__ import annotations

import json

import support_flows as sf

from engine import Engine, Runtime, agentic_function, decision
from engine._observe._trace_view import render_trace, trace_lines
from engine.models import ScriptedModel
from engine.store import MemoryStore


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args} if args else {"call": call})


async def stored_trace(replies: list[str]) -> dict[str, object]:
    engine = Engine(model=ScriptedModel(replies), store=MemoryStore())
    run = await engine.run(sf.three_decisions, "t", run_id="r")
    trace = await engine.trace(run.run_id)
    assert trace is not None
    return trace


async def test_tree_shows_decisions_model_calls_and_steps() -> None:
    trace = await stored_trace(["hm", pick("billing"), pick("ship", item="box"), pick("close")])
    text = render_trace(trace)
    lines = text.splitlines()
    assert lines[0].startswith("run support_flows:three_decisions")
    assert lines[1].startswith("└─ three_decisions()")
    assert "decision [billing, tech] → billing in 2 attempt(s); failed attempts: no_action" in text
    assert "model call #0 scripted" in text
    assert "✗ no_action: 'hm'" in text
    assert "re-pick #1 scripted" in text
    assert "decision [ship, hold] → ship {'item': 'box'} in 1 attempt(s)" in text
    assert "step ship → shipped box" in text
    assert all(" ms" in line or " s" in line for line in lines)
    assert "├─ " in text
    assert "│  " in text


async def test_failed_decision_is_marked_with_its_attempts() -> None:
    trace = await stored_trace([pick("tech"), "nope", "still nope"])
    lines = trace_lines(trace)
    decision = next(line for line in lines if line.kind == "decision" and line.failed)
    assert decision.text.startswith("decision [ship, hold] ✗ DecisionError after 2 attempt(s)")
    assert "failed attempts: no_action, no_action" in decision.text
    assert [line.depth for line in lines][:3] == [0, 1, 2]


def test_unknown_kinds_and_replays_render() -> None:
    trace = {
        "nodes": [
            {"id": 0, "parent_id": None, "kind": "run", "name": "f", "status": "ok"},
            {
                "id": 1,
                "parent_id": 0,
                "kind": "tool_call",
                "name": "get_order",
                "status": "ok",
                "data": {"args": "{'order_id': 'A-1'}", "result": "{...}", "replayed": True},
            },
            {"id": 2, "parent_id": 0, "kind": "mystery", "name": "x", "status": "error"},
            {
                "id": 4,
                "parent_id": 0,
                "kind": "model_call",
                "name": "model_call",
                "key": "run/f:0/model_call:1",
                "status": "ok",
                "data": {"attempt": 0, "model": "m"},
                "usage": {"input_tokens": 3, "output_tokens": 4},
            },
            {
                "id": 3,
                "parent_id": 0,
                "kind": "retry",
                "name": "retry",
                "status": "ok",
                "data": {"attempt": 1, "layer": "transport", "kind": "RateLimitError"},
                "duration_s": 1.5,
            },
        ]
    }
    assert render_trace(trace).splitlines() == [
        "run f",
        "├─ tool get_order({'order_id': 'A-1'}) → {...} (replayed)",
        "├─ mystery x ✗ error",
        "├─ model call #1 m 3→4 tokens",
        "└─ retry #1 transport RateLimitError  1.50 s",
    ]


async def test_a_resumed_run_keeps_the_trace_of_its_earlier_execution() -> None:
    store = MemoryStore()
    first = Engine(model=ScriptedModel([pick("tech"), "nope", "still nope"]), store=store)
    await first.run(sf.three_decisions, "t", run_id="r")
    again = Engine(model=ScriptedModel([pick("hold"), pick("close")]), store=store)
    resumed = await again.resume("r")
    assert resumed.status == "completed"
    trace = await again.trace("r")
    assert trace is not None
    (earlier,) = trace["earlier"]
    failed = [n for n in earlier["nodes"] if n["kind"] == "repick"]
    assert failed  # the re-pick of the first execution is still there
    assert [n["status"] for n in earlier["nodes"] if n["kind"] == "run"] == ["suspended"]
    roots = [line for line in trace_lines(trace) if line.depth == 0]
    assert len(roots) == 2  # one tree per execution, the earlier one first
    assert roots[0].status == "suspended"
    assert roots[1].status == "ok"


async def test_a_replayed_decision_keeps_its_attempts_and_who_picked() -> None:
    store = MemoryStore()
    # The first decision takes a re-pick; the third one fails and the run suspends.
    first = Engine(
        model=ScriptedModel(["hm", pick("billing"), pick("hold"), "?", "??"]), store=store
    )
    await first.run(sf.three_decisions, "t", run_id="r")
    resumed = await Engine(model=ScriptedModel([]), store=store).resume("r", pick={"call": "close"})
    assert resumed.status == "completed"
    again = await first.trace("r")
    assert again is not None
    decisions = [n for n in again["nodes"] if n["kind"] == "decision"]
    assert [(n["data"]["attempts"], n["data"]["actor"]) for n in decisions] == [
        (2, "repick"),
        (1, "model"),
        (0, "human"),
    ]


@agentic_function
async def summarise_then_close(ticket: str, runtime: Runtime | None = None) -> str:
    assert runtime is not None
    summary: str = await runtime.exec(f"Summarise {ticket}.")
    close: str = await decision.make("Close?", ["close", "keep"])
    return f"{summary}/{close}"


async def test_a_replayed_model_call_adds_no_tokens_to_the_trace() -> None:
    store = MemoryStore()
    first = Engine(model=ScriptedModel(["a summary", "?", "??"]), store=store)
    await first.run(summarise_then_close, "t", run_id="r")
    resumed = await Engine(model=ScriptedModel([pick("close")]), store=store).resume("r")
    assert resumed.status == "completed"
    trace = await first.trace("r")
    assert trace is not None
    turn = next(n for n in trace["nodes"] if n["name"] == "turn")
    assert turn["data"]["replayed"] is True
    assert turn["usage"] == {}  # the reply came from the journal: no tokens were spent
    spent = sum(
        n["usage"].get("input_tokens", 0) + n["usage"].get("output_tokens", 0)
        for execution in [*trace["earlier"], trace]
        for n in execution["nodes"]
    )
    assert spent == resumed.usage.total_tokens


async def test_a_run_resumed_twice_draws_every_execution_oldest_first() -> None:
    store = MemoryStore()
    runs = Engine(model=ScriptedModel([pick("tech"), pick("hold"), "?", "??"]), store=store)
    await runs.run(sf.three_decisions, "t", run_id="r")
    await runs.resume("r", model=ScriptedModel(["no"] * 2))  # fails again: still suspended
    await runs.resume("r", pick={"call": "close"})
    trace = await runs.trace("r")
    assert trace is not None
    lines = trace_lines(trace)
    assert [line.status for line in lines if line.depth == 0] == ["suspended", "suspended", "ok"]
    stored = [*trace["earlier"], trace]
    assert len(lines) == sum(len(execution["nodes"]) for execution in stored)
    # One tree per execution, in order: the last decision failed twice, then was picked by hand.
    roots = [i for i, line in enumerate(lines) if line.depth == 0]
    trees = [lines[a:b] for a, b in zip(roots, [*roots[1:], len(lines)], strict=True)]
    closes = [
        next(ln.text for ln in tree if ln.text.startswith("decision [close")) for tree in trees
    ]
    assert ["✗ DecisionError" in text for text in closes] == [True, True, False]
    assert "→ close by hand" in closes[-1]


def test_an_older_or_hand_made_trace_still_renders() -> None:
    # Keys missing, data that is not a dict, a node without an id, one whose parent the
    # trace lacks (not drawn), and one whose id is its own parent's (drawn once).
    trace = {
        "earlier": [{"nodes": [{"id": 0, "kind": "run", "name": "f", "status": "suspended"}]}],
        "nodes": [
            {"id": 0, "kind": "run", "name": "f", "status": "ok", "data": None},
            {"id": 1, "parent_id": 0, "kind": "frame", "name": "f", "status": "ok"},
            {"parent_id": 1, "kind": "step", "name": "no_id", "status": "ok"},
            {"id": 1, "parent_id": 1, "kind": "step", "name": "loops", "status": "ok"},
            {"id": 7, "parent_id": 99, "kind": "step", "name": "orphan", "status": "ok"},
        ],
    }
    assert render_trace(trace).splitlines() == [
        "run f ✗ suspended",
        "run f",
        "└─ f()",
        "   ├─ step no_id",
        "   └─ step loops",
    ]
    assert render_trace({}) == ""
