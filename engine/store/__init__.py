"""Stores for runs, journals and traces: one protocol, several backends."""

from engine.store._checks import prune_victims
from engine.store._memory import MemoryStore
from engine.store._postgres import PostgresStore
from engine.store._sqlite import Durability, SQLiteStore
from engine.store._types import (
    FINISHED,
    PRUNABLE,
    JournalKind,
    JournalRecord,
    Run,
    RunErrorInfo,
    RunStatus,
    Store,
    TokenUsage,
)

__all__ = [
    "FINISHED",
    "PRUNABLE",
    "Durability",
    "JournalKind",
    "JournalRecord",
    "MemoryStore",
    "PostgresStore",
    "Run",
    "RunErrorInfo",
    "RunStatus",
    "SQLiteStore",
    "Store",
    "TokenUsage",
    "prune_victims",
]
