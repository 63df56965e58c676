"""``engine answer``: a person answers a run that waits for them, from any machine.

A run whose flow asks a person (``decision.make(..., by="human")``) or holds a model's pick
for approval (``@agentic_function(approve=...)``) is stored ``waiting``; ``engine runs
--status waiting`` lists them and ``engine show RUN_ID`` prints the question with a ready
command line. ``engine answer RUN_ID --pick JSON`` settles a human decision; ``--approve``,
``--edit JSON`` (the pick's arguments, changed) and ``--reject REASON`` answer an approval.
The answer is checked strictly against the question's menu before anything changes: a pick
that does not fit leaves the run waiting as it was, and the message names the problem.
``--expired`` settles every question whose deadline passed by the flow's ``on_deadline``.
``--on-worker`` queues the answer for an ``engine worker`` (PostgreSQL stores).

The answer itself needs no model; a model call after it, in the same execution, runs on
``--model`` or a provider key's model, and without either fails the run (resumable with
``engine resume --model``), as a ``resume --pick`` does: never SimulatedModel unasked.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from engine._base import DecisionError, RunConflictError, RunNotFoundError, mask_secrets
from engine._run import Engine, request_answer
from engine.cli._common import (
    DEFAULT_STORE,
    EXIT_NOTHING_STARTED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    CliError,
    abort,
    fail,
    out,
    parse_pick,
    run_async,
)
from engine.cli._hints import command_line
from engine.cli._inputs import working_dir_importable
from engine.cli._models import ChosenModel, choose_model
from engine.cli._resuming import engine_for, flow_not_found
from engine.cli._run import ModelOpt, StoreOpt
from engine.cli._show import run_panel
from engine.cli._stores import find_run, open_store
from engine.cli._submit import require_postgres, require_queue
from engine.store import Run, Store

__all__ = ["ONE_ANSWER", "answer"]

#: What to give, when a command line gives none or several answers.
ONE_ANSWER = (
    "answer with one of: --pick JSON (a person's decision), or --approve, --edit JSON or "
    "--reject REASON (the approval of a model's pick)"
)


def answer(
    run_id: Annotated[
        str | None,
        typer.Argument(help="The waiting run (or a unique start of its id)."),
    ] = None,
    pick: Annotated[
        str | None,
        typer.Option(help='A person\'s decision, as JSON: {"call": "escalate", "args": {...}}.'),
    ] = None,
    approve: Annotated[
        bool, typer.Option("--approve", help="Approve the model's pick as it is.")
    ] = False,
    edit: Annotated[
        str | None,
        typer.Option(
            help='Approve the model\'s pick with these arguments (JSON): {"amount": 400}.'
        ),
    ] = None,
    reject: Annotated[
        str | None,
        typer.Option(help="Reject the model's pick, with the reason (the model is told it)."),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(help="Which question, when the run waits at several: its key or its name."),
    ] = None,
    model: ModelOpt = None,
    expired: Annotated[
        bool,
        typer.Option(
            "--expired",
            help="Settle every waiting run whose deadline passed, by its flow's on_deadline.",
        ),
    ] = False,
    on_worker: Annotated[
        bool,
        typer.Option(
            "--on-worker",
            help="Queue the answer for an `engine worker` instead (PostgreSQL stores).",
        ),
    ] = False,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Answer a run that waits for a person: a decision (--pick) or an approval.

    `engine runs --status waiting` lists the waiting runs; `engine show RUN_ID` prints each
    question, its options and a valid answer. The answer is validated strictly against the
    question; one that does not fit changes nothing. A model call after the answer runs on
    --model, else a provider key's model; without either it fails the run, which `engine
    resume --model` carries on.

    Exit status: 0 the run completed (or no deadline passed, with --expired), 1 it stopped
    or waits again (another question), 2 bad usage or an answer that does not fit, 3 the run
    does not wait for an answer (or another process holds it), 4 the store failed.
    """
    if expired:
        if run_id is not None or _given(pick, approve, edit, reject) or where is not None:
            abort(
                "--expired settles every passed deadline in the store; give no RUN_ID, "
                "answer or --where with it"
            )
        if on_worker:
            abort("--expired runs here; leave out --on-worker")
        code = run_async(lambda: _expired(store, model))
        if code != EXIT_OK:
            raise typer.Exit(code)
        return
    if run_id is None:
        abort(
            "give the RUN_ID to answer (`engine runs --status waiting` lists them), or "
            "--expired to settle every passed deadline"
        )
    if len(_given(pick, approve, edit, reject)) != 1:
        given = _given(pick, approve, edit, reject)
        abort(ONE_ANSWER + (f" (got {', '.join(given)})" if given else ""))
    if reject is not None and not reject.strip():
        abort("--reject needs a reason: the model asked again is told it, and the log keeps it")
    try:
        human = parse_pick(pick) if pick is not None else None
        args = _edit(edit) if edit is not None else None
    except CliError as exc:
        abort(str(exc), code=exc.code)
    said: dict[str, Any] = {
        "pick": human,
        "approve": approve,
        "edit": args,
        "reject": reject,
        "where": where,
    }
    if on_worker:
        run_async(lambda: _queue(store, run_id, said, model))
        return

    async def body() -> int:
        named = choose_model(model) if model else None  # a typo stops here, before the store
        working_dir_importable()  # the run's flow imports as `engine run` imported it
        async with open_store(store) as opened:
            return await _one(opened, run_id, said, named, store)

    code = run_async(body)
    if code != EXIT_OK:
        raise typer.Exit(code)


