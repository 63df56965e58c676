"""The whole-reply shortcut agrees with the general parser on every reply it accepts."""

from __future__ import annotations

import json
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine._decision import _extract
from engine._decision._extract import find_pick
from engine._decision._picks import whole_pick

NAMES = {"refund": None, "close": None, "x": None}

text = st.one_of(
    st.text(max_size=10),
    st.sampled_from(["```json\n{}\n```", "<think>", "</think>", "{", "}", '"', "<tool_call>"]),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=10,
)
keys = st.sampled_from(
    ["call", "args", "action", "function", "tool", "name", "arguments", "input", "amount"]
)
calls = st.one_of(st.sampled_from(sorted(NAMES)), json_values)
objects = st.one_of(
    st.fixed_dictionaries({"call": calls, "args": st.dictionaries(text, json_values, max_size=3)}),
    st.dictionaries(keys, st.one_of(calls, json_values), max_size=4),
    st.fixed_dictionaries({"result": st.fixed_dictionaries({"call": calls})}),
    st.fixed_dictionaries(
        {"function": st.fixed_dictionaries({"name": calls, "arguments": json_values})}
    ),
)
space = st.sampled_from(["", " ", "\n", "\t\n  "])


@st.composite
def replies(draw: st.DrawFn) -> str:
    obj = draw(objects)
    body = json.dumps(obj, indent=draw(st.sampled_from([None, 2])))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(body)))
        body = body[:cut] + draw(st.sampled_from(["", ",", "}", "{", " ", "'"])) + body[cut:]
    return draw(space) + body + draw(space)


def general(reply: str) -> object:
    """What the general parser alone finds (the shortcut turned off)."""
    with mock.patch.object(_extract, "whole_pick", return_value=None):
        return find_pick(reply, NAMES)


@settings(max_examples=800, deadline=None)
@given(st.one_of(replies(), st.text(max_size=40)))
@example('{"call": "refund", "args": {"amount": 12.5}}')
@example(' \n{"call": "refund", "args": {"note": "```json\\n{\\"call\\": \\"x\\"}\\n```"}}\n')
@example('{"call": "refund", "args": {"a": 1}, "tool": "x"}')
@example('{"function": {"name": "close", "arguments": "{}"}}')
def test_whole_pick_agrees_with_the_general_parser(reply: str) -> None:
    fast = whole_pick(reply.strip(), NAMES)
    # A reasoning tag inside one of the pick's strings is data to the shortcut, where the
    # general parser drops what follows it: there (only) they may differ.
    if fast is not None and "think>" not in reply.lower():
        assert fast == general(reply)
    assert find_pick(reply, NAMES) == (fast if fast is not None else general(reply))
