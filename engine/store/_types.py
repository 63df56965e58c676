"""What a store keeps: runs, their journals and traces, and the :class:`Store` protocol."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from engine._base import FINISHED, PRUNABLE, RunStatus

__all__ = [
    "FINISHED",
    "PRUNABLE",
    "JournalKind",
    "JournalRecord",
    "Run",
    "RunErrorInfo",
    "RunStatus",
    "Store",
    "TokenUsage",
]

# RunStatus, FINISHED and PRUNABLE are the run state machine's (engine._base), named here too.
#: ``ask`` keeps a question a person was asked (a human decision, an approval), ``approval``
#: their answer to an approval; a person's pick is a ``pick`` whose actor is ``human``.
JournalKind = Literal["model", "pick", "step", "decision_failed", "retry", "ask", "approval"]


class TokenUsage(BaseModel):
    """Tokens a run has spent, all model calls together."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input and output tokens together."""
        return self.input_tokens + self.output_tokens


class RunErrorInfo(BaseModel):
    """Why a run stopped.

    ``kind`` is the ``DecisionError`` kind for a suspended run, the exception's class name for
    a failed one, ``waiting`` for a run that waits for a person; ``where`` is the failing (or
    first waiting) node's key. ``menu`` describes the failing decision's options for a person
    (each with its arguments) and ``prompt`` is the question it asked (capped); ``questions``
    are a waiting run's open questions, one per waiting step (several where parallel
    branches wait), each answered on its own.
    """

    kind: str
    message: str
    where: str | None = None
    options: list[str] | None = None
    replies: list[str] | None = None
    traceback: str | None = None
    menu: list[dict[str, Any]] | None = None
    prompt: str | None = None
    questions: list[dict[str, Any]] | None = None


class Run(BaseModel):
    """One run of a flow, as stored."""

    # A float that is not finite is written as the bare constant (``NaN``), not as ``null``:
    # the stores refuse it, naming where it is, instead of storing a changed value.
    model_config = ConfigDict(ser_json_inf_nan="constants")

    run_id: str
    flow: str
    status: RunStatus = "queued"
    input: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: RunErrorInfo | None = None
    transitions: int = 0
    model_calls: int = 0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    #: US dollars its model calls cost, all its executions together: the calls whose price
    #: is known (``engine.Price``); ``None`` when none of them had a known price.
    cost_usd: float | None = None
    resumes: int = 0
    #: Retry attempts so far, by layer (``transport``, ``parse``, ``decision``, ``step``,
    #: ``run``), resumes included; each attempt is also a ``retry`` record of the journal.
    retries: dict[str, int] = Field(default_factory=dict)
    #: Seconds the run has spent running, all its executions together (a wall-time budget
    #: counts these, not the time it waited suspended).
    active_s: float = 0.0
    owner: str | None = None
    lease_expires_at: float | None = None
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    version: int = 0

    @classmethod
    def started(
        cls,
        run_id: str,
        flow: str,
        data: dict[str, Any],
        *,
        owner: str,
        lease_expires_at: float,
        now: float,
    ) -> Run:
        """Build a run the engine starts at once (values of the right types, made by the
        engine), without validating them again: what ``Run(run_id=..., flow=...,
        status="running", input=data, owner=owner, lease_expires_at=...,
        started_at=now)`` builds."""
        usage = _new(TokenUsage)  # TokenUsage(), as trusted
        _set_dict(usage, {"input_tokens": 0, "output_tokens": 0})
        _set_fields(usage, set())
        _set_extra(usage, None)
        _set_private(usage, None)
        created = time.time()
        run = _new(cls)
        _set_dict(
            run,
            {
                "run_id": run_id,
                "flow": flow,
                "status": "running",
                "input": data,
                "result": None,
                "error": None,
                "transitions": 0,
                "model_calls": 0,
                "usage": usage,
                "cost_usd": None,
                "resumes": 0,
                "retries": {},
                "active_s": 0.0,
                "owner": owner,
                "lease_expires_at": lease_expires_at,
                "created_at": created,
                "updated_at": created,
                "started_at": now,
                "finished_at": None,
                "version": 0,
            },
        )
        _set_fields(run, set(_STARTED))
        _set_extra(run, None)
        _set_private(run, None)
        return run


class JournalRecord(BaseModel):
    """One journal record: a model reply, a pick, a step result, a failed decision or a retry.

    ``retry`` records are the run's retry ledger: one per attempt at any layer, with its cause.
    ``key`` is the node's deterministic key; ``fingerprint`` hashes what was asked, so replay
    can tell when the flow now asks something else under the same key.
    """

    key: str
    kind: JournalKind
    fingerprint: str = ""
    actor: str | None = None
    data: Any = None
    created_at: float = Field(default_factory=time.time)

    @classmethod
    def trusted(
        cls, key: str, kind: JournalKind, fingerprint: str, actor: str | None, data: Any
    ) -> JournalRecord:
        """Build a record of values the engine made (of the right types), without validating
        them again, created now: what ``JournalRecord(key=..., kind=..., ...)`` builds."""
        record = _new(cls)
        _set_dict(
            record,
            {
                "key": key,
                "kind": kind,
                "fingerprint": fingerprint,
                "actor": actor,
                "data": data,
                "created_at": time.time(),
            },
        )
        _set_fields(record, set(_GIVEN))
        _set_extra(record, None)
        _set_private(record, None)
        return record


