"""One journal record as one short line: what was replied, picked, returned, asked.

A run's journal is written as it goes, while its trace is stored when an execution ends: the
live views of a running run (``engine show``, the inspector's run page) list its records with
these lines. The text is plain, never markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from engine.store import JournalRecord

__all__ = ["SUMMARY_CHARS", "journal_summary"]

#: The longest summary shown for one record.
SUMMARY_CHARS = 120


def journal_summary(record: JournalRecord) -> str:
    """Return one journal record as one short line (what was replied, picked, returned)."""
    data = record.data
    if record.kind == "step":
        text = f"returned {_json(data)}"
    elif isinstance(data, Mapping) and record.kind in _SUMMARIES:
        text = _SUMMARIES[record.kind](data)
    else:  # a kind of its own (a person's question, an approval): its data as JSON
        text = _json(data)
    return _short(" ".join(text.split()))


def _model(data: Mapping[str, Any]) -> str:
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        usage = {}
    tokens = f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tokens"
    calls = data.get("tool_calls") or []
    if calls:
        names = ", ".join(str(c.get("name")) for c in calls if isinstance(c, Mapping))
        return f"{tokens} · tool call(s): {names}"
    text = data.get("text")
    if text is None:
        return f"{tokens} · " + ("reply kept escaped" if "escaped_json" in data else "no text")
    return f"{tokens} · replied {text}"


def _pick(data: Mapping[str, Any]) -> str:
    args = data.get("args")
    text = f"→ {data.get('call')}"
    if args:
        text += f" {_json(args)}"
    attempts = data.get("attempts")
    return text + (f" in {attempts} attempt(s)" if attempts else " (by hand)")


def _failed(data: Mapping[str, Any]) -> str:
    return f"✗ {data.get('kind')}: {data.get('detail', '')}"


def _retry(data: Mapping[str, Any]) -> str:
    return f"{data.get('layer')} retry #{data.get('attempt')}: {data.get('kind')}"


_SUMMARIES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "model": _model,
    "pick": _pick,
    "decision_failed": _failed,
    "retry": _retry,
}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _short(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
