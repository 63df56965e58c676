"""The operator is never surprised by ``engine resume`` and ``engine recover``.

No model is ever chosen for them at random: without ``--model`` and a provider key they
refuse, saying how to choose one. Flows are found from the working folder as ``engine run``
finds them; each reason a run could not start is printed once; the summary counts what
really ran. ``--all-failed`` and ``--flow`` pick the runs; a waiting run is never among them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import operator_flows
import pytest
from cli_support import Cli, stored_statuses, write_jsonl

from engine.cli._models import NO_MODEL
from engine.cli._resuming import NO_MODEL_AFTER_PICK
from engine.store import Run, SQLiteStore

#: Every reply of this offline model is bad: each decision suspends.
ALL_BAD = "simulated:seed=1,faults=1"
CLEAN = "simulated:seed=11"


def tickets(path: Path, n: int = 3) -> Path:
    return write_jsonl(path, [{"id": f"T-{i}"} for i in range(1, n + 1)])


def suspended_batch(cli: Cli, tmp_path: Path, flow: str = "operator_flows:pick_one") -> Path:
    """Run three tickets through ``flow`` on a model whose every reply is bad."""
    result = cli("run", flow, "--input", str(tickets(tmp_path / "t.jsonl")), "--model", ALL_BAD)
    assert result.exit_code == 1, result.output
    return tmp_path / "runs.db"


def runs_of(path: Path) -> dict[str, Run]:
    async def read() -> dict[str, Run]:
        async with SQLiteStore(path) as store:
            return {r.run_id: r for r in await store.list_runs()}

    return anyio.run(read)


def put(path: Path, *runs: Run) -> None:
    async def write() -> None:
        async with SQLiteStore(path) as store:
            for run in runs:
                await store.create_run(run)

    anyio.run(write)


def test_resume_without_a_model_or_key_refuses_and_says_how_to_choose(
    cli: Cli, tmp_path: Path
) -> None:
    path = suspended_batch(cli, tmp_path)
    before = runs_of(path)
    for args in (["resume", "T-1"], ["resume", "--all-suspended"]):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr == f"error: {NO_MODEL}\n"
    assert runs_of(path) == before  # nothing ran, nothing changed
    assert "--model simulated" in NO_MODEL
    assert "--model openai:gpt-4o-mini" in NO_MODEL
    assert "OPENAI_API_KEY" in NO_MODEL
    assert "ANTHROPIC_API_KEY" in NO_MODEL


def test_run_without_a_model_or_key_refuses_before_it_creates_the_store(
    cli: Cli, tmp_path: Path
) -> None:
    result = cli("run", "operator_flows:pick_one", "--input", str(tickets(tmp_path / "t.jsonl")))
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {NO_MODEL}\n"
    assert not (tmp_path / "runs.db").exists()
    named = cli("run", "operator_flows:pick_one", "-i", "t.jsonl", "--model", "simulated")
    assert named.exit_code == 0, named.output


def test_recover_without_a_model_refuses_once_it_finds_runs(cli: Cli, tmp_path: Path) -> None:
    path = suspended_batch(cli, tmp_path)
    assert cli("recover").stdout.startswith("no runs to recover in ")  # no model needed
    dead = Run(
        run_id="D-1",
        flow="operator_flows:pick_one",
        status="running",
        input={"args": [{"id": "D-1"}], "kwargs": {}},
        owner="a-dead-process",
        lease_expires_at=time.time() - 60,
    )
    put(path, dead)
    result = cli("recover")
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {NO_MODEL}\n"
    assert runs_of(path)["D-1"].status == "running"
    recovered = cli("recover", "--model", CLEAN)
    assert recovered.exit_code == 0, recovered.output
    assert "recovered 1 run(s) of a process that died" in recovered.stdout


def test_a_provider_key_chooses_the_model_and_says_so(cli: Cli, tmp_path: Path) -> None:
    operator_flows.BROKEN["on"] = True
    cli("run", "operator_flows:shaky", "-i", str(tickets(tmp_path / "t.jsonl", 1)), "-m", CLEAN)
    operator_flows.BROKEN["on"] = False  # the flow calls no model: a key is enough
    result = cli("resume", "T-1", env={"OPENAI_API_KEY": "sk-test-not-a-real-key"})
    assert result.exit_code == 0, result.output
    assert "note: no --model given: using openai:gpt-4o-mini because OPENAI_API_KEY is set" in (
        result.stderr
    )


def test_a_pick_by_hand_needs_no_model(cli: Cli, tmp_path: Path) -> None:
    path = suspended_batch(cli, tmp_path)
    result = cli("resume", "T-1", "--pick", '{"call": "shipping"}')
    assert result.exit_code == 0, result.output
    assert runs_of(path)["T-1"].result == "shipping"


def test_a_model_call_after_a_pick_by_hand_fails_the_run_until_a_model_is_named(
    cli: Cli, tmp_path: Path
) -> None:
    path = suspended_batch(cli, tmp_path, "operator_flows:pick_twice")
    result = cli("resume", "T-1", "--pick", '{"call": "shipping"}')
    assert result.exit_code == 1, result.output  # the run stopped again
    run = runs_of(path)["T-1"]
    assert run.status == "failed"
    assert run.error is not None
    assert (run.error.kind, run.error.message) == ("AuthenticationError", NO_MODEL_AFTER_PICK)
    again = cli("resume", "T-1", "--model", CLEAN)
    assert again.exit_code == 0, again.output
    assert runs_of(path)["T-1"].result[0] == "shipping"  # the pick by hand stayed


def test_resume_counts_what_really_ran_and_prints_each_reason_once(
    cli: Cli, tmp_path: Path
) -> None:
    path = suspended_batch(cli, tmp_path)

    async def move(run_id: str) -> None:  # its flow's module is gone: no resume finds it
        async with SQLiteStore(path) as store:
            run = await store.get_run(run_id)
            assert run is not None
            gone = run.model_copy(update={"flow": "gone_module:route"})
            assert await store.update_run(gone, expected_version=run.version) is not None

    anyio.run(move, "T-1")
    result = cli("resume", "--all-suspended", "--model", CLEAN)
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("resumed 2 of 3 suspended run(s)\n")
    why = (
        f"cannot find flow 'gone_module:route' from {tmp_path}: cannot import module "
        "'gone_module' (No module named 'gone_module'); run the command from the folder the "
        "flow's module lives in (or put that folder on PYTHONPATH)"
    )
    assert f"run T-1: {why}" in " ".join(result.stdout.split())

    anyio.run(_suspend_again, path)  # the two resumed ones, then their flow is lost too
    anyio.run(move, "T-2")
    anyio.run(move, "T-3")
    none = cli("resume", "--all-suspended", "--model", CLEAN)
    assert none.exit_code == 3, none.output  # nothing could start
    assert none.stdout.startswith("resumed 0 of 3 suspended run(s): none could start\n")
    flat = " ".join(none.stdout.split())
    assert flat.count("cannot find flow 'gone_module:route'") == 1  # one line for three runs
    assert "3 runs (T-1, T-2, T-3): cannot find flow 'gone_module:route'" in flat
    assert "a resumed run's trace" not in none.stdout  # no run was resumed: no hint to one


async def _suspend_again(path: Path) -> None:
    async with SQLiteStore(path) as store:
        for run in await store.list_runs(status="completed"):
            back = run.model_copy(update={"status": "suspended"})
            assert await store.update_run(back, expected_version=run.version) is not None


def test_resume_all_failed_resumes_the_failed_runs(cli: Cli, tmp_path: Path) -> None:
    operator_flows.BROKEN["on"] = True
    ran = cli("run", "operator_flows:shaky", "-i", str(tickets(tmp_path / "t.jsonl")), "-m", CLEAN)
    assert ran.exit_code == 1, ran.output
    assert set(stored_statuses(tmp_path / "runs.db").values()) == {"failed"}
    operator_flows.BROKEN["on"] = False
    result = cli("resume", "--all-failed", "--model", CLEAN)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("resumed 3 failed run(s)\n")
    assert set(stored_statuses(tmp_path / "runs.db").values()) == {"completed"}


def test_resume_all_forms_with_flow_take_only_that_flows_runs(cli: Cli, tmp_path: Path) -> None:
    path = suspended_batch(cli, tmp_path)  # pick_one: T-1..T-3 suspended
    operator_flows.BROKEN["on"] = True
    other = write_jsonl(tmp_path / "s.jsonl", [{"id": f"S-{i}"} for i in (1, 2)])
    cli("run", "operator_flows:shaky", "-i", str(other), "-m", CLEAN)
    operator_flows.BROKEN["on"] = False
    result = cli(
        "resume", "--all-suspended", "--all-failed", "--flow", "operator_flows:shaky", "-m", CLEAN
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "resumed 2 suspended and failed run(s) of operator_flows:shaky\n"
    )
    statuses = stored_statuses(path)
    assert statuses == {
        "T-1": "suspended",
        "T-2": "suspended",
        "T-3": "suspended",
        "S-1": "completed",
        "S-2": "completed",
    }
    none = cli("resume", "--all-cancelled", "--flow", "operator_flows:shaky", "-m", CLEAN)
    assert none.exit_code == 0, none.output
    assert none.stdout == f"no cancelled runs of operator_flows:shaky in {cli.store}\n"


def test_waiting_runs_are_never_resumed_by_the_all_forms(cli: Cli, tmp_path: Path) -> None:
    path = suspended_batch(cli, tmp_path)
    cli("resume", "--all-suspended", "-m", CLEAN)
    waiting = Run(
        run_id="W-1",
        flow="operator_flows:pick_one",
        status="waiting",
        input={"args": [{"id": "W-1"}], "kwargs": {}},
    )
    put(path, waiting)
    before = runs_of(path)["W-1"]
    result = cli("resume", "--all-suspended", "--all-failed", "--all-cancelled", "-m", CLEAN)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"no suspended or failed or cancelled runs in {cli.store}\n"
    assert runs_of(path)["W-1"] == before  # untouched: a person answers it
    helped = cli("resume", "--help", store=False)
    assert "never resume a waiting run" in " ".join(helped.stdout.replace("│", " ").split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume"], "give one RUN_ID, or --all-suspended / --all-failed / --all-cancelled"),
        (
            ["resume", "T-1", "--flow", "ticket_routing"],
            "--flow picks the runs of an --all-* form; leave it out with a RUN_ID",
        ),
        (["resume", "--all-failed", "--flow", "nope"], "unknown flow 'nope'"),
    ],
    ids=["nothing", "flow-with-id", "unknown-flow"],
)
def test_resume_usage_errors_name_the_fix(cli: Cli, args: list[str], message: str) -> None:
    result = cli(*args, "--model", CLEAN)
    assert result.exit_code == 2, result.output
    assert f"error: {message}" in result.stderr


def test_resume_json_pick_still_validated_before_anything(cli: Cli, tmp_path: Path) -> None:
    path = suspended_batch(cli, tmp_path)
    before = runs_of(path)
    result = cli("resume", "T-1", "--pick", json.dumps({"call": "teleport"}))
    assert result.exit_code == 2, result.output
    assert "does not fit the decision's menu" in result.stderr
    assert runs_of(path) == before
