"""The CLI's logs: JSON lines with the run's context, levels, and never a secret."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import CLEAN, Cli

SECRET = "sk-live-THISMUSTNEVERAPPEAR0123456789"


def events(stderr: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def test_info_logs_are_json_lines_with_run_ids(cli: Cli, tickets: Path) -> None:
    result = cli(
        "--log-level",
        "info",
        "--log-json",
        "run",
        "ticket_routing",
        "-i",
        str(tickets),
        "-m",
        CLEAN,
    )
    assert result.exit_code == 0, result.output
    done = [e for e in events(result.stderr) if e["event"] == "run_completed"]
    assert sorted(e["run_id"] for e in done) == [f"T-{n}" for n in range(1, 7)]
    assert all(e["level"] == "info" and "timestamp" in e for e in done)


def test_default_level_keeps_the_output_quiet(cli: Cli, tickets: Path) -> None:
    result = cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN)
    assert events(result.stderr) == []


def test_skipped_lines_are_logged_as_warnings(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    result = cli("--log-json", "run", "ticket_routing", "-i", str(bad), "-m", CLEAN)
    [event] = events(result.stderr)
    assert event["event"] == "input_line_skipped"
    assert event["line"] == 1
    assert event["level"] == "warning"


def test_an_api_key_in_the_environment_never_appears(cli: Cli, tickets: Path) -> None:
    env = {"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET}
    args = ["--log-level", "debug", "--log-json", "run", "ticket_routing", "-i", str(tickets)]
    result = cli(*args, "-m", CLEAN, env=env)
    assert result.exit_code == 0, result.output
    assert events(result.stderr)
    assert SECRET not in result.output
    # Without --model the key selects the provider; the note names the variable, not its value.
    shown = cli("--log-level", "debug", "runs", env=env)
    assert SECRET not in shown.output
