"""A run suspended at a decision keeps the decision's menu and prompt for a person."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import people_flows as pf

from engine import Engine, Runtime, agentic_function, decision
from engine._decision import example_pick
from engine.models import ScriptedModel
from engine.store import MemoryStore, SQLiteStore


async def classify(severity: Literal["low", "high"], note: str = "") -> str:
    """Classify the post."""
    return f"classified {severity}"


@agentic_function
async def moderate(post: str, runtime: Runtime | None = None) -> str:
    picked: str = await decision.make(
        f"Post: {post}\nClassify it.", {"classify": classify, "keep": "KEPT"}, name="classify"
    )
    return picked


@agentic_function
async def review(post: str, runtime: Runtime | None = None) -> str:
    assert runtime is not None
    picked: str = await runtime.exec(f"Review: {post}", choices={"classify": classify})
    return picked


async def test_a_suspended_run_stores_the_menu_and_the_prompt(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    engine = Engine(model=ScriptedModel(["no idea", "still none"]), store=SQLiteStore(path))
    run = await engine.run(moderate, "buy now", run_id="r1")
    assert run.status == "suspended"
    # Read back by another engine on the same file, as an operator's process would.
    stored = await Engine(model=ScriptedModel([]), store=SQLiteStore(path)).get("r1")
    assert stored.error is not None
    assert stored.error.prompt == "Post: buy now\nClassify it."
    menu = stored.error.menu
    assert menu is not None
    assert [(o["name"], o["kind"]) for o in menu] == [("classify", "function"), ("keep", "value")]
    assert menu[0]["args"][0] == {
        "name": "severity",
        "type": "'low' | 'high'",
        "required": True,
        "enum": ["low", "high"],
        "description": None,
        "example": "low",
    }
    # Its example pick settles the run.
    resumed = await Engine(model=ScriptedModel([]), store=SQLiteStore(path)).resume(
        "r1", pick=example_pick(menu[0]), flow=moderate
    )
    assert (resumed.status, resumed.result) == ("completed", "classified low")


async def test_an_exec_decision_stores_its_content_as_the_prompt() -> None:
    engine = Engine(model=ScriptedModel(["thinking", "still thinking"]), store=MemoryStore())
    run = await engine.run(review, "spam?")
    assert run.error is not None
    assert run.error.prompt == "Review: spam?"
    assert run.error.menu is not None
    assert run.error.menu[0]["name"] == "classify"


async def test_a_run_failed_otherwise_has_no_menu() -> None:
    @agentic_function
    async def broken(post: str, runtime: Runtime | None = None) -> str:
        raise RuntimeError("boom")

    run = await Engine(model=ScriptedModel([]), store=MemoryStore()).run(broken, "x")
    assert run.error is not None
    assert (run.error.menu, run.error.prompt) == (None, None)


async def test_a_model_failing_a_human_step_past_its_deadline_stores_its_menu() -> None:
    now = [1_000_000.0]
    model = ScriptedModel(["no idea", "still none"])
    engine = Engine(model, store=MemoryStore(), clock=lambda: now[0])
    await engine.run(pf.timed_to_model, "T-1", run_id="d1")
    now[0] += 61
    suspended = await engine.resume("d1")
    assert suspended.status == "suspended"
    assert suspended.error is not None
    assert suspended.error.prompt == "Escalate T-1?"
    menu = suspended.error.menu
    assert menu is not None
    assert [o["name"] for o in menu] == ["escalate", "close_ticket"]
    done = await engine.resume("d1", pick=example_pick(menu[1]))
    assert (done.status, done.result) == ("completed", "closed")
