"""Every ``engine`` command the README shows runs, in order, against a store of the main job."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
NEEDS_A_KEY = ("openai:", "anthropic:")
# Commands written for any run (`engine resume RUN_ID ...`): the CLI tests run their kind.
PLACEHOLDERS = ("RUN_ID",)
# Exit status 1: some runs stopped, as a faulty model means them to (the README's table).
STOPPED = 1


def shell_lines() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.DOTALL)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]


def engine(command: str, cwd: Path, store: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "engine", *shlex.split(command)[1:]],
        cwd=cwd,
        env={**env, "ENGINE_STORE": str(store), "PYTHONPATH": str(ROOT), "COLUMNS": "160"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_readme_make_targets_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = {m for line in shell_lines() for m in re.findall(r"^make (\w+)", line)}
    assert targets >= {"run", "test"}
    for target in targets:
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), target


def test_readme_engine_commands_run_in_order(tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    store = tmp_path / "engine.db"
    # What `make run` leaves behind (without its latency), for the commands that follow it.
    first = engine(
        "engine run ticket_routing --input examples/data/tickets.jsonl "
        "--model simulated:seed=7,faults=0.15",
        tmp_path,
        store,
    )
    assert first.returncode in (0, STOPPED), first.stderr
    commands = [line for line in shell_lines() if line.startswith("engine ")]
    assert len(commands) >= 8
    for command in commands:
        if any(word in command for word in (*NEEDS_A_KEY, *PLACEHOLDERS)):
            continue
        result = engine(command, tmp_path, store)
        runs = command.startswith(("engine run ", "engine resume "))
        assert result.returncode in ((0, STOPPED) if runs else (0,)), f"{command}\n{result.stderr}"
    assert (tmp_path / "graph.md").read_text(encoding="utf-8").startswith("```mermaid")
