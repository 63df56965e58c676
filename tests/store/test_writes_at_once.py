"""A store that says its writes are done at once keeps that promise: no write ever waits.

Writers skip the shield around such a store's writes (a cancel can only arrive while a
coroutine waits), so a write that waited could be cut short: each one is driven here by
hand, and must finish on its first step.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from typing import Any

import pytest

from engine.store import JournalRecord, MemoryStore, Run


def at_once(call: Coroutine[Any, Any, Any]) -> Any:
    """Run ``call`` one step; fail if it waits instead of finishing."""
    try:
        call.send(None)
    except StopIteration as done:
        return done.value
    call.close()
    pytest.fail("the write waited, though its store says its writes are done at once")


def test_every_write_of_the_memory_store_is_done_before_it_could_wait() -> None:
    store = MemoryStore()
    assert store.writes_at_once is True
    assert store.writes_land is True  # what is done at once lands, so it needs no shield
    now = time.time()
    run = Run(run_id="r", flow="m:f", status="running", owner="me", lease_expires_at=now + 60)
    stored, created = at_once(store.create_run(run))
    assert created
    record = JournalRecord(key="k", kind="model", data={"text": "hi"})
    at_once(store.append("r", [record], owner="me"))
    renewed = at_once(store.update_run(stored, expected_version=stored.version))
    done = renewed.model_copy(update={"status": "completed"})
    assert at_once(store.finish_run(done, expected_version=renewed.version, trace={"nodes": []}))
    assert [r.key for r in at_once(store.load_journal("r"))] == ["k"]
