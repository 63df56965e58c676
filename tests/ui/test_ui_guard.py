"""The inspector's guards, over HTTP without a browser: token, Host, origin, CSRF, headers."""

from __future__ import annotations

import urllib.parse
import urllib.request
from pathlib import Path

import anyio
import pytest
import ui_flows as flows
from ui_support import Server, csrf_of, post, start_server

from engine import Engine
from engine.models import ScriptedModel
from engine.store import SQLiteStore

TOKEN = "t-" + "k" * 30


@pytest.fixture
def suspended_path(store_path: Path) -> Path:
    async def body() -> None:
        async with SQLiteStore(store_path) as store:
            engine = Engine(model=ScriptedModel(["no", "none"]), store=store)
            await engine.run(flows.dispatch, "o1", run_id="s1")

    anyio.run(body)
    return store_path


def test_every_answer_carries_a_policy_forbidding_inline_scripts(server: Server) -> None:
    request = urllib.request.Request(server.url + "/")
    with urllib.request.urlopen(request, timeout=10) as answer:
        policy = answer.headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
        assert answer.headers["X-Frame-Options"] == "DENY"


def test_a_host_not_naming_this_machine_is_refused_when_bound_locally(server: Server) -> None:
    code, body = server.get("/", {"Host": "evil.example:8700"})
    assert code == 421
    assert "this machine only" in body
    assert server.get("/", {"Host": "localhost:1"})[0] == 200


def test_a_post_without_the_csrf_token_or_from_another_site_changes_nothing(
    suspended_path: Path,
) -> None:
    server = start_server(suspended_path)
    try:
        pick = {"call": "hold", "a.hold.reason": "x", "where": "run/dispatch:0/decision:0"}
        assert post(server, "/runs/s1/settle", pick)[0] == 403
        assert post(server, "/runs/s1/settle", {**pick, "csrf": "stale"})[0] == 403
        token = csrf_of(server)
        code, body = post(
            server, "/runs/s1/settle", {**pick, "csrf": token}, {"Origin": "http://evil.example"}
        )
        assert (code, "another site" in body) == (403, True)
        assert server.get("/runs/s1")[1].count("suspended") >= 1
        # The same form from the inspector's own page settles the run.
        code, body = post(server, "/runs/s1/settle", {**pick, "csrf": token})
        assert code == 200
        assert 'id="run-status">completed' in body
    finally:
        server.stop()


def test_beyond_localhost_every_request_needs_the_token(suspended_path: Path) -> None:
    server = start_server(suspended_path, host="0.0.0.0", token=TOKEN)
    try:
        for path in ("/", "/inbox", "/runs/s1", "/graph", "/static/ui.css", "/runs/table"):
            assert server.get(path)[0] == 401, path
        assert server.get("/", {"X-Engine-Token": TOKEN})[0] == 200
        assert server.get("/", {"Cookie": f"engine_ui_token={TOKEN}"})[0] == 200
        assert server.get("/", {"Authorization": "Bearer nope"})[0] == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        pick = {"call": "hold", "a.hold.reason": "x", "csrf": csrf_of(server, auth)}
        assert post(server, "/runs/s1/settle", pick)[0] == 401  # the CSRF token is not enough
    finally:
        server.stop()


def test_an_unknown_run_says_so(server: Server) -> None:
    code, body = server.get("/runs/nope")
    assert code == 404
    assert "no run 'nope'" in body
