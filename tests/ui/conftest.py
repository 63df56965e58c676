"""The inspector under test: a real server on a free port, and a headless Chromium.

The server runs in a thread of the test process (see ``ui_support``); the browser is
Debian's ``chromium`` driven by Playwright, with no browser download. Where neither can be
had the browser tests skip saying how to install them. Screenshots go to
``$ENGINE_UI_SCREENSHOTS`` (default ``tests/ui/screenshots``, ignored by git).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason='the inspector needs the ui extra: pip install -e ".[ui]"')

from ui_support import CHROMIUM, SHOTS, Server, chromium_missing, start_server

from engine.store import SQLiteStore


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def server(store_path: Path) -> Iterator[Server]:
    SQLiteStore(store_path)  # the file exists before the server reads it
    running = start_server(store_path)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium for a module's tests (skips, saying why, where none can be had).

    Module-scoped, not session-scoped: Playwright's sync API keeps an event loop running on
    the test thread while it is open, and the other modules' tests start event loops there.
    """
    why = chromium_missing()
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
