"""A node's export: its shortcuts for common values give what the general rule gives."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Trace
from engine._base._json import json_safe
from engine._base._summary import KEEP as _KEEP
from engine._base._summary import PLAIN as _PLAIN
from engine._base._summary import SUMMARY_CHARS as _SUMMARY_CHARS

# Text that exercises each way a string can leave the shortcuts: quotes and backslashes
# (escaped in JSON), control characters, non-ASCII, lone surrogates, and lengths around the
# summary's bound.
_CHARS = st.sampled_from(['"', "\\", "\n", "\x7f", "é", "\ud800", "a", " ", "1", "…"])
texts = st.one_of(
    st.text(max_size=12),
    st.lists(_CHARS, max_size=12).map("".join),
    st.integers(0, 12).map(lambda n: "x" * (_SUMMARY_CHARS - 6 + n)),
    st.text(alphabet="ab\"\\'", min_size=150, max_size=260),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([199, 700, 13_999, 14_000]).map(lambda bits: -(2**bits)),
    st.floats(),
    texts,
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.one_of(texts, st.integers()), inner, max_size=5)
    ),
    max_leaves=20,
)
keys = st.one_of(st.sampled_from(sorted(_KEEP)), st.sampled_from(["args", "reply", "é"]), texts)


def reference_summary(value: object) -> object:
    """A value's summary as the trace first wrote it: its JSON text measured."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= _SUMMARY_CHARS else value[:_SUMMARY_CHARS] + "…"
    if isinstance(value, dict | list | tuple):
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            pass
        else:
            return value if len(text) <= _SUMMARY_CHARS else text[:_SUMMARY_CHARS] + "…"
    text = repr(value)
    return text if len(text) <= _SUMMARY_CHARS else text[:_SUMMARY_CHARS] + "…"


def reference_safe(value: Any, depth: int = 0) -> Any:
    """What :func:`json_safe` does by walking a value (its answer for data it must repair)."""
    kind = type(value)
    if kind in (str, float, int):
        return json_safe(value)
    if isinstance(value, dict | list | tuple):
        if depth >= 127:
            return "<nested too deeply>"
        if isinstance(value, dict):
            return {
                json_safe(k) if isinstance(k, str) else k: reference_safe(v, depth + 1)
                for k, v in value.items()
            }
        return [reference_safe(v, depth + 1) for v in value]
    return value


def reference_data(data: dict[str, Any]) -> object:
    return reference_safe(
        {
            k: v
            if k in _KEEP or type(v) in _PLAIN or (type(v) is str and len(v) <= _SUMMARY_CHARS)
            else reference_summary(v)
            for k, v in data.items()
        }
    )


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(keys, values, max_size=6))
def test_node_to_dict_data_matches_the_general_rule(data: dict[str, Any]) -> None:
    trace = Trace()
    node = trace.open("decision", "decision", parent=None, **{"x": 1})
    node.data = dict(data)
    # repr tells True from 1 and 1.0 from 1, which == does not.
    assert repr(node.to_dict()["data"]) == repr(reference_data(data))


def test_node_to_dict_times_derive_from_the_trace_anchor() -> None:
    trace = Trace()
    node = trace.open("step", "s", parent=None)
    assert node.to_dict()["ended_at"] is None
    node.close("ok")
    exported = node.to_dict()
    assert exported["started_at"] == node.started_at
    assert exported["ended_at"] == node.ended_at
    assert exported["duration_s"] == node.duration_s
