"""``engine show`` for an operator: a running run's nodes so far, a resume hint that works.

The live view reads the journal of a run still running (its trace is stored when it ends)
from another process, as an operator's terminal would. The resume hint names the store it
was read from unless that is the default, shell-quoted, so it runs as printed.
"""

from __future__ import annotations

import re
import shlex
from functools import partial
from pathlib import Path

import anyio
import operator_flows
from cli_support import Cli, engine_process, write_jsonl

from engine import Engine
from engine.models import ScriptedModel
from engine.store import Run, SQLiteStore

REPLIES = ['{"call": "note", "args": {"text": "hello"}}', '{"call": "wait"}']


async def test_show_of_a_running_run_lists_what_its_journal_holds_so_far(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    operator_flows.GATE.update(blocked=anyio.Event(), open=anyio.Event())
    async with SQLiteStore(path) as store:
        engine = Engine(model=ScriptedModel(REPLIES), store=store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(engine.run, operator_flows.blocking, {"id": "B-1"}, run_id="B-1"))
            with anyio.fail_after(10):
                await operator_flows.GATE["blocked"].wait()
            shown = await anyio.to_thread.run_sync(
                lambda: engine_process("show", "B-1", "--store", str(path), cwd=tmp_path)
            )
            operator_flows.GATE["open"].set()
        done = await anyio.to_thread.run_sync(
            lambda: engine_process("show", "B-1", "--store", str(path), cwd=tmp_path)
        )
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "running" in text
    assert (
        "live view (partial): run B-1 is running; its trace is stored when this execution ends. "
        "The 4 journal record(s) written so far:"
    ) in " ".join(text.split())
    lines = [line for line in text.splitlines() if line[:1].isdigit()]
    rows = [[cell.strip() for cell in line.split("│")] for line in lines]
    assert [row[:3] for row in rows] == [
        ["1", "run/decision:0/model_call:0", "model"],
        ["2", "run/decision:0", "pick"],
        ["3", "run/decision:0/note:0", "step"],
        ["4", "run/decision:1/model_call:0", "model"],
    ]
    assert rows[0][3] == "scripted"
    assert re.fullmatch(rf"\d+→\d+ tokens · replied {re.escape(REPLIES[0])}", rows[0][4])
    assert rows[1][3:] == ["model", '→ note {"text": "hello"} in 1 attempt(s)']
    assert rows[2][3:] == ["", 'returned "noted hello"']
    assert rows[3][4].endswith(f"tokens · replied {REPLIES[1]}")
    assert "no trace stored" not in text
    # Once it ended, its stored trace is shown, not the live view.
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout
    assert "live view" not in done.stdout
    assert "trace of B-1" in done.stdout


def test_show_of_a_run_with_nothing_journaled_yet(cli: Cli, tmp_path: Path) -> None:
    async def queue() -> None:
        async with SQLiteStore(tmp_path / "runs.db") as store:
            await store.create_run(Run(run_id="Q-1", flow="operator_flows:shaky", status="queued"))

    anyio.run(queue)
    result = cli("show", "Q-1")
    assert result.exit_code == 0, result.output
    assert (
        "no trace stored for this run yet, and no journal record: run Q-1 is queued and has "
        "finished no node so far"
    ) in " ".join(result.stdout.split())


def resume_hint(stdout: str) -> str:
    """The command of the panel's ``resume`` row."""
    (row,) = [line for line in stdout.splitlines() if "engine resume" in line]
    return row.strip("│ ").removeprefix("resume").strip()


def test_the_resume_hint_names_the_store_and_runs_as_printed(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "my runs"
    folder.mkdir()
    store = str(folder / "ops.db")
    spaced = Cli(store, cli.runner)
    operator_flows.BROKEN["on"] = True
    data = write_jsonl(tmp_path / "t.jsonl", [{"id": "T-1"}])
    failed = spaced("run", "operator_flows:shaky", "-i", str(data), "-m", "simulated")
    assert failed.exit_code == 1, failed.output
    hint = resume_hint(spaced("show", "T-1").stdout)
    assert hint == f"engine resume T-1 --store '{store}'"  # the space quoted for a shell
    operator_flows.BROKEN["on"] = False
    # As printed, where a provider key chooses the model (this flow calls none).
    again = cli(*shlex.split(hint)[1:], store=False, env={"OPENAI_API_KEY": "sk-test-not-real"})
    assert again.exit_code == 0, again.output
    assert "completed" in again.stdout


def test_the_resume_hint_leaves_out_the_default_store(cli: Cli, tmp_path: Path) -> None:
    operator_flows.BROKEN["on"] = True
    data = write_jsonl(tmp_path / "t.jsonl", [{"id": "T-1"}])
    cli("run", "operator_flows:shaky", "-i", str(data), "-m", "simulated")
    shown = cli("show", "T-1", env={"ENGINE_STORE": cli.store}, store=False)
    assert shown.exit_code == 0, shown.output
    assert resume_hint(shown.stdout) == "engine resume T-1"
