"""``engine show`` of a run that waits for a person, or that a person must settle.

It prints the run's input, each question asked, each option with its arguments (type,
allowed values, default, bounds, description) and a command line whose pick is valid.
"""

from __future__ import annotations

import json
import re
import time
from typing import Annotated, Any, Literal

import anyio
import pytest
from cli_support import Cli
from pydantic import Field

from engine import Engine, Runtime, agentic_function, decision
from engine._decision import describe_menu
from engine.models import ScriptedModel
from engine.store import Run, RunErrorInfo, SQLiteStore


async def classify(
    severity: Literal["low", "high"],
    count: Annotated[int, Field(ge=1, description="how many posts")],
    note: str = "",
) -> str:
    """Classify the post."""
    return severity


async def refund(order_id: str, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount}"


PLAN = ("Plan the fix", {"steps": [{"action": {"options": ["restart", "rollback"]}}]})
OPTIONS: dict[str, object] = {"classify": classify, "keep": ("KEPT", "Keep the post"), "plan": PLAN}


@agentic_function
async def moderate(post: str, runtime: Runtime | None = None) -> str:
    picked: str = await decision.make(f"Post: {post}\nClassify it.", OPTIONS, name="classify")
    return picked


def path_of(cli: Cli) -> str:
    return cli.store.removeprefix("sqlite:///")


def store_run(cli: Cli, run: Run) -> None:
    async def put() -> None:
        store = SQLiteStore(path_of(cli))
        try:
            await store.create_run(run)
        finally:
            await store.close()

    anyio.run(put)


def people_part(cli: Cli, run_id: str) -> list[str]:
    """The lines ``engine show`` prints between the run's panel and its trace."""
    result = cli("show", run_id)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("╰"))
    end = next(
        (i for i, line in enumerate(lines) if line.startswith(("trace of", "no trace"))),
        len(lines),
    )
    return lines[start + 1 : end]


def when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


OPTION_LINES = [
    "options   classify: Classify the post.",
    "            severity: 'low' | 'high', required",
    "            count: int, required, at least 1 — how many posts",
    '            note: str = ""',
    "          keep: Keep the post",
    "          plan: Plan the fix",
    "            steps: list[object], required",
    "              steps[].action: 'restart' | 'rollback', required",
]


def test_show_a_suspended_run_says_what_to_decide_and_a_valid_pick(cli: Cli) -> None:
    async def suspend() -> None:
        engine = Engine(model=ScriptedModel(["no idea", "none"]), store=SQLiteStore(path_of(cli)))
        await engine.run(moderate, "buy now", run_id="s1")

    anyio.run(suspend)
    pick = '{"call": "classify", "args": {"severity": "low", "count": 1}}'
    assert people_part(cli, "s1") == [
        'input     {"args": ["buy now"], "kwargs": {}}',
        "question  decision classify at run/moderate:0/decision:0: the model failed (no_action);"
        " decide it by hand",
        "asked     Post: buy now",
        "          Classify it.",
        *OPTION_LINES,
        f"pick      engine resume s1 --pick '{pick}' --store {cli.store}",
    ]
    panel = re.sub(r"[│\s]+", " ", cli("show", "s1").stdout)  # the panel's rows, unwrapped
    assert "or --pick (decide by hand, as below)" in panel
    # The pick it prints settles the run.
    resumed = cli("resume", "s1", "--pick", pick, "--model", "simulated")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(cli("show", "s1", "--json").stdout)["run"]["result"] == "low"


def waiting_run(questions: list[dict[str, Any]]) -> Run:
    return Run(
        run_id="w1",
        flow="tests:moderate",
        status="waiting",
        input={"post": "buy now"},
        error=RunErrorInfo(
            kind="waiting",
            message="waiting for a person's pick",
            where=questions[0]["where"],
            options=[o["name"] for o in questions[0]["menu"]],
            questions=questions,
        ),
    )


ASKED = 1_800_000_000.0


def test_show_a_waiting_run_prints_its_question_and_an_answer(cli: Cli) -> None:
    question = {
        "where": "run/moderate:0/decision:0",
        "name": "classify",
        "kind": "decision",
        "prompt": "Post: buy now\nClassify it.",
        "menu": describe_menu(OPTIONS),
        "asked_at": ASKED,
        "deadline_at": ASKED + 3600,
    }
    store_run(cli, waiting_run([question]))
    pick = '{"call": "classify", "args": {"severity": "low", "count": 1}}'
    assert people_part(cli, "w1") == [
        'input     {"post": "buy now"}',
        f"question  decision classify at run/moderate:0/decision:0 (asked {when(ASKED)},"
        f" deadline {when(ASKED + 3600)})",
        "asked     Post: buy now",
        "          Classify it.",
        *OPTION_LINES,
        f"answer    engine answer w1 --pick '{pick}' --store {cli.store}",
    ]


