"""`--model-setting key=value` and `?key=value` model options, on commands that build a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from cli_support import CLEAN, FAULTY, Cli

from engine.cli._models import choose_model, spec_with_settings
from engine.models import ModelSettings
from engine.store import SQLiteStore


def traced_settings(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Each stored run's model-call settings, in trace order."""

    async def read() -> dict[str, list[dict[str, Any]]]:
        async with SQLiteStore(path) as store:
            out: dict[str, list[dict[str, Any]]] = {}
            for run in await store.list_runs():
                trace = await store.load_trace(run.run_id)
                assert trace is not None
                out[run.run_id] = [
                    n["data"].get("settings", {})
                    for n in trace["nodes"]
                    if n["kind"] in ("model_call", "repick")
                ]
            return out

    return anyio.run(read)


def test_run_sends_every_model_setting_with_each_call(
    cli: Cli, tickets: Path, tmp_path: Path
) -> None:
    result = cli(
        "run",
        "ticket_routing",
        "--input",
        str(tickets),
        "--model",
        CLEAN,
        "--model-setting",
        "max_tokens=64",
        "--model-setting",
        "temperature=0",
        "--model-setting",
        "extra.top_k=5",
    )

    assert result.exit_code in (0, 1), result.output  # 1: some runs wait for a person
    assert "failed    │    0" in result.stdout
    calls = [s for run in traced_settings(tmp_path / "runs.db").values() for s in run]
    assert calls
    assert all(s["max_tokens"] == 64 for s in calls)  # decisions and text turns alike
    assert all(s["temperature"] == 0 and s["extra"] == {"top_k": 5} for s in calls)


def test_model_string_options_and_model_settings_combine(
    cli: Cli, tickets: Path, tmp_path: Path
) -> None:
    result = cli(
        "run",
        "ticket_routing",
        "-i",
        str(tickets),
        "-m",
        f"{CLEAN}?max_tokens=32&seed=4",
        "--model-setting",
        "max_tokens=48",  # laid over the string's own
    )

    assert result.exit_code in (0, 1), result.output  # 1: some runs wait for a person
    calls = [s for run in traced_settings(tmp_path / "runs.db").values() for s in run]
    assert {(s["max_tokens"], s["seed"]) for s in calls} == {(48, 4)}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--model-setting", "max_tokens=lots"], "max_tokens: expected an integer >= 1"),
        (["--model-setting", "temperature=7"], "temperature: must be from 0 to 2"),
        (["--model-setting", "topk=5"], "unknown model setting 'topk'; valid keys: temperature"),
        (["--model-setting", "seed"], "'seed' is not key=value"),
    ],
)
def test_a_bad_model_setting_is_bad_usage_naming_the_key(
    cli: Cli, tickets: Path, args: list[str], says: str
) -> None:
    result = cli("run", "ticket_routing", "-i", str(tickets), "-m", CLEAN, *args)

    assert result.exit_code == 2, result.output
    assert "error: --model-setting:" in result.stderr
    assert says in result.stderr


def test_a_bad_setting_in_the_model_string_is_bad_usage(cli: Cli, tickets: Path) -> None:
    result = cli("run", "ticket_routing", "-i", str(tickets), "-m", f"{CLEAN}?max_tokens=0")

    assert result.exit_code == 2, result.output
    assert "--model 'simulated:seed=11?max_tokens=0'" in result.stderr
    assert "max_tokens: must be an integer from 1" in result.stderr


def test_resume_asks_again_with_the_model_settings(cli: Cli, tickets: Path, tmp_path: Path) -> None:
    first = cli("run", "ticket_routing", "-i", str(tickets), "-m", FAULTY)
    assert first.exit_code == 1, first.output

    again = cli("resume", "--all-suspended", "-m", CLEAN, "--model-setting", "max_tokens=100")

    assert again.exit_code in (0, 1), again.output  # 1: some runs wait for a person
    assert "failed    │    0" in again.stdout
    settings = traced_settings(tmp_path / "runs.db")
    resumed = [calls for calls in settings.values() if {"max_tokens": 100} in calls]
    assert resumed  # the resumed runs' live calls carried the setting


def test_resume_refuses_a_bad_model_setting(cli: Cli) -> None:
    result = cli("resume", "--all-suspended", "-m", CLEAN, "--model-setting", "top_p=2")

    assert result.exit_code == 2, result.output
    assert "top_p: must be from 0 to 1" in result.stderr


def test_submit_takes_model_settings_with_a_resume_only(cli: Cli, tickets: Path) -> None:
    result = cli("submit", "ticket_routing", "-i", str(tickets), "--model-setting", "seed=1")

    assert result.exit_code == 2, result.output
    assert "--model-setting" in result.stderr
    assert "engine worker" in result.stderr


def test_a_queued_resume_carries_its_settings_in_the_model_name() -> None:
    spec = spec_with_settings("openai:tiny@http://h:1/v1", ["max_tokens=64", "stop=a&b"])

    assert spec == "openai:tiny@http://h:1/v1?max_tokens=64&stop=a%26b"
    assert choose_model(spec).model.settings == ModelSettings(  # type: ignore[attr-defined]
        max_tokens=64, stop="a&b"
    )
    assert spec_with_settings("simulated?seed=1", ["top_p=0.5"]) == "simulated?seed=1&top_p=0.5"
    assert spec_with_settings(None, None) is None
