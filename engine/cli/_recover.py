"""``engine recover``: take over the runs of a process that died, and carry them on.

A run is ``running`` while its process renews its lease; a process killed mid-batch (SIGKILL,
a crash, a lost machine) leaves its runs ``running`` with a lease that runs out. This command
does what :meth:`Engine.recover <engine.Engine.recover>` does: it takes over every run whose
lease ran out, each by compare-and-set (a live owner is never displaced, and two recovering
processes never both take one run), and carries it on from its journal, with the same
progress display, summary and Ctrl-C as ``engine resume --all-…``.
"""

from __future__ import annotations

import typer

from engine._base import mask_secrets
from engine._run import unfinished_runs
from engine.cli._common import DEFAULT_STORE, EXIT_OK, note, out, run_async
from engine.cli._inputs import working_dir_importable
from engine.cli._models import ChosenModel, SettingOpt, choose_model
from engine.cli._resuming import engine_for, resume_runs
from engine.cli._run import ConcurrencyOpt, LeaseOpt, ModelOpt, StoreOpt
from engine.cli._stores import open_store
from engine.store import Store

__all__ = ["recover"]


def recover(
    model: ModelOpt = None,
    model_setting: SettingOpt = None,
    lease: LeaseOpt = 60.0,
    concurrency: ConcurrencyOpt = 32,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Take over the runs whose process died (their lease ran out) and carry them on.

    A recovery calls a model: --model, or the model of a set OPENAI_API_KEY or
    ANTHROPIC_API_KEY; without either it stops once it finds runs to recover.

    Exit status: 0 every recovered run completed (or none needed it), 1 some stopped, 3 none
    could be taken over, 2 bad usage (no model), 4 the store failed, 130 interrupted.
    """

    async def body() -> int:
        named = (  # a typo stops here, before the store
            choose_model(model, settings=model_setting) if model or model_setting else None
        )
        working_dir_importable()
        async with open_store(store) as opened:
            return await _recover(opened, named, lease, concurrency, store)

    code = run_async(body)
    if code != EXIT_OK:
        raise typer.Exit(code)


async def _recover(
    store: Store, named: ChosenModel | None, lease: float, concurrency: int, url: str
) -> int:
    found, held = await unfinished_runs(store)
    if held:
        note(
            f"{len(held)} running run(s) hold a live lease (their process may still be working, "
            "or died less than a lease ago): left alone; run this again once their lease ran out"
        )
    if not found:
        out.print(f"no runs to recover in {mask_secrets(url)}")
        return EXIT_OK
    return await resume_runs(
        engine_for(store, named, lease_s=lease),
        found,
        url,
        doing="recovering",
        verb="recovered",
        what="run(s) of a process that died",
        concurrency=concurrency,
    )
