"""What ``engine resume`` and ``engine recover`` share: the model, the flows, the batch.

A resume calls a model for every decision it asks again, so the engine is built only once
there is something to resume, on the model the command names (or a provider key's):
:func:`engine_for` stops with :data:`~engine.cli._models.NO_MODEL` otherwise, and never
falls back on SimulatedModel (a decision settled by ``--pick`` needs no model; a call after
it fails the run, resumable). The flows are found as ``engine run`` finds them, with the
working folder on the import path; a flow that still cannot be found is named with the
reason and the fix (:func:`flow_not_found`). :func:`resume_runs` drives one batch with the
live view, and its summary counts what really ran: ``resumed 3 of 5 suspended run(s)``.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from engine._base import AuthenticationError
from engine._run import Engine
from engine.cli._common import CliError, note, out
from engine.cli._inputs import short_name
from engine.cli._models import ChosenModel, choose_model
from engine.cli._progress import BatchView, Tally, exit_status, summary
from engine.cli._run import next_steps
from engine.models import Request, Response
from engine.store import Run, Store

__all__ = [
    "NO_MODEL_AFTER_PICK",
    "HandOnly",
    "done_title",
    "engine_for",
    "flow_not_found",
    "resume_runs",
]


#: Why a resume settled by ``--pick`` with no model fails a run that calls one after it.
NO_MODEL_AFTER_PICK = (
    "the run called a model after the pick made by hand, and this resume has none (no "
    "--model given, neither OPENAI_API_KEY nor ANTHROPIC_API_KEY set); resume it again with "
    "--model: the pick stays journaled"
)


class HandOnly:
    """The model of a resume whose decision a person settles with no model chosen.

    The pick needs no model; a call after it fails the run (``AuthenticationError``, as a
    provider with no key does), which a later ``engine resume --model`` carries on.
    """

    name = "none"

    async def complete(self, request: Request) -> Response:
        """Refuse the call: no model was chosen for this resume."""
        raise AuthenticationError(NO_MODEL_AFTER_PICK, provider="none")


def engine_for(
    store: Store, named: ChosenModel | None, *, by_hand: bool = False, **options: Any
) -> Engine:
    """Return an engine on ``store`` with the model ``--model`` named, else a provider key's.

    With ``by_hand`` (a ``--pick`` settles the decision) and no model at all, the engine
    gets :class:`HandOnly`: never SimulatedModel.

    Raises:
        CliError: No ``--model`` was given and no provider key is set (exit status 2).
    """
    try:
        chosen = named if named is not None else choose_model(None)
    except CliError:
        if not by_hand:
            raise
        chosen = ChosenModel(HandOnly(), "none")
    if chosen.note:
        note(chosen.note)
    return Engine(model=chosen.model, store=store, **options)


def flow_not_found(flow: str) -> str:
    """Say why the stored flow name ``flow`` cannot be found from here, and what to do."""
    module, _, qualname = flow.partition(":")
    where = os.getcwd()
    if module == "__main__" or "<locals>" in qualname:
        return (
            f"cannot find flow {flow!r}: a flow defined in a script's __main__ or inside a "
            "function cannot be imported; resume it from a program, with "
            "Engine.resume(run_id, flow=...)"
        )
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        why = f"{flow} is not a function" if not callable(obj) else "it could not be loaded"
    except ImportError as exc:
        why = f"cannot import module {module!r} ({exc})"
    except AttributeError:
        why = f"module {module!r} has no {qualname!r}"
    except Exception as exc:  # a module that raises as it loads: say what it raised
        why = f"importing module {module!r} raised {type(exc).__name__}: {exc}"
    return (
        f"cannot find flow {flow!r} from {where}: {why}; run the command from the folder the "
        "flow's module lives in (or put that folder on PYTHONPATH)"
    )


def done_title(verb: str, what: str, ran: int, total: int) -> str:
    """Return a batch's title by what really ran: ``resumed 3 of 5 suspended run(s)``."""
    if ran == total:
        return f"{verb} {total} {what}"
    if ran == 0:
        return f"{verb} 0 of {total} {what}: none could start"
    return f"{verb} {ran} of {total} {what}"


async def resume_runs(
    engine: Engine,
    found: list[Run],
    url: str,
    *,
    doing: str,
    verb: str,
    what: str,
    concurrency: int,
    max_retries: int | None = None,
) -> int:
    """Resume ``found`` as one batch with the live view and the summary; return the status.

    The summary's title counts the runs that ran (:func:`done_title`); a run that could not
    start is one row of the table, and each reason is printed once, with the runs it stopped.
    """
    flows = {r.run_id: r.flow for r in found}
    reasons: dict[str, str] = {}
    tally = Tally(total=len(found), track_existing=False)
    ran: list[str] = []
    with BatchView(tally, f"{doing} {len(found)} run(s)") as view:

        def not_started(item: Any, run_id: str | None, exc: Exception) -> None:
            flow = flows.get(run_id or "")
            if isinstance(exc, LookupError) and not isinstance(exc, KeyError) and flow:
                if flow not in reasons:
                    reasons[flow] = flow_not_found(flow)
                exc = LookupError(reasons[flow])  # the CLI's fix, not the library's flow=
            view.not_started(item, run_id, exc)

        batch = engine.resume_as_completed(
            (r.run_id for r in found),
            max_retries=max_retries,
            concurrency=concurrency,
            progress=view.progress,
            on_error=not_started,
            handle_signals=True,
        )
        async with batch as runs:
            async for run in runs:
                tally.finish(run)
                view.refresh()
                if run.status not in ("running", "queued"):  # held elsewhere: not ours
                    ran.append(run.run_id)
    tally.interrupted = engine.stopping
    out.print(summary(tally, done_title(verb, what, len(ran), len(found))))
    names = sorted(set(flows.values()))
    flow = short_name(names[0]) if len(names) == 1 else "FLOW"
    next_steps(tally, flow, url, resumed=ran[0] if ran else None)
    return exit_status(tally)
