"""``engine runs``, ``show``, ``resume``, ``graph`` and ``prune`` on a small stored batch."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import anyio
import pytest
from cli_support import CLEAN, FAULTY, Cli

from engine.store import SQLiteStore


@pytest.fixture
def batch(cli: Cli, tickets: Path) -> Cli:
    """Six tickets run with a faulty model: some completed, some suspended."""
    result = cli("run", "ticket_routing", "--input", str(tickets), "--model", FAULTY)
    assert result.exit_code == 1, result.output  # some runs stopped (suspended)
    return cli


def run_ids(cli: Cli, status: str) -> list[str]:
    result = cli("runs", "--status", status, "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line)["run_id"] for line in result.stdout.splitlines() if line.strip()]


def test_runs_lists_and_filters_by_status(batch: Cli) -> None:
    listed = batch("runs")
    assert listed.exit_code == 0, listed.output
    assert re.search(r"6 run\(s\): ", listed.stdout)
    suspended = run_ids(batch, "suspended")
    assert suspended
    table = batch("runs", "--status", "suspended")
    assert all(run_id in table.stdout for run_id in suspended)
    assert "completed" not in table.stdout.split("run(s):")[0]


def test_runs_rejects_an_unknown_status(batch: Cli) -> None:
    result = batch("runs", "--status", "done")
    assert result.exit_code == 2
    assert "not a run status" in result.stderr


def test_show_a_suspended_run_explains_why_and_how_to_resume(batch: Cli) -> None:
    run_id = run_ids(batch, "suspended")[0]
    result = batch("show", run_id)
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "suspended" in text
    assert "stopped by" in text
    assert "offered" in text
    assert f"engine resume {run_id}" in text
    # The tree: frames, the decision with its offered options, failed attempts and kinds.
    assert "route_ticket()" in text
    assert re.search(r"decision \[.*\] ✗ DecisionError after 2 attempt\(s\)", text)
    assert re.search(r"model call #0 simulated \d+→\d+ tokens", text)
    assert re.search(r"re-pick #1 .* ✗ (no_action|unknown_call|type_mismatch|bad_args)", text)
    assert re.search(r"\d+\.\d ms", text)


def test_show_a_completed_run_shows_picks_and_steps(batch: Cli) -> None:
    run_id = run_ids(batch, "completed")[0]
    text = batch("show", run_id).stdout
    assert "completed" in text
    assert re.search(r"decision \[billing, shipping, .*\] → \w+ in \d attempt\(s\)", text)
    assert "step " in text


def test_show_json_and_unknown_ids(batch: Cli) -> None:
    run_id = run_ids(batch, "completed")[0]
    data = json.loads(batch("show", run_id, "--json").stdout)
    assert data["run"]["run_id"] == run_id
    assert any(n["kind"] == "decision" for n in data["trace"]["nodes"])
    missing = batch("show", "nope")
    assert missing.exit_code == 2
    assert "no run 'nope'" in missing.stderr
    ambiguous = batch("show", "T-")
    assert "give more of the id" in ambiguous.stderr


ARGS = {
    "look_up_order": {"order_id": "A-10001", "topic": "broken mug"},
    "refund": {"order_id": "A-10001", "amount": 12.0, "reason": "damaged"},
    "escalate": {"summary": "broken mug", "queue": "logistics"},
    "ask_customer": {"question": "Which item?"},
    "close": {"resolution": "answered"},
}


def test_resume_one_run_with_a_human_pick(batch: Cli) -> None:
    run_id = run_ids(batch, "suspended")[0]
    shown = json.loads(batch("show", run_id, "--json").stdout)
    option = shown["run"]["error"]["options"][0]
    pick = {"call": option, "args": ARGS.get(option, {})}
    # The flow asks the model again after the pick: the resume names one.
    result = batch("resume", run_id, "--pick", json.dumps(pick), "--model", CLEAN)
    assert result.exit_code == 0, result.output
    assert "completed" in result.stdout
    after = json.loads(batch("show", run_id, "--json").stdout)
    assert after["run"]["status"] == "completed"
    assert after["run"]["resumes"] == 1
    assert "by hand" in batch("show", run_id).stdout


def test_an_invalid_pick_leaves_the_run_as_it_was(batch: Cli) -> None:
    run_id = run_ids(batch, "suspended")[0]
    before = json.loads(batch("show", run_id, "--json").stdout)["run"]
    result = batch("resume", run_id, "--pick", '{"call": "teleport"}')
    assert result.exit_code == 2  # bad usage: the fix is another --pick
    assert "does not fit the decision's menu" in result.stderr
    assert "the run is unchanged" in result.stderr
    after = json.loads(batch("show", run_id, "--json").stdout)["run"]
    assert after == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume"], "give one RUN_ID"),
        (["resume", "x", "--all-suspended"], "give one RUN_ID"),
        (["resume", "x", "--pick", "{nope"], "--pick is not valid JSON"),
        (["resume", "x", "--pick", "[1]"], "must be a JSON object"),
    ],
    ids=["nothing", "both", "bad-json", "not-object"],
)
def test_resume_usage_errors(batch: Cli, args: list[str], message: str) -> None:
    result = batch(*args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_resume_all_suspended_completes_them_on_a_clean_model(batch: Cli) -> None:
    suspended = run_ids(batch, "suspended")
    result = batch("resume", "--all-suspended", "--model", CLEAN)
    assert result.exit_code == 0, result.output
    assert re.search(rf"completed\s*│\s*{len(suspended)}", result.stdout)
    assert run_ids(batch, "suspended") == []
    assert "no suspended runs" in batch("resume", "--all-suspended", "-m", CLEAN).stdout


def test_resume_all_suspended_reports_a_run_it_cannot_resume_and_resumes_the_rest(
    batch: Cli, tmp_path: Path
) -> None:
    lost, *others = run_ids(batch, "suspended")

    async def move_away() -> None:  # its flow's module is gone: the resume cannot find it
        async with SQLiteStore(tmp_path / "runs.db") as store:
            run = await store.get_run(lost)
            assert run is not None
            changed = run.model_copy(update={"flow": "gone_module:route"})
            assert await store.update_run(changed, expected_version=run.version) is not None

    anyio.run(move_away)
    result = batch("resume", "--all-suspended", "--model", CLEAN)
    assert result.exit_code == 1, result.output  # one run could not be resumed
    assert re.search(r"could not start\s*│\s*1", result.stdout)
    assert f"run {lost}: " in result.stdout
    assert re.search(rf"completed\s*│\s*{len(others)}", result.stdout)
    assert run_ids(batch, "suspended") == [lost]


def test_resume_one_run_on_another_model(batch: Cli) -> None:
    run_id = run_ids(batch, "suspended")[0]
    result = batch("resume", run_id, "--model", CLEAN)
    assert result.exit_code == 0, result.output
    assert "completed" in result.stdout
    again = batch("resume", run_id, "--model", CLEAN)
    assert "already completed" in again.stdout


def test_graph_prints_mermaid_with_counts_and_failures(batch: Cli) -> None:
    result = batch("graph", "ticket_routing")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("%% routing graph of flows.ticket_routing:route_ticket over 6 run(s)")
    assert "flowchart TD" in text
    assert '{{"classify<br/>6 visit(s)"}}' in text
    assert "DecisionError<br/>" in text
    assert re.search(r'-->\|"\d+ · \d+% · [\d.]+ att', text)
    assert "end_suspended" in text


def test_graph_json_and_files(batch: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.loads(batch("graph", "--json").stdout)  # the only flow in the store
    assert data["runs"] == 6
    classify = next(p for p in data["points"] if p["label"] == "classify")
    assert classify["visits"] == 6
    assert sum(o["picked"] for o in classify["options"]) + classify["decision_errors"] == 6

    md = batch("graph", "ticket_routing", "--output", str(tmp_path / "g.md"))
    assert md.exit_code == 0, md.output
    assert (tmp_path / "g.md").read_text().startswith("```mermaid\n")
    assert "classify" in md.stdout  # the summary table

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    svg = batch("graph", "ticket_routing", "--output", str(tmp_path / "g.svg"))
    assert svg.exit_code == 0, svg.output
    assert "no Mermaid renderer (mmdc) on PATH" in svg.stderr
    assert (tmp_path / "g.mmd").read_text().startswith("%% routing graph")


def test_graph_of_a_flow_without_runs(batch: Cli) -> None:
    result = batch("graph", "incident_triage")
    assert result.exit_code == 2
    assert "no stored runs of flows.incident_triage:triage_incident" in result.stderr


def test_prune_keeps_suspended_runs(batch: Cli) -> None:
    suspended = run_ids(batch, "suspended")
    result = batch("prune", "--keep-last", "0")
    assert result.exit_code == 0, result.output
    assert re.search(rf"deleted {6 - len(suspended)} finished run", result.stdout)
    assert run_ids(batch, "completed") == []
    assert run_ids(batch, "suspended") == suspended
    assert "deleted 0" in batch("prune", "--older-than", "7d").stdout


@pytest.mark.parametrize("args", [[], ["--older-than", "soon"]], ids=["nothing", "bad-age"])
def test_prune_usage_errors(batch: Cli, args: list[str]) -> None:
    result = batch("prune", *args)
    assert result.exit_code == 2
    assert "--older-than" in result.stderr


def fake_mmdc(folder: Path, *, fails: bool = False) -> None:
    """Put an ``mmdc`` on PATH that copies its input to its output (or fails)."""
    folder.mkdir()
    script = folder / "mmdc"
    body = 'echo "Error: bad diagram" >&2; exit 1' if fails else f'{shutil.which("cp")} "$2" "$4"'
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)


def test_graph_renders_images_with_mmdc_when_present(
    batch: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_mmdc(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = batch("graph", "ticket_routing", "-o", str(tmp_path / "g.svg"))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "g.svg").read_text().startswith("%% routing graph")
    assert "wrote " in result.stderr


def test_graph_reports_a_failing_renderer(
    batch: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_mmdc(tmp_path / "bin", fails=True)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = batch("graph", "ticket_routing", "-o", str(tmp_path / "g.png"))
    assert result.exit_code == 2
    assert "mmdc failed to render" in result.stderr
    assert "Error: bad diagram" in result.stderr
    assert "the Mermaid text is in" in result.stderr
