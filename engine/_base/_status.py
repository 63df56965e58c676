"""The run state machine: a run's statuses, their named groups, and the moves between them.

::

    from        to
    queued      running, failed (a worker cannot import its flow), cancelled
    running     running (a takeover), completed, waiting, suspended, failed, cancelled
    waiting     running (an answer, a resume), cancelled
    suspended   running (a resume), cancelled
    failed      running (a resume), cancelled
    cancelled   running (a resume)
    completed   nothing

A run is created ``queued`` (for a worker) or ``running`` (started at once). An executor
claims it (``running``), and it ends ``completed``, ``waiting`` (a person must answer a
question of the flow's: a human decision, or the approval of a model's pick), ``suspended``
(a decision no model pick settled, a spent budget, an open circuit breaker), ``failed`` (any
other exception) or ``cancelled`` (a timeout, a cancel, a shutdown). Every status but
``completed`` may be claimed again: a resume (or an answer) goes on from the run's journal.
:data:`MOVES` holds these moves as data, and :func:`move` (with :func:`claim` and
:func:`release` for the two kinds of move the engine makes) is the one way a run record
changes status.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, Protocol, Self, TypeVar, get_args

from engine._base._errors import RunConflictError

__all__ = [
    "CANCELLABLE",
    "CLAIMABLE",
    "ENDED_BY_FLOW",
    "ENDED_IN_ERROR",
    "FINISHED",
    "MOVES",
    "PRUNABLE",
    "STATUSES",
    "STOPPED",
    "UNFINISHED",
    "RunRecord",
    "RunStatus",
    "can_move",
    "claim",
    "copy_model",
    "move",
    "release",
]

RunStatus = Literal["queued", "running", "completed", "waiting", "suspended", "failed", "cancelled"]
#: Every status, in the order a run meets them.
STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)

#: Which statuses a run may move to from each status. A run already ``running`` may be
#: claimed again (a takeover once its owner's lease ran out); a ``completed`` run stays so.
MOVES: Mapping[RunStatus, frozenset[RunStatus]] = MappingProxyType(
    {
        "queued": frozenset({"running", "failed", "cancelled"}),
        "running": frozenset(
            {"running", "completed", "waiting", "suspended", "failed", "cancelled"}
        ),
        "waiting": frozenset({"running", "cancelled"}),
        "suspended": frozenset({"running", "cancelled"}),
        "failed": frozenset({"running", "cancelled"}),
        "cancelled": frozenset({"running"}),
        "completed": frozenset(),
    }
)

# -- the named groups --------------------------------------------------------------------------

#: Statuses a run does not leave without a resume.
FINISHED: frozenset[RunStatus] = frozenset(
    {"completed", "waiting", "suspended", "failed", "cancelled"}
)
#: Waiting for an executor, or running: what a crashed owner may leave behind.
UNFINISHED: frozenset[RunStatus] = frozenset(STATUSES) - FINISHED
#: Finished short of completing: each goes on from its journal when resumed.
STOPPED: frozenset[RunStatus] = FINISHED - {"completed"}
#: Stopped on an error of the run's own (a decision, a budget, an exception): what a run
#: policy resumes, by the error's kind. A cancelled run was stopped from outside.
ENDED_IN_ERROR: frozenset[RunStatus] = frozenset({"suspended", "failed"})
#: Ended by the run's own execution (it returned, stopped on an error, or waits for a person's
#: answer, which resumes it): a job that meets
#: such a run again has nothing left to do, while a cancelled run was cut short from outside.
ENDED_BY_FLOW: frozenset[RunStatus] = ENDED_IN_ERROR | {"completed", "waiting"}
#: Statuses an executor may claim a run in (a running one once its owner's lease ran out).
CLAIMABLE: frozenset[RunStatus] = frozenset(s for s in STATUSES if "running" in MOVES[s])
#: Statuses a cancel moves to ``cancelled`` (a running one once its owner's lease ran out).
CANCELLABLE: frozenset[RunStatus] = frozenset(s for s in STATUSES if "cancelled" in MOVES[s])
#: Statuses ``prune`` deletes by default: done, or stopped for good unless resumed by hand.
PRUNABLE: tuple[RunStatus, ...] = ("completed", "failed", "cancelled")


class RunRecord(Protocol):
    """What the moves read and copy of a stored run (:class:`engine.store.Run` is one)."""

    @property
    def run_id(self) -> str: ...

    @property
    def status(self) -> RunStatus: ...

    @property
    def started_at(self) -> float | None: ...

    @property
    def resumes(self) -> int: ...

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """Return a copy with ``update``'s fields replaced."""
        ...


