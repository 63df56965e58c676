"""The inspector in a real browser: headless Chromium driving the pages as a person would.

Each test writes runs through an engine on the test's SQLite file (the way a batch in
another process would) and looks at them through a server on that file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import ui_flows as flows
from ui_support import Server, start_server

from engine import Engine
from engine.models import ScriptedModel
from engine.store import Run, SQLiteStore

pytestmark = pytest.mark.usefixtures("browser")

SHIP = json.dumps({"call": "ship", "args": {"priority": "low", "weight": 2}})


def seed(path: Path, body: Callable[[SQLiteStore], Awaitable[Any]]) -> Any:
    """Run ``body`` with a store of its own on ``path`` (another writer than the server).

    In a thread of its own: Playwright's sync API holds an event loop on the test's thread.
    """
    found: list[Any] = []
    failed: list[BaseException] = []

    async def main() -> None:
        async with SQLiteStore(path) as store:
            found.append(await body(store))

    def work() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:
            failed.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    if failed:
        raise failed[0]
    return found[0]


def suspended(path: Path, run_id: str, order: str = "o1", *replies: str) -> Run:
    """A ``dispatch`` run stopped at its decision: the model's replies held no pick."""

    async def body(store: SQLiteStore) -> Run:
        model = ScriptedModel(list(replies) or ["no idea", "still none"])
        return await Engine(model=model, store=store).run(flows.dispatch, order, run_id=run_id)

    run: Run = seed(path, body)
    assert run.status == "suspended"
    return run


def stored(path: Path, run_id: str) -> tuple[Run, int]:
    """The stored run and the length of its journal."""

    async def body(store: SQLiteStore) -> tuple[Run, int]:
        run = await store.get_run(run_id)
        assert run is not None
        return run, len(await store.load_journal(run_id))

    found: tuple[Run, int] = seed(path, body)
    return found


def test_the_runs_page_lists_a_batch_as_it_runs(server: Server, page: Any) -> None:
    page.goto(server.url + "/")
    assert page.locator("[data-count=total]").inner_text() == "0"
    total = 40

    def batch() -> None:
        async def body(store: SQLiteStore) -> None:
            engine = Engine(model="simulated:seed=2,latency=0.25-0.45", store=store)
            orders = [f"order-{i:02d}" for i in range(total)]
            await engine.run_many(flows.quick, orders, concurrency=4, run_id=lambda o: o)

        seed(server.path, body)

    worker = threading.Thread(target=batch)
    worker.start()
    try:
        # The page is never reloaded: its table refreshes itself while the batch runs.
        page.wait_for_function(
            "() => { const n = s => +document.querySelector(`[data-count=${s}]`).textContent;"
            f" return n('total') > 0 && n('completed') < {total}; }}",
            timeout=15_000,
        )
        page.screenshot(path=str(_shot("runs_page_while_running")))
        page.wait_for_function(
            "() => { const n = s => +document.querySelector(`[data-count=${s}]`).textContent;"
            f" return n('total') === {total} && n('running') + n('queued') === 0; }}",
            timeout=30_000,
        )
    finally:
        worker.join()
    page.wait_for_selector("tr[data-run=order-39]")
    assert page.locator("table.runs tbody tr").count() == total
    assert page.console_errors == []


def test_a_run_page_shows_its_tree_and_earlier_executions(server: Server, page: Any) -> None:
    suspended(server.path, "r1")

    async def resume(store: SQLiteStore) -> Run:
        pick = {"call": "ship", "args": {"priority": "low", "weight": 2}}
        return await Engine(model=ScriptedModel([]), store=store).resume("r1", pick=pick)

    assert seed(server.path, resume).status == "completed"

    page.goto(server.url + "/runs/r1")
    latest = page.locator(".execution.latest ul.tree li")
    assert latest.count() >= 3
    tree = page.locator(".execution.latest").inner_text()
    assert "run ui_flows:dispatch" in tree
    assert "decision dispatch [ship, hold] → ship" in tree
    assert page.locator("details.execution.earlier").count() == 1
    assert page.locator("#run-status").inner_text() == "completed"
    assert "shipped low 2kg" in page.locator("#result").inner_text()
    assert page.console_errors == []


def test_the_graph_renders_as_svg(server: Server, page: Any) -> None:
    async def body(store: SQLiteStore) -> None:
        engine = Engine(model="simulated:seed=4", store=store)
        await engine.run_many(flows.quick, ["a", "b", "c"])

    seed(server.path, body)

    page.goto(server.url + "/graph?flow=ui_flows:quick")
    svg = page.wait_for_selector("#graph svg", timeout=20_000)
    assert svg is not None
    assert "fast" in (page.locator("#graph svg").text_content() or "")
    assert page.console_errors == []


