"""What every store does the same way: values kept as JSON, a run's next version, pruning.

Each store turns what it keeps into JSON text here, so a value that is not JSON is the same
:class:`~engine.JournalError` whichever store refuses it, and nothing of the write is stored;
it reads journal rows back, versions a run and picks what ``prune`` deletes here too.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pydantic_core

from engine._base import (
    ExportedTrace,
    JournalError,
    RunConflictError,
    RunNotFoundError,
    copy_model,
    unencodable,
)
from engine.store._types import JournalRecord, Run

__all__ = [
    "Entry",
    "check_fence",
    "check_prune",
    "journal_records",
    "next_version",
    "prune_victims",
    "record_entries",
    "record_json",
    "run_json",
    "trace_json",
]


#: A journal record as a store keeps it in memory, as a SQL store's row: key, kind,
#: fingerprint, actor, data as JSON, created_at.
Entry = tuple[str, str, str, str | None, str, float]


def record_entries(run_id: str, records: Sequence[JournalRecord]) -> list[Entry]:
    """Return each record as kept, its data as JSON; all or none (a ``JournalError``)."""
    return [
        (r.key, r.kind, r.fingerprint, r.actor, record_json(run_id, r), r.created_at)
        for r in records
    ]


def run_json(run: Run) -> str:
    """Return the run as JSON text.

    Raises:
        JournalError: The run holds a value that is not JSON.
    """
    # A run writes a float that is not finite as ``NaN`` (its model's config), which the
    # search of ``_encode`` finds: no value is stored changed to null.
    text = _encode(lambda: _text_of(run), run.model_dump, "run", run.run_id)
    # A run is read back by pydantic's parser, which refuses a document nested deeper than
    # its writer writes: a run stored so could never be read. Counting brackets bounds the
    # depth cheaply; only a run with that many is walked.
    if text.count("[") + text.count("{") > _RUN_DEPTH:
        problem = unencodable(run.model_dump(), max_depth=_RUN_DEPTH)
        if problem is not None:
            raise _not_json(f"run {run.run_id!r}", problem)
    return text


def _text_of(run: Run) -> str:
    """Return ``run.model_dump_json()``: its serializer's JSON, without the method's layers
    (every write of a run makes it)."""
    return type(run).__pydantic_serializer__.to_json(run).decode()


def record_json(run_id: str, record: JournalRecord) -> str:
    """Return a journal record's ``data`` as JSON text (a ``JournalError`` when it is not)."""
    data = record.data
    try:
        text = pydantic_core.to_json(data).decode()
    except pydantic_core.PydanticSerializationError as exc:
        what = f"journal record {record.key!r} of run {run_id!r}"
        raise _not_json(what, unencodable(data) or str(exc)) from exc
    if _suspect(text):
        problem = unencodable(data)
        if problem is not None:
            raise _not_json(f"journal record {record.key!r} of run {run_id!r}", problem)
    return text


def trace_json(run_id: str, trace: dict[str, Any]) -> str:
    """Return a run's trace as JSON text (a ``JournalError`` when it is not JSON)."""
    if type(trace) is ExportedTrace:
        text = _exported_json(trace)
        if text is not None:
            return text
    return _encode(
        lambda: pydantic_core.to_json(trace).decode(), lambda: trace, "the trace of run", run_id
    )


#: What orjson leaves to :func:`_unsupported`: the types it would write otherwise than
#: pydantic's encoder does (dates, dataclasses, subclasses of the JSON types).
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _unsupported(value: object) -> Any:
    raise TypeError(type(value).__name__)


