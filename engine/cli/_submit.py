"""``engine submit``: queue a file's records as runs for workers, or queue a resume.

``engine submit FLOW --input FILE.jsonl --store postgresql://…`` creates one ``queued`` run
per record, each with its procrastinate job; ``engine worker`` processes execute them.
``engine submit --resume RUN_ID [--pick JSON] [--model M]`` queues a resume of a stopped
run the same way.
"""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Annotated

import typer

from engine._base import RunConflictError, mask_secrets
from engine._run import DEFAULT_QUEUE, request_resume, submit
from engine.cli._common import (
    DEFAULT_STORE,
    EXIT_NOTHING_STARTED,
    EXIT_OK,
    EXIT_STOPPED,
    abort,
    fail,
    note,
    out,
    parse_pick,
    run_async,
    store_option,
)
from engine.cli._inputs import BadLine, Record, load_flow, read_records
from engine.cli._models import SettingOpt, choose_model, spec_with_settings
from engine.cli._run import StoreOpt
from engine.cli._stores import find_run, open_store
from engine.store import PostgresStore, Store

__all__ = ["queue_resume", "require_postgres", "require_queue", "submit_command"]


def submit_command(
    flow: Annotated[
        str | None, typer.Argument(help="module:function, or a short name from flows/.")
    ] = None,
    input: Annotated[
        Path | None, typer.Option("--input", "-i", help="A JSONL file: one flow input per line.")
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
    queue: Annotated[
        str | None, typer.Option(help=f"The queue the runs' jobs go to (default: {DEFAULT_QUEUE}).")
    ] = None,
    priority: Annotated[
        int | None, typer.Option(help="Higher runs first among waiting jobs (default: 0).")
    ] = None,
    max_concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="The most runs of this flow in flight across all workers."),
    ] = None,
    id_field: Annotated[
        str, typer.Option(help="The record field used as run id (so resubmits queue nothing).")
    ] = "id",
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Queue a resume of this stopped run (or a unique start of its id) instead.",
        ),
    ] = None,
    pick: Annotated[
        str | None, typer.Option(help='With --resume: decide by hand, as JSON {"call": ...}.')
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="With --resume: the model to ask anew.")
    ] = None,
    model_setting: SettingOpt = None,
    max_retries: Annotated[
        int | None, typer.Option(min=0, help="With --resume: re-picks for the decision.")
    ] = None,
) -> None:
    """Queue FLOW's runs (or a resume) in PostgreSQL for `engine worker` processes.

    Exit status: 0 every line queued (or stored before), 1 some lines skipped, 3 nothing
    could be queued, 2 bad usage, 4 the store failed, 130 interrupted.
    """
    if resume is not None:
        if flow is not None or input is not None:
            abort("--resume RUN_ID queues a resume; give no FLOW or --input with it")
        if queue is not None or priority is not None or max_concurrency is not None:
            abort(
                "--queue, --priority and --max-concurrency go with FLOW --input: a resume is "
                "queued on the queue, priority and lane it was submitted with"
            )
        queued = spec_with_settings(model, model_setting)
        run_async(lambda: queue_resume(store, resume, pick, queued, max_retries))
        return
    if flow is None or input is None:
        abort("give FLOW and --input FILE.jsonl, or --resume RUN_ID")
    if pick or model or model_setting or max_retries is not None:
        abort(
            "--pick, --model, --model-setting and --max-retries go with --resume RUN_ID (a "
            "worker's model takes its settings on `engine worker`)"
        )
    queue = DEFAULT_QUEUE if queue is None else queue
    code = run_async(
        lambda: _submit(store, flow, input, queue, priority or 0, max_concurrency, id_field)
    )
    if code != EXIT_OK:
        raise typer.Exit(code)


async def _submit(
    url: str,
    spec: str,
    path: Path,
    queue: str,
    priority: int,
    max_concurrency: int | None,
    id_field: str,
) -> int:
    require_queue("engine submit")
    found = load_flow(spec)
    records: list[Record] = []
    skipped: list[BadLine] = []
    for item in read_records(path, found, id_field=id_field or None):
        (skipped if isinstance(item, BadLine) else records).append(item)  # type: ignore[arg-type]
    for bad in skipped:
        note(f"{path}:{bad.line} skipped: {bad.reason}")
    ids = {id(r.value): r.run_id for r in records}
    started = time.time()
    async with open_store(url, create=True) as opened:
        runs = await submit(
            require_postgres(opened, url, "engine submit"),
            found.fn,
            [r.value for r in records],
            run_id=lambda value: ids[id(value)],
            queue=queue,
            priority=priority,
            max_concurrency=max_concurrency,
        )
    queued = sum(1 for r in runs if r.created_at >= started)  # the others were stored before
    out.print(
        f"queued {queued} run(s) of {found.name} on queue {queue!r}"
        f" ({len(runs) - queued} already stored, {len(skipped)} line(s) skipped)"
    )
    where = "" if url == store_option() else f" --store {mask_secrets(url)}"
    out.print(f"next: engine worker{where}    # execute them; engine runs{where} to follow")
    if not skipped:
        return EXIT_OK
    return EXIT_STOPPED if runs else EXIT_NOTHING_STARTED


async def queue_resume(
    url: str, run_id: str, pick: str | None, model: str | None, max_retries: int | None
) -> None:
    require_queue("a queued resume")
    if model is not None:
        choose_model(model)  # a typo fails here, not later on a worker
    human = parse_pick(pick) if pick is not None else None
    async with open_store(url) as opened:
        pg = require_postgres(opened, url, "engine submit --resume")
        run_id = (await find_run(pg, run_id, url)).run_id  # a unique start of the id will do
        try:
            await request_resume(pg, run_id, pick=human, model=model, max_retries=max_retries)
        except KeyError:  # deleted since
            fail(
                f"no run {run_id!r} in {url}; list the stored runs with `engine runs`",
                code=EXIT_NOTHING_STARTED,
            )
        except RunConflictError as exc:
            fail(str(exc), code=EXIT_NOTHING_STARTED)
        except ValueError as exc:
            fail(str(exc))
    out.print(f"queued a resume of run {run_id}; a worker will execute it")


def require_postgres(store: Store, url: str, command: str) -> PostgresStore:
    """Return the store as a PostgresStore, or stop: workers share a PostgreSQL database."""
    if not isinstance(store, PostgresStore):
        fail(
            f"{command} needs a PostgreSQL store that workers share, not {url!r}; pass "
            "--store postgresql://user@host:5432/dbname (or set ENGINE_STORE)"
        )
    return store


def require_queue(command: str) -> None:
    """Stop unless procrastinate imports: submits, workers and queued resumes go through it."""
    try:
        importlib.import_module("procrastinate")
    except ImportError as exc:
        fail(
            f"{command} needs procrastinate, the PostgreSQL task queue ({exc}); install the "
            'postgres extra: pip install -e ".[postgres]"'
        )
