"""``engine answer``: a person answers a waiting run from the command line.

A human decision takes ``--pick``; the approval of a model's pick ``--approve``, ``--edit``
or ``--reject``; ``--where`` picks one of several open questions; ``--expired`` settles the
passed deadlines. An answer that does not fit changes nothing and says what is wrong.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import answer_flows as af
import anyio
import pytest
from cli_support import Cli, write_jsonl

from engine import Engine
from engine.cli._answer import ONE_ANSWER
from engine.cli._resuming import NO_MODEL_AFTER_PICK
from engine.models import ScriptedModel
from engine.store import JournalRecord, Run, SQLiteStore


def path_of(cli: Cli) -> Path:
    return Path(cli.store.removeprefix("sqlite:///"))


def waiting(
    cli: Cli,
    flow: Callable[..., Any],
    run_id: str,
    *replies: str,
    clock: Callable[[], float] | None = None,
) -> Run:
    """Run ``flow`` on the CLI's store until it waits for a person."""

    async def go() -> Run:
        async with SQLiteStore(path_of(cli)) as store:
            engine = Engine(ScriptedModel(list(replies)), store=store, clock=clock)
            return await engine.run(flow, "T-1", run_id=run_id)

    run = anyio.run(go)
    assert run.status == "waiting", run
    return run


def stored(cli: Cli, run_id: str) -> tuple[Run, list[JournalRecord]]:
    async def read() -> tuple[Run, list[JournalRecord]]:
        async with SQLiteStore(path_of(cli)) as store:
            run = await store.get_run(run_id)
            assert run is not None
            return run, await store.load_journal(run_id)

    return anyio.run(read)


def refund(amount: int) -> str:
    return json.dumps({"call": "refund", "args": {"amount": amount}})


# -- a human decision ----------------------------------------------------------------------------


def test_a_pick_answers_a_human_decision_and_the_run_completes(cli: Cli) -> None:
    waiting(cli, af.triage, "r1")

    result = cli("answer", "r1", "--pick", '{"call": "escalate", "args": {"queue": "vip"}}')

    assert result.exit_code == 0, result.output
    assert "completed" in result.stdout
    run, journal = stored(cli, "r1")
    assert run.status == "completed"
    assert run.result == "escalated to vip"
    (pick,) = [r for r in journal if r.kind == "pick"]
    assert pick.actor == "human"


def test_a_start_of_the_run_id_will_do(cli: Cli) -> None:
    waiting(cli, af.triage, "run-abc-123")

    result = cli("answer", "run-abc", "--pick", '{"call": "close_ticket"}')

    assert result.exit_code == 0, result.output
    assert stored(cli, "run-abc-123")[0].result == "closed"


@pytest.mark.parametrize(
    ("pick", "problem"),
    [
        ('{"call": "delete"}', "'delete'"),
        ('{"call": "escalate", "args": {"queue": "gold"}}', "queue"),
        ('{"call": "escalate", "args": {"queue": "vip", "severty": "high"}}', "severty"),
        ('{"call": "escalate", "args": {}}', "queue"),
    ],
)
def test_a_pick_that_does_not_fit_changes_nothing_and_names_the_problem(
    cli: Cli, pick: str, problem: str
) -> None:
    waiting(cli, af.triage, "r1")
    before = stored(cli, "r1")

    result = cli("answer", "r1", "--pick", pick)

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "error: the answer does not fit the question at 'run/decision:0' ("
    )
    assert problem in result.stderr
    assert "the run is unchanged and still waits" in result.stderr
    assert stored(cli, "r1") == before


def test_a_pick_that_is_not_json_says_how_to_write_one(cli: Cli) -> None:
    waiting(cli, af.triage, "r1")

    result = cli("answer", "r1", "--pick", "escalate")

    assert result.exit_code == 2
    assert "error: --pick is not valid JSON" in result.stderr
    assert stored(cli, "r1")[0].status == "waiting"


def test_an_approval_given_to_a_human_decision_says_a_pick_is_wanted(cli: Cli) -> None:
    waiting(cli, af.triage, "r1")

    result = cli("answer", "r1", "--approve")

    assert result.exit_code == 2
    assert "error: run 'r1' waits at 'run/decision:0' for a person's pick among" in (result.stderr)
    assert "the run is unchanged" in result.stderr


# -- approvals -----------------------------------------------------------------------------------


