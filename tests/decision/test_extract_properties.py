"""Properties of reply extraction: it never raises, and it finds a pick among any noise."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from engine._decision._extract import extract_action, find_pick

_PIECES = [
    "{", "}", "[", "]", '"', "'", "\\", ":", ",", " ", "\n", "a", "1",
    "call", "args", "name", "arguments", "function", "True", "None",
    '{"call": "x"', '"args": {', "```", "```json\n", "~~~", "````", "```python\n",
    "<think>", "</think>", "<tool_call>", "</tool_call>", "\\u00e9", "\t",
]  # fmt: skip

adversarial = st.one_of(
    st.text(),
    st.lists(st.sampled_from(_PIECES), max_size=60).map("".join),
    st.lists(st.sampled_from("{}[]\"'\\:,"), max_size=200).map("".join),
)

# Noise that cannot hold a call key, a fence, a reasoning block or a wrapper.
_BANNED = ("call", "action", "function", "tool", "name", "```", "~~~", "think")
noise = st.text(alphabet=st.sampled_from("{}[]\"'\\:, \n\tabcxyz019<>/.=-_"), max_size=80).filter(
    lambda text: not any(word in text for word in _BANNED)
)

# Strings without "<", so no reasoning tag or wrapper appears inside the pick itself.
plain = st.text(alphabet=st.characters(blacklist_characters="<"), max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | plain,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain, inner, max_size=4),
    max_leaves=12,
)
picks = st.fixed_dictionaries(
    {"call": plain, "args": st.dictionaries(plain, json_values, max_size=4)}
)


@settings(max_examples=500)
@given(adversarial)
def test_find_pick_never_raises(reply: str) -> None:
    pick = find_pick(reply)
    assert pick is None or isinstance(pick.extras, dict)
    find_pick(reply, names={"a", "x"})


@settings(max_examples=300)
@given(before=noise, pick=picks, after=noise)
def test_find_pick_finds_a_pick_among_noise(
    before: str, pick: dict[str, object], after: str
) -> None:
    reply = f"{before}{json.dumps(pick)}{after}"
    assert extract_action(reply) == pick


@given(pick=picks, indent=st.none() | st.integers(min_value=0, max_value=8))
def test_find_pick_finds_an_indented_pick(pick: dict[str, object], indent: int | None) -> None:
    assert extract_action("Here it is:\n" + json.dumps(pick, indent=indent)) == pick


@given(pick=picks)
def test_find_pick_finds_a_python_literal_pick(pick: dict[str, object]) -> None:
    assert extract_action(f"Calling {pick!r} now.") == pick