def _exported_json(trace: ExportedTrace) -> str | None:
    """Return the JSON text of a trace the engine exported, as pydantic's encoder writes it
    (byte for byte: both write the shortest float that reads back, and text unescaped), in
    about a third of its time; ``None`` when the trace holds anything but JSON's own types,
    a key that is not text, an integer beyond 64 bits or a lone surrogate.

    orjson writes ``NaN`` and the infinities as ``null`` where pydantic's encoder writes
    them bare (and the stores refuse them): an exported trace holds none (see
    :class:`~engine._base.ExportedTrace`).
    """
    try:
        # A plain dict at the top: the subclass itself would be passed through to _unsupported.
        return orjson.dumps(dict(trace), default=_unsupported, option=_ORJSON_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError is one: the trace goes the long way
        return None


# What pydantic writes but JSON readers refuse or misread: the bare constants it writes for
# a float that is not finite, and integers longer than Python reads back (4,300 digits).
_LONG_NUMBER = re.compile(r"[0-9]{4300}")


def _suspect(text: str) -> bool:
    """Whether ``text`` may hold what a JSON reader refuses (substring tests first: in C)."""
    return (
        "NaN" in text
        or "Infinity" in text
        or (len(text) >= 4300 and _LONG_NUMBER.search(text) is not None)
    )


#: The deepest nesting of a run's JSON (the run's own object included) that reads back.
_RUN_DEPTH = 200


def _encode(encode: Callable[[], str], data: Callable[[], Any], what: str, name: str) -> str:
    """Encode with ``encode``; refuse, naming the value (``what`` and its ``name``) and its
    path, what cannot be read back.

    The text is only searched for what a reader would refuse; the data is walked (to say
    where) only when something is found, so a good write costs one search of its text.
    """
    try:
        text = encode()
    except pydantic_core.PydanticSerializationError as exc:
        raise _not_json(f"{what} {name!r}", unencodable(data()) or str(exc)) from exc
    if _suspect(text):
        problem = unencodable(data())
        if problem is not None:
            raise _not_json(f"{what} {name!r}", problem)
    return text


def journal_records(rows: Sequence[Sequence[Any]]) -> list[JournalRecord]:
    """Return the records of journal rows ``(key, kind, fingerprint, actor, data, created_at)``,
    ``data`` as JSON text."""
    return [
        JournalRecord(
            key=key,
            kind=kind,
            fingerprint=fingerprint,
            actor=actor,
            data=json.loads(data),
            created_at=created_at,
        )
        for key, kind, fingerprint, actor, data, created_at in rows
    ]


def next_version(run: Run, expected_version: int) -> Run:
    """Return what a compare-and-set from ``expected_version`` stores: one version higher, now.

    A shallow copy: a store serialises it before anyone could change it, and the caller
    gets a new object either way.
    """
    return copy_model(run, {"version": expected_version + 1, "updated_at": time.time()})


def check_fence(run_id: str, owner: str | None, *, exists: bool, holder: str | None) -> None:
    """Refuse an append to a run that does not exist, or that ``owner`` (when given) lost.

    Raises:
        RunNotFoundError: The run does not exist (a ``KeyError``).
        RunConflictError: ``owner`` no longer holds the run (``holder`` does).
    """
    if not exists:
        raise RunNotFoundError(run_id)
    if owner is not None and holder != owner:
        raise RunConflictError(
            f"run {run_id!r} is now owned by {holder!r}, not {owner!r}; this worker "
            "lost it and must stop writing",
            run_id=run_id,
        )


def check_prune(older_than_s: object, keep_last: object) -> None:
    """Refuse prune rules that would delete what the caller did not mean to.

    Raises:
        ValueError: ``older_than_s`` is not a number >= 0, or ``keep_last`` not an integer
            >= 0 (a negative ``keep_last`` would keep no run at all).
    """
    if older_than_s is not None and (
        isinstance(older_than_s, bool)
        or not isinstance(older_than_s, int | float)
        or math.isnan(older_than_s)
        or older_than_s < 0
    ):
        raise ValueError(
            f"older_than_s must be a number >= 0 (seconds), or None, got {older_than_s!r}"
        )
    if keep_last is not None and (
        isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0
    ):
        raise ValueError(f"keep_last must be an integer >= 0, or None, got {keep_last!r}")


def prune_victims(
    runs: Sequence[Run],
    *,
    older_than_s: float | None,
    keep_last: int | None,
    now: float | None = None,
) -> list[str]:
    """Return the ids of ``runs`` that ``prune`` deletes, newest first (the stores' one rule).

    ``runs`` are the runs in the statuses being pruned, in any order; the newest is the one
    that finished last (``finished_at``, else ``updated_at``; ties by id). A run goes when
    every rule given holds for it: it finished more than ``older_than_s`` seconds ago, and
    it is not among the newest ``keep_last``. So ``keep_last`` protects the newest whatever
    their age, and ``older_than_s`` protects the recent ones beyond them; with no rule,
    nothing goes.
    """
    if older_than_s is None and keep_last is None:
        return []
    clock = time.time() if now is None else now
    newest_first = sorted(runs, key=lambda r: (r.finished_at or r.updated_at, r.run_id))[::-1]
    doomed: list[str] = []
    for index, run in enumerate(newest_first):
        finished = run.finished_at or run.updated_at
        too_old = older_than_s is None or clock - finished > older_than_s
        beyond = keep_last is None or index >= keep_last
        if too_old and beyond:
            doomed.append(run.run_id)
    return doomed


def _not_json(what: str, problem: str) -> JournalError:
    return JournalError(
        f"{what} holds a value that is not JSON: {problem}; nothing of this write was stored"
    )
