"""What every store checks the same way: every value it keeps is JSON.

Each store turns what it keeps into JSON text here, so a value that is not JSON is the same
:class:`~engine.JournalError` whichever store refuses it, and nothing of the write is stored.
"""

from __future__ import annotations

from typing import Any

import pydantic_core

from engine._errors import JournalError
from engine.store._types import JournalRecord, Run

__all__ = ["record_json", "run_json", "trace_json"]


def run_json(run: Run) -> str:
    """Return the run as JSON text.

    Raises:
        JournalError: The run holds a value that is not JSON.
    """
    try:
        return run.model_dump_json()
    except pydantic_core.PydanticSerializationError as exc:
        raise _not_json(f"run {run.run_id!r}", exc) from exc


def record_json(run_id: str, record: JournalRecord) -> str:
    """Return a journal record's ``data`` as JSON text (a ``JournalError`` when it is not)."""
    try:
        return pydantic_core.to_json(record.data).decode()
    except pydantic_core.PydanticSerializationError as exc:
        raise _not_json(f"journal record {record.key!r} of run {run_id!r}", exc) from exc


def trace_json(run_id: str, trace: dict[str, Any]) -> str:
    """Return a run's trace as JSON text (a ``JournalError`` when it is not JSON)."""
    try:
        return pydantic_core.to_json(trace).decode()
    except pydantic_core.PydanticSerializationError as exc:
        raise _not_json(f"the trace of run {run_id!r}", exc) from exc


def _not_json(what: str, exc: Exception) -> JournalError:
    return JournalError(f"{what} holds a value that is not JSON: {exc}")
