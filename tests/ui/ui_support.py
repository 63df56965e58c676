"""What the inspector's tests share: a real server on a free port, the browser's whereabouts.

The server runs in a thread of the test process (uvicorn, with its own event loop and its
own SQLiteStore on the test's file); the tests write runs through another store on the same
file, as a batch in another process would. The browser is Debian's ``chromium`` driven by
Playwright (no browser download); where neither can be had the browser tests skip saying
how to install them. Screenshots go to ``$ENGINE_UI_SCREENSHOTS`` (default
``tests/ui/screenshots``, ignored by git).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def chromium_missing() -> str | None:
    """Why no browser test can run here, or ``None`` when Chromium and Playwright are there."""
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


def post(
    server: Server, path: str, fields: dict[str, str], headers: dict[str, str] | None = None
) -> tuple[int, str]:
    """POST a form with urllib (status, body); an error status is returned, not raised."""
    data = urllib.parse.urlencode(fields).encode()
    request = urllib.request.Request(server.url + path, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def csrf_of(server: Server, headers: dict[str, str] | None = None) -> str:
    """The CSRF token of the server's forms, read from its inbox page."""
    found = re.search(r'name="csrf" value="([^"]+)"', server.get("/inbox", headers)[1])
    assert found is not None
    return found[1]
