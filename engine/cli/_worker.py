"""``engine worker``: execute queued runs from PostgreSQL until stopped (Ctrl-C, SIGTERM).

Runs procrastinate's worker on the store's database: it takes the jobs ``engine submit``
queued, executes each run through an Engine, and re-queues the runs of workers that died.
On SIGINT or SIGTERM it takes no new job and stops once the runs in flight have finished.
"""

from __future__ import annotations

from typing import Annotated

import typer

from engine._run import Engine
from engine._workers import worker
from engine.cli._common import DEFAULT_STORE, err, note, run_async
from engine.cli._models import SettingOpt, choose_model
from engine.cli._run import ConcurrencyOpt, ModelOpt, StoreOpt
from engine.cli._stores import open_store
from engine.cli._submit import require_postgres, require_queue
from engine.models import Model

__all__ = ["worker_command"]


def worker_command(
    store: StoreOpt = DEFAULT_STORE,
    concurrency: ConcurrencyOpt = 10,
    model: ModelOpt = None,
    model_setting: SettingOpt = None,
    queue: Annotated[
        list[str] | None, typer.Option("--queue", "-q", help="Take jobs from this queue only.")
    ] = None,
    lease: Annotated[
        float, typer.Option(min=1, help="Seconds a run's lease lasts without renewal.")
    ] = 30.0,
    stalled_after: Annotated[
        float, typer.Option(min=1, help="Seconds without a heartbeat before a worker is dead.")
    ] = 30.0,
    one_shot: Annotated[
        bool, typer.Option("--one-shot", help="Stop once no job waits or runs.")
    ] = False,
    name: Annotated[str | None, typer.Option(help="This worker's name in logs.")] = None,
) -> None:
    """Execute queued runs (from `engine submit`) until stopped; many workers may share a store.

    Exit status: 0 stopped (Ctrl-C, SIGTERM: the runs in flight finished first, or
    --one-shot found no job left), 2 bad usage, 4 the store failed, 130 interrupted before
    the worker started.
    """

    def resolve(spec: str) -> Model:  # the model a queued resume names
        return choose_model(spec).model

    async def body() -> None:
        require_queue("engine worker")
        async with open_store(store) as opened:
            pg = require_postgres(opened, store, "engine worker")
            # Inside run_async: a refusal is one error line. The settings are this worker's
            # model's; a queued resume's model carries its own in its name.
            chosen = choose_model(model, settings=model_setting)
            if chosen.note:
                note(chosen.note)
            engine = Engine(model=chosen.model, store=pg, lease_s=lease)
            queues = ", ".join(queue) if queue else "all queues"
            err.print(f"worker on {queues}, {concurrency} run(s) at once; Ctrl-C stops it")
            await worker(
                engine,
                concurrency=concurrency,
                queues=queue,
                stalled_after_s=stalled_after,
                heartbeat_s=min(5.0, stalled_after / 4),
                one_shot=one_shot,
                models=resolve,
                name=name,
            )

    run_async(body)
