"""``engine ui``: started as a user starts it, it prints where it listens and guards itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner
from ui_support import free_port

from engine.cli import app
from engine.store import SQLiteStore


def status_of(url: str) -> int | None:
    """The status a GET of ``url`` answers, or ``None`` while nothing listens."""
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            code: int = answer.status
            return code
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def test_engine_ui_says_its_options() -> None:
    result = CliRunner().invoke(app, ["ui", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--store", "--host", "--port", "--token", "--model"):
        assert option in result.output


def test_engine_ui_on_a_missing_store_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["ui", "--store", str(tmp_path / "none.db")])
    assert result.exit_code == 2
    assert "no store at" in result.output


def test_engine_ui_beyond_localhost_prints_a_token_link_and_refuses_without_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"

    async def create() -> None:
        async with SQLiteStore(path) as store:
            await store.count_runs_by_status()

    anyio.run(create)
    port = free_port()
    env = {**os.environ, "ENGINE_UI_TOKEN": "", "COLUMNS": "300"}
    command = [sys.executable, "-m", "engine", "ui", "--store", str(path), "--host", "0.0.0.0"]
    child = subprocess.Popen(
        [*command, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        found = re.search(r"open (http://0\.0\.0\.0:\d+/\?token=(\S+))", line)
        assert found is not None, line
        token = found[2]
        base = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 15
        while (code := status_of(base)) is None:
            assert time.monotonic() < deadline, "engine ui did not start listening"
            time.sleep(0.1)
        assert code == 401  # answered, and refused: no token
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with browser.open(f"{base}?token={token}", timeout=5) as answer:
            assert answer.status == 200  # the link sets the cookie and shows the runs page
            assert "Runs" in answer.read().decode()
    finally:
        child.terminate()
        child.communicate(timeout=10)  # reads and closes its output


def test_engine_ui_without_the_ui_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "engine.ui", None)  # as if starlette were missing
    result = CliRunner().invoke(app, ["ui"])
    assert result.exit_code == 2
    assert 'pip install -e ".[ui]"' in result.output
