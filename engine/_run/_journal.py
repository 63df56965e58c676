"""The journal of one run: its records by key for replay, and the writes that extend it.

Every record sits under its node's deterministic key with a fingerprint of what was asked.
A durable record is handed to the store before anything awaits it; a record that can be
re-derived when lost (a model's pick, a retry attempt) rides with the next write instead of
costing a commit of its own.
"""

from __future__ import annotations

import re
from typing import Any

from engine._base import JournalError, cancel_scope
from engine._retries import RetryLedger
from engine.store import JournalKind, JournalRecord, Store

__all__ = ["Journal", "ledger_of"]

# A branch of engine.gather/map in a key: its index, then its counter (``2:0``).
_BRANCH = re.compile(r"\d+:\d+")


class Journal:
    """The records of one run, by kind and key, and the writes that add to them.

    Only the records loaded (those of earlier executions) are kept by key: a key is met once
    in an execution, so what this execution writes is never looked up again, and is not held
    while the run goes on.

    Args:
        run_id: The run the records belong to.
        store: Where they are written.
        records: The journal as loaded (empty for a fresh run).
        owner: The owner the store fences every write by.
        ledger: The run's retry ledger: its fresh attempts ride with the next write.
    """

    __slots__ = (
        "_caught",
        "_failures",
        "_lands",
        "_pending",
        "_records",
        "ledger",
        "owner",
        "run_id",
        "store",
    )

    def __init__(
        self,
        run_id: str,
        store: Store,
        records: list[JournalRecord],
        *,
        owner: str | None,
        ledger: RetryLedger,
    ) -> None:
        self.run_id = run_id
        self.store = store
        #: Whether the store's writes land whoever waits for them (``MemoryStore``,
        #: ``SQLiteStore``): no cancel can lose one, so none needs a shield.
        self._lands = getattr(store, "writes_land", False) is True
        self.owner = owner
        self.ledger = ledger
        self._records: dict[tuple[str, str], JournalRecord] = {}
        self._failures: dict[str, int] = {}
        self._pending: list[JournalRecord] = []
        last_failure: dict[str, int] = {}
        for index, record in enumerate(records):
            self._records[(record.kind, record.key)] = record
            if record.kind == "decision_failed":
                self._failures[record.key] = self._failures.get(record.key, 0) + 1
                last_failure[record.key] = index
        # A failure the flow caught and moved past (records of other nodes follow it) is part
        # of the run's history and replays as a failure; one that stopped the run is asked
        # afresh. The records of an ask afresh (keys ``key@1/...``) are not moving past it.
        self._caught = {
            k
            for k, i in last_failure.items()
            if any(r.kind != "retry" and _moved_past(k, r.key) for r in records[i + 1 :])
        }

    def get(self, kind: JournalKind, key: str) -> JournalRecord | None:
        """Return the record of ``kind`` under ``key``, if the journal holds one."""
        return self._records.get((kind, key))

    def failures(self, key: str) -> int:
        """Return how many times the decision at ``key`` failed in earlier executions."""
        return self._failures.get(key, 0)

    def caught(self, key: str) -> bool:
        """Tell whether the flow caught the failure at ``key`` and went on past it."""
        return key in self._caught

    def ride(self, record: JournalRecord) -> None:
        """Keep ``record`` to ride with the next write (it can be re-derived if lost)."""
        self._pending.append(record)

    def take_pending(self) -> list[JournalRecord]:
        """Hand over the records still waiting for a write to ride with (the run's end)."""
        pending, self._pending = self._pending, []
        if self.ledger.fresh:
            pending.extend(self._retries())
        return pending

    def _retries(self) -> list[JournalRecord]:
        return [
            JournalRecord.trusted(
                event.key,
                "retry",
                "",
                event.layer,
                {
                    "layer": event.layer,
                    "attempt": event.attempt,
                    "kind": event.kind,
                    "message": event.message,
                },
            )
            for event in self.ledger.take()
        ]

    async def write(self, record: JournalRecord) -> None:
        """Append ``record`` after the records waiting to ride with a write, and see it land."""
        batch = self.take_pending()
        batch.append(record)
        try:
            if self._lands:  # no cancel can lose it: it needs no shield
                await self.store.append(self.run_id, batch, owner=self.owner)
            else:
                # The records must land even when the run is being cancelled: shield the
                # write. The store bounds it (SQLite's busy timeout, a database statement
                # timeout), so a stuck store raises instead of hanging the cancellation.
                with cancel_scope(shield=True):
                    await self.store.append(self.run_id, batch, owner=self.owner)
        except JournalError:
            # A value the store cannot carry: nothing of the write was stored, so the records
            # that rode with it wait for the next write again.
            self._pending[:0] = batch[:-1]
            raise


def _moved_past(failure: str, later: str) -> bool:
    """Tell whether a record at ``later``, after a failure at ``failure``, shows the flow
    went on past it: not the failure's own ask afresh (``key@1/...``), and not a sibling
    branch of a gather (its work goes on while the failing branch stops the run).
    """
    if later == failure or later.startswith(f"{failure}@"):
        return False
    for mine, theirs in zip(failure.split("/"), later.split("/"), strict=False):
        if mine != theirs:
            return not (_BRANCH.fullmatch(mine) and _BRANCH.fullmatch(theirs))
    return True


def ledger_of(journal: list[JournalRecord]) -> list[dict[str, Any]]:
    """Return the retry ledger a journal holds: one entry per retry attempt, oldest first."""
    return [
        {**r.data, "key": r.key, "at": r.created_at}
        for r in journal
        if r.kind == "retry" and isinstance(r.data, dict)
    ]
