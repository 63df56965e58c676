"""Text from the store is printed as written, never read as rich markup."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from cli_support import Cli

from engine import Engine, Runtime, agentic_function, decision
from engine.models import ScriptedModel
from engine.store import SQLiteStore

OPTIONS = ["a[b]", "[bold]s", "[/x]"]


async def _odd(ticket: str, runtime: Runtime | None = None) -> str:
    picked: str = await decision.make("Pick.", OPTIONS)
    return picked


# A frame named with markup, so the run's flow and a failure's `where` hold some too.
_odd.__name__ = _odd.__qualname__ = "odd[/x]"
odd = agentic_function(_odd)


def stored(cli: Cli, replies: list[str], run_id: str) -> None:
    """Run ``odd`` once on the CLI's store."""

    async def body() -> None:
        store = SQLiteStore(Path(cli.store.removeprefix("sqlite:///")))
        try:
            await Engine(model=ScriptedModel(replies), store=store).run(odd, "t", run_id=run_id)
        finally:
            await store.close()

    anyio.run(body)


def test_show_prints_options_where_and_ids_as_written(cli: Cli) -> None:
    stored(cli, ["?", "??"], "T-[bold]1")
    result = cli("show", "T-[bold]1")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "run T-[bold]1" in text
    assert ":odd[/x]" in text  # the flow
    assert "a[b], [bold]s, [/x]" in text
    assert "run/odd[/x]:0/decision:0" in text
    assert f"--pick '{json.dumps({'call': 'a[b]'})}'" in text  # a pick that is valid
    assert "options   a[b]\n          [bold]s\n          [/x]\n" in text
    assert "decision [a[b], [bold]s, [/x]] ✗ DecisionError" in text


def test_graph_summary_prints_labels_and_picks_as_written(cli: Cli) -> None:
    stored(cli, [json.dumps({"call": "[bold]s"})], "T-1")
    stored(cli, [json.dumps({"call": "[/x]"})], "T-2")
    result = cli("graph", "-o", "graph.md")
    assert result.exit_code == 0, result.output
    assert "odd[/x] over 2 run(s)" in result.stdout
    assert "[bold]s 1" in result.stdout
    assert "[/x] 1" in result.stdout
    assert '("[bold]s")' in Path("graph.md").read_text(encoding="utf-8")


def test_runs_prints_ids_flows_and_error_kinds_as_written(cli: Cli) -> None:
    stored(cli, ["?", "??"], "T-[/x]")
    result = cli("runs")
    assert result.exit_code == 0, result.output
    assert "T-[/x]" in result.stdout
    assert "odd[/x]" in result.stdout


def test_runs_json_prints_each_run_as_one_line_of_its_json(cli: Cli) -> None:
    # A reply of markup and an emoji code, kept in the run's error as the model wrote it.
    reply = "[/] [bold]no :smile: " + "x" * 300
    stored(cli, [reply, reply], "T-[/x] :smile:")
    result = cli("runs", "--json")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line]
    assert len(lines) == 1
    run = json.loads(lines[0])
    assert run["run_id"] == "T-[/x] :smile:"
    assert run["status"] == "suspended"
    assert "[/] [bold]no :smile: " in json.dumps(run["error"])


def test_a_message_naming_a_run_prints_its_id_as_written(cli: Cli) -> None:
    stored(cli, [json.dumps({"call": "a[b]"})], "T-[bold]:smile:")
    result = cli("resume", "T-[bold]:smile:")
    assert result.exit_code == 0, result.output
    assert "run T-[bold]:smile: is already completed" in result.stdout