def _given(pick: str | None, approve: bool, edit: str | None, reject: str | None) -> list[str]:
    chosen = (("--pick", pick), ("--approve", approve or None), ("--edit", edit))
    return [name for name, value in (*chosen, ("--reject", reject)) if value is not None]


def _edit(text: str) -> dict[str, Any]:
    """Read ``--edit``: the model's pick's arguments as a JSON object."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(
            f"--edit is not valid JSON ({exc.msg}); write the arguments like '{{\"amount\": 400}}'"
        )
    if not isinstance(data, dict):
        fail('--edit must be a JSON object of the pick\'s arguments, like {"amount": 400}')
    return data


async def _one(
    store: Store, run_id: str, said: dict[str, Any], named: ChosenModel | None, url: str
) -> int:
    run = await find_run(store, run_id, url)
    _check_waiting(run, url)
    engine = engine_for(store, named, by_hand=True)
    try:
        answered = await engine.answer(run.run_id, **said)
    except DecisionError as exc:
        offered = "" if "valid options" in exc.detail else f"; offered: {', '.join(exc.options)}"
        fail(
            f"the answer does not fit the question at {exc.where!r} ({exc.kind}: {exc.detail})"
            f"{offered}; the run is unchanged and still waits",
            code=EXIT_USAGE,  # the fix is another answer
        )
    except RunConflictError as exc:
        fail(str(exc), code=EXIT_NOTHING_STARTED)
    except RunNotFoundError as exc:  # deleted since it was looked up (a prune, another host)
        fail(f"{exc}; it was deleted while being answered", code=EXIT_NOTHING_STARTED)
    except (ValueError, TypeError) as exc:  # the answer does not fit the kind of question
        fail(f"{exc}; the run is unchanged")
    except LookupError:  # the run's flow
        fail(flow_not_found(run.flow))
    out.print(run_panel(answered, url))
    return _status_of(answered, url)


def _check_waiting(run: Run, url: str) -> None:
    """Stop, with what to do instead, unless ``run`` waits for a person's answer."""
    if run.status == "waiting" and run.error is not None and run.error.questions:
        return
    if run.status == "completed":
        fail(
            f"run {run.run_id} is completed; there is nothing to answer", code=EXIT_NOTHING_STARTED
        )
    resume = command_line("resume", run.run_id, store=url)
    instead = (
        f"; `{resume}` continues it" if run.status in ("suspended", "failed", "cancelled") else ""
    )
    fail(
        f"run {run.run_id} is {run.status}, not waiting for an answer{instead}",
        code=EXIT_NOTHING_STARTED,
    )


def _status_of(run: Run, url: str) -> int:
    if run.status == "completed":
        return EXIT_OK
    if run.status == "waiting":
        show = command_line("show", run.run_id, store=url)
        out.print(f"run {run.run_id} waits for another answer: `{show}` prints the question")
    return EXIT_STOPPED


async def _expired(url: str, model: str | None) -> int:
    named = choose_model(model) if model else None
    working_dir_importable()
    async with open_store(url) as opened:
        engine: Engine = engine_for(opened, named, by_hand=True)
        settled = await engine.resume_expired()
    if not settled:
        out.print(f"no waiting run's deadline has passed in {mask_secrets(url)}")
        return EXIT_OK
    for run in settled:
        out.print(f"run {run.run_id}: {run.status}")
    ended = sum(1 for r in settled if r.status == "completed")
    out.print(f"settled {len(settled)} run(s) whose deadline passed: {ended} completed")
    return EXIT_OK if ended == len(settled) else EXIT_STOPPED


async def _queue(url: str, run_id: str, said: dict[str, Any], model: str | None) -> None:
    require_queue("a queued answer")
    if model is not None:
        choose_model(model)  # a typo fails here, not later on a worker
    async with open_store(url) as opened:
        pg = require_postgres(opened, url, "engine answer --on-worker")
        run = await find_run(pg, run_id, url)
        _check_waiting(run, url)
        try:
            await request_answer(pg, run.run_id, model=model, **said)
        except KeyError:  # deleted since
            fail(f"no run {run.run_id!r} in {url}; list the stored runs with `engine runs`")
        except RunConflictError as exc:
            fail(str(exc), code=EXIT_NOTHING_STARTED)
        except (ValueError, TypeError) as exc:
            fail(f"{exc}; the run is unchanged")
    out.print(f"queued the answer to run {run.run_id}; a worker will execute it")