def test_show_a_run_waiting_in_two_branches_names_each_question(cli: Cli) -> None:
    refunds = describe_menu({"refund": refund, "close": "CLOSED"})
    questions = [
        {
            "where": "run/flow:0/gather:0/branch:0/decision:0",
            "name": "triage",
            "kind": "decision",
            "prompt": "Which queue?",
            "menu": describe_menu(["billing", "tech"]),
            "asked_at": ASKED,
            "deadline_at": None,
        },
        {
            "where": "run/flow:0/gather:0/branch:1/decision:0",
            "name": "decision",
            "kind": "approval",
            "prompt": "Refund it? It's 900.",
            "menu": refunds,
            "pick": {"call": "refund", "args": {"order_id": "A'1", "amount": 900.0}},
            "asked_at": ASKED,
            "deadline_at": None,
        },
    ]
    store_run(cli, waiting_run(questions))
    store = f"--store {cli.store}"
    second = "--where run/flow:0/gather:0/branch:1/decision:0"
    assert people_part(cli, "w1") == [
        'input     {"post": "buy now"}',
        f"question  1 of 2: decision triage at run/flow:0/gather:0/branch:0/decision:0"
        f" (asked {when(ASKED)})",
        "asked     Which queue?",
        "options   billing",
        "          tech",
        f'answer    engine answer w1 --where triage --pick \'{{"call": "billing"}}\' {store}',
        f"question  2 of 2: approval of the model's pick at"
        f" run/flow:0/gather:0/branch:1/decision:0 (asked {when(ASKED)})",
        "asked     Refund it? It's 900.",
        'picked    {"call": "refund", "args": {"order_id": "A\'1", "amount": 900.0}}',
        "options   refund: Refund an order.",
        "            order_id: str, required",
        "            amount: float, required",
        f"answer    engine answer w1 {second} --approve {store}",
        f"          engine answer w1 {second} --edit"
        ' \'{"order_id": "A\'"\'"\'1", "amount": 900.0}\' ' + store,
        f"          engine answer w1 {second} --reject REASON {store}",
    ]


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_show_prints_nothing_to_decide_for_other_runs(cli: Cli, status: str) -> None:
    error = RunErrorInfo(kind="RuntimeError", message="boom") if status == "failed" else None
    store_run(cli, Run(run_id="o1", flow="f", status=status, input={"a": 1}, error=error))  # type: ignore[arg-type]
    assert people_part(cli, "o1") == []


@agentic_function
async def ask_person(ticket: str, runtime: Runtime | None = None) -> str:
    picked: str = await decision.make(
        f"Ticket {ticket}: classify it.", OPTIONS, by="human", name="classify"
    )
    return picked


@agentic_function(approve=lambda args: args["amount"] > 500)
async def big_refund(order_id: str, amount: float) -> str:
    """Refund an order (over 500 needs a person's approval)."""
    return f"refunded {amount:g}"


@agentic_function
async def refunds(ticket: str, runtime: Runtime | None = None) -> str:
    picked: str = await decision.make(f"Ticket {ticket}: what now?", {"refund": big_refund})
    return picked


def stored_question(cli: Cli, run_id: str) -> dict[str, Any]:
    async def read() -> Run | None:
        store = SQLiteStore(path_of(cli))
        try:
            return await store.get_run(run_id)
        finally:
            await store.close()

    run = anyio.run(read)
    assert run is not None
    assert run.status == "waiting"
    assert run.error is not None
    assert run.error.questions is not None
    question: dict[str, Any] = run.error.questions[0]
    return question


def test_show_a_human_step_and_answer_with_the_pick_it_prints(cli: Cli) -> None:
    engine = Engine(model=ScriptedModel([]), store=SQLiteStore(path_of(cli)))
    anyio.run(lambda: engine.run(ask_person, "T-1", run_id="h1"))
    asked = stored_question(cli, "h1")["asked_at"]
    pick = '{"call": "classify", "args": {"severity": "low", "count": 1}}'
    assert people_part(cli, "h1") == [
        'input     {"args": ["T-1"], "kwargs": {}}',
        f"question  decision classify at run/ask_person:0/decision:0 (asked {when(asked)})",
        "asked     Ticket T-1: classify it.",
        *OPTION_LINES,
        f"answer    engine answer h1 --pick '{pick}' --store {cli.store}",
    ]
    other = Engine(model=ScriptedModel([]), store=SQLiteStore(path_of(cli)))
    done = anyio.run(lambda: other.answer("h1", pick=json.loads(pick), flow=ask_person))
    assert (done.status, done.result) == ("completed", "low")


def test_show_an_approval_and_approve_it(cli: Cli) -> None:
    reply = '{"call": "refund", "args": {"order_id": "A1", "amount": 900}}'
    engine = Engine(model=ScriptedModel([reply]), store=SQLiteStore(path_of(cli)))
    anyio.run(lambda: engine.run(refunds, "T-2", run_id="a1"))
    asked = stored_question(cli, "a1")["asked_at"]
    store = f"--store {cli.store}"
    edit = '{"order_id": "A1", "amount": 900.0}'
    assert people_part(cli, "a1") == [
        'input     {"args": ["T-2"], "kwargs": {}}',
        f"question  approval of the model's pick at run/refunds:0/decision:0 (asked {when(asked)})",
        "asked     Ticket T-2: what now?",
        'picked    {"call": "refund", "args": {"order_id": "A1", "amount": 900.0}}',
        "options   refund: Refund an order (over 500 needs a person's approval).",
        "            order_id: str, required",
        "            amount: float, required",
        f"answer    engine answer a1 --approve {store}",
        f"          engine answer a1 --edit '{edit}' {store}",
        f"          engine answer a1 --reject REASON {store}",
    ]
    other = Engine(model=ScriptedModel([]), store=SQLiteStore(path_of(cli)))
    done = anyio.run(lambda: other.answer("a1", approve=True, flow=refunds))
    assert (done.status, done.result) == ("completed", "refunded 900")