def test_a_suspended_run_settled_through_its_form_completes(server: Server, page: Any) -> None:
    suspended(server.path, "s1")

    page.goto(server.url + "/inbox")
    card = page.locator(".settle-card[data-run=s1]")
    card.locator("input[name=call][value=ship]").check()
    card.locator("select[name='a.ship.priority']").select_option(label="high")
    card.locator("input[name='a.ship.weight']").fill("5")
    card.locator("input[name='a.ship.to.city']").fill("Oslo")
    card.locator("form.settle button[type=submit]").click()

    page.wait_for_url(server.url + "/runs/s1")
    assert page.locator("#run-status").inner_text() == "completed"
    assert "shipped high 5kg to Oslo floor 0" in page.locator("#result").inner_text()
    run, _ = stored(server.path, "s1")
    assert (run.status, run.result) == ("completed", "shipped high 5kg to Oslo floor 0")


def test_an_invalid_pick_shows_its_error_and_leaves_the_run_as_it_was(
    server: Server, page: Any
) -> None:
    suspended(server.path, "s2")
    before = stored(server.path, "s2")

    page.goto(server.url + "/runs/s2")
    card = page.locator(".settle-card[data-run=s2]")
    card.locator("input[name=call][value=ship]").check()
    card.locator("select[name='a.ship.priority']").select_option(label="low")
    card.locator("input[name='a.ship.weight']").fill("99")  # its bound is 30
    card.locator("form.settle button[type=submit]").click()

    error = page.locator(".field-error[data-for='a.ship.weight']")
    error.wait_for()
    assert "less than or equal to 30" in error.inner_text()
    # What was typed stays in the form, and nothing changed in the store.
    assert page.locator("input[name='a.ship.weight']").input_value() == "99"
    assert stored(server.path, "s2") == before


def test_a_waiting_run_is_answered_through_its_form(server: Server, page: Any) -> None:
    async def body(store: SQLiteStore) -> Run:
        return await Engine(model=ScriptedModel([]), store=store).run(
            flows.ask_person, "o9", run_id="w1"
        )

    assert seed(server.path, body).status == "waiting"

    page.goto(server.url + "/inbox")
    card = page.locator(".settle-card[data-run=w1]")
    card.locator("input[name=call][value=hold]").check()
    card.locator("form.settle button[type=submit]").click()  # reason left out
    page.locator(".field-error[data-for='a.hold.reason']").wait_for()
    assert stored(server.path, "w1")[0].status == "waiting"

    card = page.locator(".settle-card[data-run=w1]")
    card.locator("input[name=call][value=hold]").check()
    card.locator("input[name='a.hold.reason']").fill("out of stock")
    card.locator("form.settle button[type=submit]").click()
    page.wait_for_url(server.url + "/runs/w1")
    assert page.locator("#run-status").inner_text() == "completed"
    assert stored(server.path, "w1")[0].result == "held: out of stock"


HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror='window.__pwned = 2'>"


def test_a_hostile_reply_renders_as_text(server: Server, page: Any) -> None:
    suspended(server.path, "h1", "<b id=bold>order</b>", HOSTILE, HOSTILE)

    for path in ("/runs/h1", "/inbox", "/?q=h1"):
        page.goto(server.url + path)
        assert page.evaluate("() => window.__pwned") is None
        assert page.locator("#bold").count() == 0
    page.goto(server.url + "/runs/h1")
    replies = page.locator("pre.reply")
    assert replies.first.inner_text() == HOSTILE
    assert "<b id=bold>order</b>" in page.locator("pre.json").first.inner_text()


def test_a_request_without_the_token_is_refused_beyond_localhost(
    store_path: Path, page: Any
) -> None:
    SQLiteStore(store_path)
    suspended(store_path, "t1")
    running = start_server(store_path, host="0.0.0.0", token="tok-" + "x" * 20)
    try:
        answer = page.goto(running.url + "/")
        assert answer.status == 401
        assert "needs its token" in page.content()
        # The printed link sets a cookie and drops the token from the address.
        page.goto(running.url + "/inbox?token=tok-" + "x" * 20)
        assert page.url == running.url + "/inbox"
        assert page.locator(".settle-card[data-run=t1]").count() == 1
        assert page.goto(running.url + "/runs/t1").status == 200
        assert running.get("/runs/t1")[0] == 401
        assert running.get("/runs/t1", {"Authorization": "Bearer tok-" + "x" * 20})[0] == 200
        assert running.get("/?token=wrong")[0] == 401
    finally:
        running.stop()


def _shot(name: str) -> Path:
    from ui_support import SHOTS

    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}.png"