def test_approve_lets_the_models_pick_run(cli: Cli) -> None:
    waiting(cli, af.settle, "r1", refund(900))

    result = cli("answer", "r1", "--approve")

    assert result.exit_code == 0, result.output
    assert stored(cli, "r1")[0].result == "refunded 900"


def test_edit_changes_the_arguments_which_are_validated_again(cli: Cli) -> None:
    waiting(cli, af.settle, "r1", refund(900))

    bad = cli("answer", "r1", "--edit", '{"amount": "lots"}')
    assert bad.exit_code == 2
    assert "error: the answer does not fit the question at" in bad.stderr
    assert "amount" in bad.stderr
    assert stored(cli, "r1")[0].status == "waiting"

    result = cli("answer", "r1", "--edit", '{"amount": 400}')

    assert result.exit_code == 0, result.output
    assert stored(cli, "r1")[0].result == "refunded 400"


def test_edit_must_be_a_json_object_of_arguments(cli: Cli) -> None:
    waiting(cli, af.settle, "r1", refund(900))

    not_json = cli("answer", "r1", "--edit", "amount=400")
    a_list = cli("answer", "r1", "--edit", "[400]")

    assert not_json.exit_code == a_list.exit_code == 2
    assert "error: --edit is not valid JSON" in not_json.stderr
    assert "error: --edit must be a JSON object of the pick's arguments" in a_list.stderr


def test_reject_takes_the_flows_fallback(cli: Cli) -> None:
    waiting(cli, af.settle, "r1", refund(900))

    result = cli("answer", "r1", "--reject", "over the monthly budget")

    assert result.exit_code == 0, result.output
    run, journal = stored(cli, "r1")
    assert run.result == "apologised"
    (approval,) = [r for r in journal if r.kind == "approval"]
    assert approval.data == {"verdict": "reject", "reason": "over the monthly budget"}


def test_reject_needs_a_reason(cli: Cli) -> None:
    waiting(cli, af.settle, "r1", refund(900))

    result = cli("answer", "r1", "--reject", " ")

    assert result.exit_code == 2
    assert "error: --reject needs a reason" in result.stderr


def test_a_pick_given_to_an_approval_says_what_to_give(cli: Cli) -> None:
    waiting(cli, af.settle, "r1", refund(900))

    result = cli("answer", "r1", "--pick", '{"call": "apologise"}')

    assert result.exit_code == 2
    assert "for the approval of the model's pick" in result.stderr
    assert "approve it, edit its arguments or reject it" in result.stderr


# -- several questions ---------------------------------------------------------------------------


def test_where_names_one_of_several_questions_by_name(cli: Cli) -> None:
    waiting(cli, af.two_people, "r1")

    unsaid = cli("answer", "r1", "--pick", '{"call": "close_ticket"}')
    assert unsaid.exit_code == 2
    assert "error: run 'r1' waits at 2 steps: say which one to answer with where=" in (
        unsaid.stderr
    )

    first = cli("answer", "r1", "--where", "billing", "--pick", '{"call": "close_ticket"}')
    assert first.exit_code == 1, first.output
    assert "run r1 waits for another answer: `engine show r1 --store" in first.stdout

    second = cli(
        "answer",
        "r1",
        "--where",
        "legal",
        "--pick",
        '{"call": "escalate", "args": {"queue": "vip"}}',
    )
    assert second.exit_code == 0, second.output
    assert stored(cli, "r1")[0].result == ["escalated to vip", "closed"]


def test_where_that_names_no_open_question_lists_the_open_ones(cli: Cli) -> None:
    waiting(cli, af.two_people, "r1")

    result = cli("answer", "r1", "--where", "sales", "--pick", '{"call": "close_ticket"}')

    assert result.exit_code == 2
    assert "error: run 'r1' has no open question at 'sales'; it waits at:" in result.stderr


# -- usage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "got"),
    [
        ([], ""),
        (["--approve", "--reject", "no"], " (got --approve, --reject)"),
        (["--pick", '{"call": "x"}', "--edit", "{}"], " (got --pick, --edit)"),
    ],
)
def test_exactly_one_answer_is_given(cli: Cli, args: list[str], got: str) -> None:
    result = cli("answer", "r1", *args)

    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {ONE_ANSWER}{got}"


def test_no_run_id_says_how_to_find_one(cli: Cli) -> None:
    result = cli("answer", "--approve")

    assert result.exit_code == 2
    assert "error: give the RUN_ID to answer (`engine runs --status waiting` lists them)" in (
        result.stderr
    )


