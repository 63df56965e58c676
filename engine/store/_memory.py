"""A store in process memory: for tests and for runs that need not survive the process."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from engine.store._checks import (
    check_fence,
    check_prune,
    next_version,
    prune_victims,
    record_json,
    run_json,
    trace_json,
)
from engine.store._paging import PageKey, check_page, count_in_memory, page_in_memory
from engine.store._types import PRUNABLE, JournalRecord, Run, RunStatus

__all__ = ["MemoryStore"]


class MemoryStore:
    """Keep runs, journals and traces in dicts. Safe on one event loop (no awaits inside).

    It checks what the SQL stores check: every value is kept as JSON (a value that is not
    JSON is a :class:`~engine.JournalError` and nothing of the write is kept), what comes back
    is the JSON form of what went in, never an object the caller or the store still holds,
    and a closed store refuses every call.
    """

    def __init__(self) -> None:
        #: Runs as read back from their JSON, copied on the way out.
        self._runs: dict[str, Run] = {}
        #: Each record without its data, and its data as JSON text.
        self._journals: dict[str, list[tuple[JournalRecord, str]]] = {}
        self._traces: dict[str, str] = {}
        self._closed = False

    def __repr__(self) -> str:
        return "MemoryStore()"

    async def create_run(self, run: Run) -> tuple[Run, bool]:
        """Insert ``run`` unless its id exists; return the stored run and whether it was new."""
        self._check_open()
        stored = _stored(run)
        existing = self._runs.get(run.run_id)
        if existing is not None:
            return existing.model_copy(deep=True), False
        self._runs[run.run_id] = stored
        self._journals[run.run_id] = []
        return run.model_copy(), True

    async def get_run(self, run_id: str) -> Run | None:
        """Return a copy of the run, or ``None``."""
        self._check_open()
        run = self._runs.get(run_id)
        return run.model_copy(deep=True) if run is not None else None

    async def list_runs(
        self, *, status: RunStatus | None = None, flow: str | None = None, limit: int | None = None
    ) -> list[Run]:
        """Return runs oldest first, optionally filtered."""
        self._check_open()
        runs = [
            r
            for r in sorted(self._runs.values(), key=lambda r: (r.created_at, r.run_id))
            if (status is None or r.status == status) and (flow is None or r.flow == flow)
        ]
        return [r.model_copy(deep=True) for r in runs[:limit]]

    async def page_runs(
        self,
        *,
        status: RunStatus | None = None,
        flow: str | None = None,
        search: str | None = None,
        after: PageKey | None = None,
        limit: int = 50,
    ) -> list[Run]:
        """Return a page of runs, newest first; see :meth:`engine.store.Store.page_runs`."""
        check_page(after, limit)
        self._check_open()
        return page_in_memory(self._runs.values(), status, flow, search, after, limit)

    async def count_runs_by_status(self) -> dict[str, int]:
        """Return how many runs the store holds in each status."""
        self._check_open()
        return count_in_memory(self._runs.values())

    async def update_run(self, run: Run, *, expected_version: int) -> Run | None:
        """Compare-and-set on the run's version."""
        self._check_open()
        new = next_version(run, expected_version)
        stored = _stored(new)
        current = self._runs.get(run.run_id)
        if current is None or current.version != expected_version:
            return None
        self._runs[run.run_id] = stored
        return new

    async def finish_run(
        self,
        run: Run,
        *,
        expected_version: int,
        records: Sequence[JournalRecord] = (),
        trace: dict[str, Any] | None = None,
    ) -> Run | None:
        """Compare-and-set the run, then append ``records`` and store ``trace`` with it."""
        self._check_open()
        entries = _entries(run.run_id, records)
        body = None if trace is None else trace_json(run.run_id, trace)
        stored = await self.update_run(run, expected_version=expected_version)
        if stored is None:
            return None
        self._journals[run.run_id].extend(entries)
        if body is not None:
            self._traces[run.run_id] = body
        return stored

    async def append(
        self, run_id: str, records: Sequence[JournalRecord], *, owner: str | None = None
    ) -> None:
        """Append records, fenced by ``owner`` when given.

        Raises:
            RunNotFoundError: The run does not exist (a ``KeyError``).
            RunConflictError: ``owner`` no longer holds the run (another worker took it over).
            JournalError: A record's ``data`` is not JSON (no record of the call is kept).
        """
        self._check_open()
        entries = _entries(run_id, records)
        run = self._runs.get(run_id)
        check_fence(
            run_id, owner, exists=run is not None, holder=None if run is None else run.owner
        )
        self._journals[run_id].extend(entries)

    async def load_journal(self, run_id: str) -> list[JournalRecord]:
        """Return the journal in append order."""
        self._check_open()
        return [
            record.model_copy(update={"data": json.loads(data)})
            for record, data in self._journals.get(run_id, [])
        ]

    async def save_trace(self, run_id: str, trace: dict[str, Any]) -> None:
        """Store the run's trace."""
        self._check_open()
        self._traces[run_id] = trace_json(run_id, trace)

    async def load_trace(self, run_id: str) -> dict[str, Any] | None:
        """Return the run's trace, or ``None``."""
        self._check_open()
        body = self._traces.get(run_id)
        return cast(dict[str, Any], json.loads(body)) if body is not None else None

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete runs with their journals and traces."""
        self._check_open()
        count = 0
        for run_id in run_ids:
            if self._runs.pop(run_id, None) is not None:
                count += 1
            self._journals.pop(run_id, None)
            self._traces.pop(run_id, None)
        return count

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        keep_last: int | None = None,
        statuses: Sequence[RunStatus] = PRUNABLE,
        dry_run: bool = False,
    ) -> int:
        """Delete old finished runs; see :meth:`engine.store.Store.prune`."""
        check_prune(older_than_s, keep_last)
        self._check_open()
        done = [r for r in self._runs.values() if r.status in statuses]
        doomed = prune_victims(done, older_than_s=older_than_s, keep_last=keep_last)
        return len(doomed) if dry_run else await self.delete_runs(doomed)

    async def close(self) -> None:
        """Drop everything kept; every later call raises. Idempotent."""
        self._closed = True
        self._runs, self._journals, self._traces = {}, {}, {}

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new store (its runs went with it)")


def _stored(run: Run) -> Run:
    """Return the run as a store reads it back: from its JSON (a ``JournalError`` if none)."""
    return Run.model_validate_json(run_json(run))


def _entries(run_id: str, records: Sequence[JournalRecord]) -> list[tuple[JournalRecord, str]]:
    """Return each record without its data, beside its data as JSON; all or none."""
    return [(r.model_copy(update={"data": None}), record_json(run_id, r)) for r in records]
