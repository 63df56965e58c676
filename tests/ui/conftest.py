"""The inspector under test: a real server on a free port, and a headless Chromium.

The server runs in a thread of the test process (uvicorn, with its own event loop and its
own SQLiteStore on the test's file); the tests write runs through another store on the same
file, as a batch in another process would. The browser is Debian's ``chromium`` driven by
Playwright (no browser download); where neither can be had the browser tests skip saying
how to install them. Screenshots go to ``$ENGINE_UI_SCREENSHOTS`` (default
``tests/ui/screenshots``, ignored by git).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason='the inspector needs the ui extra: pip install -e ".[ui]"')

import uvicorn

from engine.store import SQLiteStore
from engine.ui import create_app

CHROMIUM = os.environ.get("ENGINE_UI_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(os.environ.get("ENGINE_UI_SCREENSHOTS", Path(__file__).parent / "screenshots"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A running inspector: where it listens and what it serves."""

    url: str
    path: Path
    token: str | None
    thread: threading.Thread
    server: uvicorn.Server

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        """GET a page with urllib (status, body); an error status is returned, not raised."""
        request = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_server(
    path: Path,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    model: Any = "simulated:seed=3",
) -> Server:
    """Start the inspector over the SQLite file ``path`` and wait until it answers."""
    port = free_port()
    app = create_app(
        SQLiteStore(path), model=model, token=token, local=host in ("127.0.0.1", "localhost")
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the inspector did not start")
        time.sleep(0.02)
    return Server(f"http://127.0.0.1:{port}", path, token, thread, server)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def server(store_path: Path) -> Iterator[Server]:
    SQLiteStore(store_path)  # the file exists before the server reads it
    running = start_server(store_path)
    yield running
    running.stop()


def _chromium_missing() -> str | None:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return (
            f"no Chromium at {CHROMIUM}: install Debian's package (apt-get install -y chromium) "
            "or point ENGINE_UI_CHROMIUM at one"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed: pip install -e '.[dev]'"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium for the session (skips, saying why, where none can be had)."""
    why = _chromium_missing()
    if why is not None:
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as play:
        chromium = play.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page; its console errors fail the test (a CSP refusal shows there)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: errors.append(str(e)))
    opened.console_errors = errors
    yield opened
    SHOTS.mkdir(parents=True, exist_ok=True)
    name = request.node.name.replace("/", "_")
    try:
        opened.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    finally:
        context.close()
