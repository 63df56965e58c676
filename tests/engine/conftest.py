"""Fixtures shared by the engine tests: each store a test runs on, and clean flow state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import support_flows as sf

from engine.store import MemoryStore, SQLiteStore, Store


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """Each test that asks for a store runs on every embedded store."""
    s: Store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "runs.db")
    yield s
    await s.close()


@pytest.fixture(autouse=True)
def _reset_flows() -> None:
    sf.EFFECTS.clear()
    sf.BROKEN["value"] = False
    sf.MENU["value"] = ["a", "b"]