def test_an_unknown_run_is_named(cli: Cli) -> None:
    waiting(cli, af.triage, "r1")

    result = cli("answer", "nope", "--approve")

    assert result.exit_code == 2
    assert "error: no run 'nope' in" in result.stderr


def test_a_run_that_does_not_wait_has_nothing_to_answer(cli: Cli) -> None:
    waiting(cli, af.triage, "r1")
    assert cli("answer", "r1", "--pick", '{"call": "close_ticket"}').exit_code == 0

    again = cli("answer", "r1", "--pick", '{"call": "close_ticket"}')

    assert again.exit_code == 3
    assert again.stderr.strip() == "error: run r1 is completed; there is nothing to answer"


def test_a_suspended_run_is_pointed_to_resume(cli: Cli) -> None:
    async def put() -> None:
        async with SQLiteStore(path_of(cli)) as store:
            await store.create_run(Run(run_id="s1", flow="answer_flows:triage", status="suspended"))

    anyio.run(put)

    result = cli("answer", "s1", "--approve")

    assert result.exit_code == 3
    assert "error: run s1 is suspended, not waiting for an answer; `engine resume s1" in (
        result.stderr
    )


def test_on_worker_needs_postgres(cli: Cli) -> None:
    waiting(cli, af.triage, "r1")

    result = cli("answer", "r1", "--on-worker", "--pick", '{"call": "close_ticket"}')

    assert result.exit_code == 2
    assert "error: engine answer --on-worker needs a PostgreSQL store" in result.stderr
    assert stored(cli, "r1")[0].status == "waiting"


# -- deadlines -----------------------------------------------------------------------------------


def test_expired_settles_every_passed_deadline_and_leaves_the_rest(cli: Cli) -> None:
    two_hours_ago = time.time() - 7200
    waiting(cli, af.timed, "late", clock=lambda: two_hours_ago)
    waiting(cli, af.timed, "fresh")

    result = cli("answer", "--expired")

    assert result.exit_code == 0, result.output
    assert "run late: completed" in result.stdout
    assert "settled 1 run(s) whose deadline passed: 1 completed" in result.stdout
    assert stored(cli, "late")[0].result == "closed"
    assert stored(cli, "fresh")[0].status == "waiting"

    nothing = cli("answer", "--expired")
    assert nothing.exit_code == 0
    assert "no waiting run's deadline has passed in" in nothing.stdout


def test_expired_takes_no_run_id(cli: Cli) -> None:
    result = cli("answer", "r1", "--expired")

    assert result.exit_code == 2
    assert "error: --expired settles every passed deadline in the store" in result.stderr


# -- listing -------------------------------------------------------------------------------------


def test_runs_lists_the_waiting_runs(cli: Cli) -> None:
    waiting(cli, af.triage, "r1")

    result = cli("runs", "--status", "waiting")

    assert result.exit_code == 0, result.output
    assert "r1" in result.stdout
    assert "1 run(s): 1 waiting" in result.stdout


def test_a_batch_that_leaves_runs_waiting_says_so_and_how_to_answer(
    cli: Cli, tmp_path: Path
) -> None:
    tickets = write_jsonl(tmp_path / "t.jsonl", ["T-1", "T-2"])

    result = cli("run", "answer_flows:triage", "--input", str(tickets), "--model", "simulated")

    assert result.exit_code == 1, result.output  # waiting is not completed, nor a failure
    assert re.search(r"│ waiting\s*│\s*2 │", result.stdout), result.stdout
    assert re.search(r"│ failed\s*│\s*0 │", result.stdout)
    assert "2 waiting for a person (engine answer RUN_ID --pick/--approve/--edit/--reject;" in (
        result.stdout
    )
    assert "engine runs --status waiting --store" in result.stdout


def test_a_rejection_that_asks_the_model_again_needs_a_model(cli: Cli) -> None:
    waiting(cli, af.settle_or_ask_again, "r1", refund(900))

    result = cli("answer", "r1", "--reject", "too much")

    assert result.exit_code == 1, result.output
    run, journal = stored(cli, "r1")
    assert run.status == "failed"  # never SimulatedModel unasked; resumable with --model
    assert run.error is not None
    assert run.error.message == NO_MODEL_AFTER_PICK
    assert [r.data for r in journal if r.kind == "approval"] == [
        {"verdict": "reject", "reason": "too much"}
    ]
    again = cli("answer", "r1", "--reject", "too much")
    assert again.exit_code == 3
    assert "error: run r1 is failed, not waiting for an answer; `engine resume r1" in again.stderr
