"""A store in process memory: for tests and for runs that need not survive the process."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from engine._base import copy_model
from engine.store._checks import (
    Entry,
    check_fence,
    check_prune,
    journal_records,
    next_version,
    prune_victims,
    record_entries,
    run_json,
    trace_json,
)
from engine.store._paging import PageKey, check_page, page_in_memory
from engine.store._types import PRUNABLE, JournalRecord, Run, RunStatus

__all__ = ["MemoryStore"]


class MemoryStore:
    """Keep runs, journals and traces in dicts. Safe on one event loop (no awaits inside).

    It checks what the SQL stores check: every value is kept as JSON (a value that is not
    JSON is a :class:`~engine.JournalError` and nothing of the write is kept), what comes back
    is the JSON form of what went in, never an object the caller or the store still holds,
    and a closed store refuses every call.

    What it keeps is text, as a file would: each run as its JSON beside the few fields its
    writes compare (status, flow, version, owner), each journal record as a tuple of strings
    and numbers. So a store of many finished runs holds few objects for the garbage collector
    to walk, and a read builds fresh objects from the text.
    """

    #: Every write is done before its coroutine first waits (there is nothing to wait for),
    #: so a caller being cancelled cannot cut one short: writers need no shield around it.
    writes_at_once = True
    #: So every write lands whoever waits for it (see ``SQLiteStore.writes_land``).
    writes_land = True

    def __init__(self) -> None:
        #: Each run as JSON text, and its ``(status, flow, version, owner)``.
        self._runs: dict[str, str] = {}
        self._index: dict[str, tuple[str, str, int, str | None]] = {}
        #: Each record as ``(key, kind, fingerprint, actor, data as JSON, created_at)``.
        self._journals: dict[str, list[Entry]] = {}
        self._traces: dict[str, str] = {}
        self._closed = False

    def __repr__(self) -> str:
        return "MemoryStore()"

    async def create_run(self, run: Run) -> tuple[Run, bool]:
        """Insert ``run`` unless its id exists; return the stored run and whether it was new."""
        self._check_open()
        text = run_json(run)
        existing = self._runs.get(run.run_id)
        if existing is not None:
            return Run.model_validate_json(existing), False
        self._keep(run, text)
        self._journals[run.run_id] = []
        return copy_model(run, {}), True

    async def get_run(self, run_id: str) -> Run | None:
        """Return a copy of the run, or ``None``."""
        self._check_open()
        text = self._runs.get(run_id)
        return Run.model_validate_json(text) if text is not None else None

    async def list_runs(
        self, *, status: RunStatus | None = None, flow: str | None = None, limit: int | None = None
    ) -> list[Run]:
        """Return runs oldest first, optionally filtered."""
        self._check_open()
        runs = sorted(self._read(status, flow), key=lambda r: (r.created_at, r.run_id))
        return runs[:limit]

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
        return page_in_memory(self._read(status, flow), status, flow, search, after, limit)

    async def count_runs_by_status(self) -> dict[str, int]:
        """Return how many runs the store holds in each status."""
        self._check_open()
        counts: dict[str, int] = {}
        for run_status, _, _, _ in self._index.values():
            counts[run_status] = counts.get(run_status, 0) + 1
        return counts

    async def update_run(self, run: Run, *, expected_version: int) -> Run | None:
        """Compare-and-set on the run's version."""
        self._check_open()
        return self._compare_and_set(run, expected_version)

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
        entries = record_entries(run.run_id, records)
        body = None if trace is None else trace_json(run.run_id, trace)
        # Every record and the trace are encoded (checked) before anything is kept.
        new = self._compare_and_set(run, expected_version)
        if new is None:
            return None
        self._journals[run.run_id].extend(entries)
        if body is not None:
            self._traces[run.run_id] = body
        return new

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
        entries = record_entries(run_id, records)
        row = self._index.get(run_id)
        check_fence(run_id, owner, exists=row is not None, holder=None if row is None else row[3])
        self._journals[run_id].extend(entries)

    async def load_journal(self, run_id: str) -> list[JournalRecord]:
        """Return the journal in append order."""
        self._check_open()
        return journal_records(self._journals.get(run_id, []))

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
            self._index.pop(run_id, None)
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
        done = [r for status in set(statuses) for r in self._read(status, None)]
        doomed = prune_victims(done, older_than_s=older_than_s, keep_last=keep_last)
        return len(doomed) if dry_run else await self.delete_runs(doomed)

    async def close(self) -> None:
        """Drop everything kept; every later call raises. Idempotent."""
        self._closed = True
        self._runs, self._index, self._journals, self._traces = {}, {}, {}, {}

    def _compare_and_set(self, run: Run, expected_version: int) -> Run | None:
        """Keep ``run``'s next version if the stored one is ``expected_version``; return it."""
        new = next_version(run, expected_version)
        text = run_json(new)
        current = self._index.get(run.run_id)
        if current is None or current[2] != expected_version:
            return None
        self._keep(new, text)
        return new

    def _keep(self, run: Run, text: str) -> None:
        self._runs[run.run_id] = text
        self._index[run.run_id] = (run.status, run.flow, run.version, run.owner)

    def _read(self, status: str | None, flow: str | None) -> list[Run]:
        """Return the runs of ``status`` and ``flow`` (any when ``None``), read from their JSON."""
        return [
            Run.model_validate_json(self._runs[run_id])
            for run_id, (run_status, run_flow, _, _) in self._index.items()
            if (status is None or run_status == status) and (flow is None or run_flow == flow)
        ]

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed; open a new store (its runs went with it)")
