"""What a trace keeps of its nodes' data: JSON-safe values, each summarised when long.

A node's data (its inputs, outputs, reply heads) is exported with the trace at the end of
every run, so this is on the path of every transition: the values a trace mostly holds are
recognised as their own export and copied as they are. The module is compiled where the
engine's hot modules are (``tools/native.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any, Protocol

from engine._base._json import _MAX_INT_BITS, json_safe

__all__ = [
    "KEEP",
    "PLAIN",
    "SUMMARY_CHARS",
    "NodeFields",
    "export_data",
    "export_node",
    "export_nodes",
    "summarise",
]

#: The longest text a trace keeps of a value it summarises.
SUMMARY_CHARS = 200

# Values that are their own summary.
PLAIN = frozenset({bool, int, float, type(None)})

# Data kept whole in exports: small lists of names and kinds that aggregate into graphs, and
# the reply heads (already cut to a bounded length when recorded).
KEEP = frozenset({"options", "failures", "pick", "attempts", "enforcement", "layer", "replies"})

_STR_ONLY = frozenset({str})


class NodeFields(Protocol):
    """What the export reads of a trace node (:class:`~engine._base._trace.Node`)."""

    @property
    def id(self) -> int: ...
    @property
    def parent_id(self) -> int | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def duration_s(self) -> float | None: ...
    @property
    def data(self) -> dict[str, Any]: ...
    @property
    def _t0(self) -> float: ...
    @property
    def _usage(self) -> dict[str, int] | None: ...


def export_node(node: NodeFields, wall0: float, t0: float) -> dict[str, Any]:
    """Return ``node`` as a stored trace holds it; ``wall0`` and ``t0`` are its trace's
    anchors (a wall-clock reading and the ``perf_counter`` reading taken with it)."""
    started = wall0 + (node._t0 - t0)
    duration = node.duration_s
    usage = node._usage
    data = node.data
    return {
        "id": node.id,
        "parent_id": node.parent_id,
        "kind": node.kind,
        "name": node.name,
        "key": node.key,
        "status": node.status,
        "started_at": started,
        "ended_at": None if duration is None else started + duration,
        "duration_s": duration,
        "usage": {} if usage is None else dict(usage),
        "data": export_data(data) if data else {},
    }


def export_nodes(nodes: Iterable[NodeFields], wall0: float, t0: float) -> list[dict[str, Any]]:
    """Return :func:`export_node` of each of ``nodes``, in order."""
    return [export_node(node, wall0, t0) for node in nodes]


def summarise(value: object, limit: int = SUMMARY_CHARS) -> object:
    """Return a JSON-friendly, size-bounded summary of ``value`` for the trace."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if isinstance(value, dict | list | tuple):  # JSON data stays JSON while it is short
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            pass
        else:
            return value if len(text) <= limit else text[:limit] + "…"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def export_data(data: dict[str, Any]) -> dict[str, Any]:
    """Return ``json_safe`` of ``data`` with each value summarised (unless kept whole).

    The values a trace mostly holds (short ASCII text, small numbers, lists of names) are
    their own export and are copied here as they are; anything else goes the long way.
    """
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = json_safe(k) if type(k) is str and not k.isascii() else k
        kind = type(v)
        if kind is str:
            if v.isascii() and (len(v) <= SUMMARY_CHARS or k in KEEP):
                out[key] = v
                continue
        elif kind is list:
            # A list of names: every item a str (not a subclass) of ASCII text, found in C.
            if k in KEEP and (not v or (set(map(type, v)) <= _STR_ONLY and "".join(v).isascii())):
                out[key] = list(v)
                continue
        elif kind is dict:
            if k not in KEEP:
                flat = _short_flat(v)
                if flat is not None:
                    out[key] = flat
                    continue
        elif kind is bool or v is None or (kind is int and v.bit_length() <= _MAX_INT_BITS):
            out[key] = v
            continue
        kept = k in KEEP or kind in PLAIN or (kind is str and len(v) <= SUMMARY_CHARS)
        out[key] = json_safe(v if kept else summarise(v), 1)
    return out


def _short_flat(value: dict[Any, Any]) -> dict[str, Any] | None:
    """Return the export of a dict of printable ASCII text and finite numbers, when short.

    Such a dict is its own export when its JSON text fits the summary: that length is
    counted here (in that text only a quote or a backslash is escaped, by one more
    character) instead of written out. ``None``: the dict needs the long way.
    """
    # Each item adds its key, its quotes, ": " and ", " (or the closing brace); text adds
    # its escapes, counted only when the text is long enough for them to matter (at most
    # one a character).
    size = 0
    escapes = 0  # the most the escapes of the text seen so far can add
    for k, v in value.items():
        if type(k) is not str or not (k.isascii() and k.isprintable()):
            return None
        size += len(k) + 6
        escapes += len(k)
        kind = type(v)
        if kind is str:
            if not (v.isascii() and v.isprintable()):
                return None
            size += len(v) + 2
            escapes += len(v)
        elif kind is bool:
            size += 4 if v else 5
        elif v is None:
            size += 4
        elif (kind is int and v.bit_length() <= SUMMARY_CHARS) or (
            kind is float and math.isfinite(v)
        ):
            size += len(repr(v))
        else:
            return None
        if size > SUMMARY_CHARS:
            return None
    if size + escapes > SUMMARY_CHARS and size + _escapes(value) > SUMMARY_CHARS:
        return None
    return dict(value)


def _escapes(value: dict[str, Any]) -> int:
    """Count the characters JSON escapes in the keys and text of a flat dict."""
    text = "".join(value) + "".join(v for v in value.values() if type(v) is str)
    return text.count('"') + text.count("\\")
