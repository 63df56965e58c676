"""A store in process memory: for tests and for runs that need not survive the process."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from engine._errors import RunConflictError
from engine.store._types import PRUNABLE, JournalRecord, Run, RunStatus

__all__ = ["MemoryStore"]


class MemoryStore:
    """Keep runs, journals and traces in dicts. Safe on one event loop (no awaits inside)."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self._journals: dict[str, list[JournalRecord]] = {}
        self._traces: dict[str, dict[str, Any]] = {}

    async def create_run(self, run: Run) -> tuple[Run, bool]:
        """Insert ``run`` unless its id exists; return the stored run and whether it was new."""
        existing = self._runs.get(run.run_id)
        if existing is not None:
            return existing.model_copy(deep=True), False
        self._runs[run.run_id] = run.model_copy(deep=True)
        self._journals[run.run_id] = []
        return run.model_copy(deep=True), True

    async def get_run(self, run_id: str) -> Run | None:
        """Return a copy of the run, or ``None``."""
        run = self._runs.get(run_id)
        return run.model_copy(deep=True) if run is not None else None

    async def list_runs(
        self, *, status: RunStatus | None = None, flow: str | None = None, limit: int | None = None
    ) -> list[Run]:
        """Return runs oldest first, optionally filtered."""
        runs = [
            r.model_copy(deep=True)
            for r in sorted(self._runs.values(), key=lambda r: (r.created_at, r.run_id))
            if (status is None or r.status == status) and (flow is None or r.flow == flow)
        ]
        return runs[:limit] if limit is not None else runs

    async def update_run(self, run: Run, *, expected_version: int) -> Run | None:
        """Compare-and-set on the run's version."""
        stored = self._runs.get(run.run_id)
        if stored is None or stored.version != expected_version:
            return None
        new = run.model_copy(
            deep=True, update={"version": expected_version + 1, "updated_at": time.time()}
        )
        self._runs[run.run_id] = new
        return new.model_copy(deep=True)

    async def finish_run(
        self,
        run: Run,
        *,
        expected_version: int,
        records: Sequence[JournalRecord] = (),
        trace: dict[str, Any] | None = None,
    ) -> Run | None:
        """Compare-and-set the run, then append ``records`` and store ``trace`` with it."""
        stored = await self.update_run(run, expected_version=expected_version)
        if stored is None:
            return None
        self._journals[run.run_id].extend(r.model_copy() for r in records)
        if trace is not None:
            self._traces[run.run_id] = trace
        return stored

    async def append(
        self, run_id: str, records: Sequence[JournalRecord], *, owner: str | None = None
    ) -> None:
        """Append records, fenced by ``owner`` when given."""
        run = self._runs.get(run_id)
        if run is None:
            raise KeyError(f"unknown run {run_id!r}")
        if owner is not None and run.owner != owner:
            raise RunConflictError(
                f"run {run_id!r} is now owned by {run.owner!r}, not {owner!r}; this worker "
                "lost it and must stop writing",
                run_id=run_id,
            )
        self._journals[run_id].extend(r.model_copy() for r in records)

    async def load_journal(self, run_id: str) -> list[JournalRecord]:
        """Return the journal in append order."""
        return [r.model_copy() for r in self._journals.get(run_id, [])]

    async def save_trace(self, run_id: str, trace: dict[str, Any]) -> None:
        """Store the run's trace."""
        self._traces[run_id] = trace

    async def load_trace(self, run_id: str) -> dict[str, Any] | None:
        """Return the run's trace, or ``None``."""
        return self._traces.get(run_id)

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete runs with their journals and traces."""
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
    ) -> int:
        """Delete old finished runs; see :meth:`engine.store.Store.prune`."""
        done = sorted(
            (r for r in self._runs.values() if r.status in statuses),
            key=lambda r: (r.finished_at or r.updated_at, r.run_id),
            reverse=True,
        )
        doomed = prune_victims(done, older_than_s=older_than_s, keep_last=keep_last)
        return await self.delete_runs(doomed)

    async def close(self) -> None:
        """Nothing to release."""


def prune_victims(
    newest_first: Sequence[Run], *, older_than_s: float | None, keep_last: int | None
) -> list[str]:
    """Return the ids ``prune`` deletes from finished runs sorted newest first."""
    now = time.time()
    doomed: list[str] = []
    for index, run in enumerate(newest_first):
        finished = run.finished_at or run.updated_at
        too_old = older_than_s is not None and now - finished > older_than_s
        beyond = keep_last is not None and index >= keep_last
        if too_old or beyond:
            doomed.append(run.run_id)
    return doomed
