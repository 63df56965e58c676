"""What the inspector's forms do, over HTTP: approvals, a resume on another model, resume all."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import ui_flows as flows
from ui_support import Server, csrf_of, post

from engine import Engine
from engine.models import ScriptedModel
from engine.store import Run, SQLiteStore

HEAVY = json.dumps({"call": "ship_heavy", "args": {"priority": "low", "weight": 20}})


def write(path: Path, run_id: str, flow: object, *replies: str) -> Run:
    async def body() -> Run:
        async with SQLiteStore(path) as store:
            engine = Engine(model=ScriptedModel(list(replies)), store=store)
            return await engine.run(flow, "o1", run_id=run_id)  # type: ignore[arg-type]

    return anyio.run(body)


def read(path: Path, run_id: str) -> Run:
    async def body() -> Run:
        async with SQLiteStore(path) as store:
            run = await store.get_run(run_id)
            assert run is not None
            return run

    return anyio.run(body)


def test_an_approval_edited_in_its_form_goes_on_with_the_changed_arguments(
    server: Server,
) -> None:
    run = write(server.path, "a1", flows.heavy, HEAVY)
    assert run.status == "waiting"
    body = server.get("/inbox")[1]
    assert "The model picked <code>ship_heavy</code>" in body
    assert 'name="a.ship_heavy.weight" value="20"' in body  # the proposed arguments, filled in

    where = run.error.questions[0]["where"]  # type: ignore[union-attr,index]
    sent = {"csrf": csrf_of(server), "where": where, "approval": "edit"}
    code, page = post(server, "/runs/a1/settle", {**sent, "a.ship_heavy.priority": '"high"'})
    assert code == 422  # the edit needs every argument: weight is missing, nothing changes
    assert 'data-for="a.ship_heavy.weight"' in page
    assert read(server.path, "a1").status == "waiting"

    fields = {"a.ship_heavy.priority": '"high"', "a.ship_heavy.weight": "5"}
    code, page = post(server, "/runs/a1/settle", {**sent, **fields})
    assert code == 200
    assert (read(server.path, "a1").status, read(server.path, "a1").result) == (
        "completed",
        "shipped high 5kg",
    )


def test_a_rejected_approval_is_told_to_the_run(server: Server) -> None:
    write(server.path, "a2", flows.heavy, HEAVY, '{"call": "hold", "args": {"reason": "no"}}')
    where = read(server.path, "a2").error.questions[0]["where"]  # type: ignore[union-attr,index]
    sent = {"csrf": csrf_of(server), "where": where, "approval": "reject", "reason": "too heavy"}
    post(server, "/runs/a2/settle", sent)
    assert read(server.path, "a2").status != "waiting"


def test_a_suspended_run_resumes_on_another_model(server: Server) -> None:
    write(server.path, "m1", flows.dispatch, "no", "none")
    sent = {"csrf": csrf_of(server), "model": "simulated:seed=5"}
    code, page = post(server, "/runs/m1/resume", sent)
    assert code == 200
    assert read(server.path, "m1").status == "completed"
    write(server.path, "m2", flows.dispatch, "no", "none")
    code, page = post(server, "/runs/m2/resume", {**sent, "model": "nosuch:model"})
    assert (code, "nosuch" in page) == (422, True)
    assert read(server.path, "m2").status == "suspended"


def test_resume_all_resumes_every_suspended_run(server: Server) -> None:
    for i in range(3):
        write(server.path, f"r{i}", flows.dispatch, "no", "none")
    code, page = post(server, "/resume-all", {"csrf": csrf_of(server), "model": "simulated:seed=5"})
    assert code == 200
    assert "resuming 3 suspended run(s)" in page
    deadline = time.monotonic() + 20
    unsettled = ("suspended", "queued", "running")
    while any(read(server.path, f"r{i}").status in unsettled for i in range(3)):
        assert time.monotonic() < deadline, "resume all did not resume every run"
        time.sleep(0.1)
    assert {read(server.path, f"r{i}").status for i in range(3)} == {"completed"}