_new = object.__new__  # BaseModel defines no __new__ of its own
# The setters of BaseModel's slots, called directly (what object.__setattr__ finds for them).
_SLOTS = vars(BaseModel)
_set_dict = _SLOTS["__dict__"].__set__
_set_fields = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__
# The fields a trusted record marks as given: those ``JournalRecord(...)`` is passed.
_GIVEN = frozenset({"key", "kind", "fingerprint", "actor", "data"})
# The fields a run started by the engine marks as given.
_STARTED = frozenset(
    {"run_id", "flow", "status", "input", "owner", "lease_expires_at", "started_at"}
)


@runtime_checkable
class Store(Protocol):
    """Where runs, journals and traces live. Every implementation passes one contract suite."""

    async def create_run(self, run: Run) -> tuple[Run, bool]:
        """Insert ``run`` unless its id exists; return the stored run and whether it was new."""
        ...

    async def get_run(self, run_id: str) -> Run | None:
        """Return the run, or ``None`` for an unknown id."""
        ...

    async def list_runs(
        self, *, status: RunStatus | None = None, flow: str | None = None, limit: int | None = None
    ) -> list[Run]:
        """Return runs, oldest first, optionally filtered by status and flow."""
        ...

    async def page_runs(
        self,
        *,
        status: RunStatus | None = None,
        flow: str | None = None,
        search: str | None = None,
        after: tuple[float, str] | None = None,
        limit: int = 50,
    ) -> list[Run]:
        """Return one page of runs, newest first, read by keys rather than offsets.

        Args:
            status: Only runs in this status.
            flow: Only runs of this flow.
            search: Only runs whose id starts with this text.
            after: The ``(created_at, run_id)`` of the last run of the page before; the
                page holds the runs older than it. ``None``: the newest runs.
            limit: The most runs the page holds, 1 to 1000.

        Raises:
            ValueError: ``limit`` or ``after`` cannot be read.
        """
        ...

    async def count_runs_by_status(self) -> dict[str, int]:
        """Return how many runs the store holds in each status (statuses with none left out)."""
        ...

    async def update_run(self, run: Run, *, expected_version: int) -> Run | None:
        """Replace the run if its stored version is ``expected_version`` (compare-and-set).

        Returns:
            The stored run (its version one higher), or ``None`` when another writer won.
        """
        ...

    async def finish_run(
        self,
        run: Run,
        *,
        expected_version: int,
        records: Sequence[JournalRecord] = (),
        trace: dict[str, Any] | None = None,
    ) -> Run | None:
        """Compare-and-set the run and, in the same transaction, append its last journal
        records and store its trace: a run's outcome and its journal tail land together.

        Returns:
            The stored run (its version one higher), or ``None`` when another writer won (then
            nothing is written).
        """
        ...

    async def append(
        self, run_id: str, records: Sequence[JournalRecord], *, owner: str | None = None
    ) -> None:
        """Append journal records in order; with ``owner``, only while that owner holds the run.

        Raises:
            RunConflictError: ``owner`` no longer holds the run (another worker took it over).
        """
        ...

    async def load_journal(self, run_id: str) -> list[JournalRecord]:
        """Return the run's journal in append order."""
        ...

    async def save_trace(self, run_id: str, trace: dict[str, Any]) -> None:
        """Store the run's trace (replacing an earlier one)."""
        ...

    async def load_trace(self, run_id: str) -> dict[str, Any] | None:
        """Return the run's stored trace, or ``None``."""
        ...

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete runs with their journals and traces; return how many existed."""
        ...

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        keep_last: int | None = None,
        statuses: Sequence[RunStatus] = PRUNABLE,
        dry_run: bool = False,
    ) -> int:
        """Delete runs in ``statuses`` (with their journals and traces) and return how many.

        A run is deleted when every rule given holds for it: it finished more than
        ``older_than_s`` seconds ago, and it is not among the newest ``keep_last`` such runs
        (so ``keep_last`` protects the newest whatever their age); with no rule, nothing is.
        ``dry_run=True`` returns how many would be deleted and deletes nothing.

        Raises:
            ValueError: ``older_than_s`` is not a number >= 0, or ``keep_last`` not an integer
                >= 0; nothing is deleted.
        """
        ...

    async def close(self) -> None:
        """Release connections and files."""
        ...
