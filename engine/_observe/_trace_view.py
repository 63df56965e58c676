"""A stored trace as a tree a person reads: what each node did, what it cost, how long it took.

Stored traces are the dicts :meth:`Trace.to_dict` exports (what :meth:`Engine.trace`
returns). :func:`trace_lines` turns one into lines with a depth, a kind and a status, so
a terminal front end can style them; :func:`render_trace` draws the plain-text tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine._base import StoredNode
from engine._observe._stored import data_of, executions

__all__ = ["TraceLine", "render_trace", "trace_lines", "usd"]

_REPLY_CHARS = 60
_OK = frozenset({"ok", "running", "waiting"})


@dataclass(frozen=True, slots=True)
class TraceLine:
    """One node of a trace as a line: its depth in the tree, kind, status and text."""

    depth: int
    kind: str
    status: str
    text: str

    @property
    def failed(self) -> bool:
        """Whether the node ended in an error."""
        return self.status not in _OK


def trace_lines(trace: Mapping[str, Any]) -> list[TraceLine]:
    """Return the nodes of a stored trace as lines, depth first, in opening order.

    A resumed run's earlier executions come first, each a tree of its own.
    """
    return [
        TraceLine(depth, str(node.get("kind", "?")), str(node.get("status", "?")), describe(node))
        for execution in executions(trace)
        for node, depth in execution.walk()
    ]


def render_trace(trace: Mapping[str, Any]) -> str:
    """Return a stored trace as a plain-text tree, one node a line."""
    lines = trace_lines(trace)
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.depth == 0:
            out.append(line.text)
            continue
        last = all(other.depth != line.depth for other in _until_shallower(lines, i, line.depth))
        rails = "".join("   " if _closed(lines, i, d) else "│  " for d in range(1, line.depth))
        out.append(f"{rails}{'└─ ' if last else '├─ '}{line.text}")
    return "\n".join(out)


def _until_shallower(lines: Sequence[TraceLine], index: int, depth: int) -> Iterator[TraceLine]:
    """Yield the lines after ``index`` up to the next one shallower than ``depth``."""
    for other in lines[index + 1 :]:
        if other.depth < depth:
            return
        yield other


def _closed(lines: Sequence[TraceLine], index: int, depth: int) -> bool:
    """Whether the ancestor at ``depth`` of line ``index`` has no later sibling."""
    for other in lines[index + 1 :]:
        if other.depth < depth:
            return True
        if other.depth == depth:
            return False
    return True


# -- one line per node kind -------------------------------------------------------------------


def describe(node: StoredNode) -> str:
    """Return the one-line description of a trace node."""
    kind = str(node.get("kind"))
    text = _DESCRIBE.get(kind, _generic)(node)
    data = data_of(node)
    if data.get("replayed"):
        text += " (replayed)"
    status = node.get("status")
    if status not in _OK and kind != "decision":
        text += f" ✗ {data.get('error', status)}"
    elif status == "waiting" and kind != "decision":
        text += " ⏸ waiting"
    return f"{text}{_duration(node)}"


def _run(node: StoredNode) -> str:
    # describe() marks a run that did not complete with how it ended (suspended, error).
    return f"run {node.get('name')}"


def _frame(node: StoredNode) -> str:
    return f"{node.get('name')}()"


def _decision(node: StoredNode) -> str:
    data = data_of(node)
    offered = f"[{', '.join(map(str, data.get('options', [])))}]"
    name = node.get("name")
    if name not in (None, "decision"):  # decision.make(..., name="classify")
        offered = f"{name} {offered}"
    attempts = data.get("attempts")
    failures = data.get("failures") or []
    tail = f"; failed attempts: {', '.join(map(str, failures))}" if failures else ""
    if node.get("status") == "ok" and "pick" in data:
        args = data.get("args")
        shown = "" if args in (None, "{}", {}) else f" {args}"
        who = "by hand" if attempts == 0 else f"in {attempts} attempt(s)"
        return f"decision {offered} → {data['pick']}{shown} {who}{tail}"
    if node.get("status") == "waiting":  # a human step, or a model's pick to approve
        who = "pick" if data.get("by") == "human" else "approval of the model's pick"
        return f"decision {offered} ⏸ waiting for a person's {who}"
    error = data.get("error", node.get("status"))
    return f"decision {offered} ✗ {error} after {attempts or '?'} attempt(s){tail}"


def _model_call(node: StoredNode) -> str:
    data = data_of(node)
    usage: Mapping[str, int] = node.get("usage") or {}
    if node.get("kind") == "repick":
        parts = [f"re-pick #{data.get('attempt', 1)}"]
    else:
        # A turn with tools makes several calls: number them by their key, not the attempt.
        number = str(node.get("key", "")).rpartition(":")[2]
        parts = [f"model call #{number if number.isdigit() else data.get('attempt', 0)}"]
    if data.get("model"):
        parts.append(str(data["model"]))
    if usage:
        parts.append(f"{usage.get('input_tokens', 0)}→{usage.get('output_tokens', 0)} tokens")
    if isinstance(data.get("cost_usd"), int | float):
        parts.append(usd(data["cost_usd"]))
    if data.get("failure"):
        reply = str(data.get("reply", ""))[:_REPLY_CHARS].replace("\n", " ")
        parts.append(f"✗ {data['failure']}: {reply!r}")
    return " ".join(parts)


def usd(value: float | None) -> str:
    """Show dollars as ``$0.0123`` (small sums to their first digits); unknown as ``—``."""
    if value is None:
        return "—"
    if value >= 1 or value == 0:
        return f"${value:,.2f}"
    text = f"{value:.4f}" if value >= 0.01 else f"{value:.9f}"
    text = text.rstrip("0").ljust(4, "0")  # at least cents
    return f"${text}" if value >= 1e-9 else "<$0.000000001"


def _step(node: StoredNode) -> str:
    data = data_of(node)
    result = f" → {data['result']}" if "result" in data else ""
    return f"step {node.get('name')}{result}"


def _tool_call(node: StoredNode) -> str:
    data = data_of(node)
    args = f"({data['args']})" if "args" in data else "()"
    result = f" → {data['result']}" if "result" in data else ""
    return f"tool {node.get('name')}{args}{result}"


def _branch(node: StoredNode) -> str:
    return f"branch {node.get('name')}"


def _retry(node: StoredNode) -> str:
    data = data_of(node)
    what = " ".join(str(data[k]) for k in ("layer", "kind") if k in data)
    return f"retry #{data.get('attempt', '?')} {what}".rstrip()


def _generic(node: StoredNode) -> str:
    return f"{node.get('kind')} {node.get('name')}"


_DESCRIBE: dict[str, Callable[[StoredNode], str]] = {
    "run": _run,
    "frame": _frame,
    "decision": _decision,
    "model_call": _model_call,
    "repick": _model_call,
    "step": _step,
    "tool_call": _tool_call,
    "branch": _branch,
    "retry": _retry,
}


def _duration(node: StoredNode) -> str:
    seconds = node.get("duration_s")
    if not isinstance(seconds, int | float):
        return ""
    return f"  {seconds * 1000:.1f} ms" if seconds < 1 else f"  {seconds:.2f} s"