R = TypeVar("R", bound=RunRecord)


_set = object.__setattr__


def copy_model(model: R, update: Mapping[str, Any]) -> R:
    """Return ``model.model_copy(update=update)``; for a model of fields only (no extra or
    private values, as a run is), made in one step."""
    if (
        getattr(model, "__pydantic_extra__", None) is not None
        or getattr(model, "__pydantic_private__", None) is not None
    ):
        return model.model_copy(update=update)
    new = object.__new__(type(model))
    fields = model.__dict__.copy()
    fields.update(update)
    _set(new, "__dict__", fields)
    names = model.__pydantic_fields_set__ | update.keys()  # type: ignore[attr-defined]
    if 15 < len(names) < 19:
        # CPython gives a union of 16 to 18 names a table of 64 slots, and the same names
        # added one by one (from an iterator) a table of 32: 0.5 KB less for a run that
        # ended (18 names), which every version of a run pays, each keeping a set of its own.
        names = set(iter(names))
    _set(new, "__pydantic_fields_set__", names)
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_private__", None)
    return new


def can_move(source: RunStatus, target: RunStatus) -> bool:
    """Whether a run in status ``source`` may move to ``target``."""
    return target in MOVES[source]


def move(run: R, target: RunStatus, **fields: Any) -> R:
    """Return a copy of ``run`` in status ``target``, with ``fields`` replaced as well.

    Raises:
        RunConflictError: The state machine has no move from the run's status to ``target``
            (the run is ``completed``, say); the run is not changed.
    """
    return _moved(run, target, fields)


def _moved(run: R, target: RunStatus, fields: dict[str, Any]) -> R:
    """:func:`move` with ``fields`` in a dict of the caller's, which it takes over."""
    if target not in MOVES[run.status]:
        allowed = ", ".join(s for s in STATUSES if s in MOVES[run.status]) or "nothing"
        raise RunConflictError(
            f"run {run.run_id!r} is {run.status}; a {run.status} run cannot become {target} "
            f"(it may become: {allowed})",
            run_id=run.run_id,
        )
    fields["status"] = target
    return copy_model(run, fields)


def claim(run: R, *, owner: str, lease_expires_at: float, now: float) -> R:
    """Return ``run`` taken over by ``owner``: ``running``, with a lease until ``lease_expires_at``.

    It keeps when it first started (``now`` for a run never started); every claim but a
    queued run's first counts as a resume.

    Raises:
        RunConflictError: The run is ``completed``.
    """
    return move(
        run,
        "running",
        owner=owner,
        lease_expires_at=lease_expires_at,
        started_at=run.started_at or now,
        resumes=run.resumes + int(run.status != "queued"),
    )


def release(
    run: R, target: RunStatus, *, error: Any, finished_at: float | None, **fields: Any
) -> R:
    """Return ``run`` stopped in ``target`` with ``error``: owned by no one, holding no lease.

    Args:
        run: The run as it stands.
        target: Where it stops: ``completed``, ``suspended``, ``failed`` or ``cancelled``.
        error: Why it stopped (``None`` for a completed run).
        finished_at: When it stopped (a cancel of a stopped run passes the time it already
            holds).
        **fields: The other fields its end sets (its result, its counts).

    Raises:
        RunConflictError: The state machine has no move from the run's status to ``target``.
    """
    fields["error"] = error
    fields["owner"] = None
    fields["lease_expires_at"] = None
    fields["finished_at"] = finished_at
    return _moved(run, target, fields)
