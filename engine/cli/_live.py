"""The live view of a run whose trace is not stored yet: its journal, as written so far.

A run's trace is stored when an execution ends, but its journal is written as the run goes:
each model call's reply, each pick, each finished step, each failed decision and retry. So
``engine show`` of a running run lists those records, in the order the run wrote them (its
keys' order), each with its key, kind, actor and a one-line summary, labelled as a partial
view: a model's pick is journaled with the write after it, so the newest pick may not be on
disk yet. Everything read from the store is plain text, never markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine.store import JournalRecord, Run

__all__ = ["live_view", "summarize"]

#: The longest summary shown for one record.
SUMMARY_CHARS = 120


def live_view(run: Run, records: Sequence[JournalRecord]) -> RenderableType:
    """Return what ``engine show`` prints of a run with no stored trace: its journal so far."""
    if not records:
        return Text(
            f"no trace stored for this run yet, and no journal record: run {run.run_id} is "
            f"{run.status} and has finished no node so far",
            style="dim",
        )
    if run.status == "running":
        head = (
            f"live view (partial): run {run.run_id} is running; its trace is stored when this "
            f"execution ends. The {len(records)} journal record(s) written so far:"
        )
    else:
        head = (
            f"no trace stored for this run; its journal holds {len(records)} record(s) "
            "(a partial view):"
        )
    table = Table(show_edge=False, pad_edge=False)
    for column in ("#", "key", "kind", "actor", "summary"):
        table.add_column(column, justify="right" if column == "#" else "left")
    for n, record in enumerate(records, 1):
        table.add_row(
            str(n),
            Text(record.key),
            Text(record.kind),
            Text(record.actor or ""),
            Text(summarize(record)),
        )
    return Group(Text(head, style="bold"), table)


def summarize(record: JournalRecord) -> str:
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
