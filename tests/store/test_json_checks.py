"""What JSON cannot carry is found the same way, however the check answers (fast or walked)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine._base import JournalError
from engine._base._json import MAX_DEPTH, _walk, json_safe, to_json, unencodable

# Text with lone surrogates among it, floats with NaN and infinities, integers past the limit.
_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xDFFF), max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([-(10**4250), 2**14_001, 2**13_999])
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(_TEXT, inner, max_size=4)
    ),
    max_leaves=20,
)


def _nested(depth: int) -> Any:
    data: Any = "leaf"
    for _ in range(depth):
        data = {"k": [data]} if depth % 2 else [data]
    return data


@settings(max_examples=400, deadline=None)
@given(_DATA)
def test_the_answer_is_the_walks_whatever_the_data(data: Any) -> None:
    assert unencodable(data) == _walk(data, MAX_DEPTH)


@given(st.integers(min_value=MAX_DEPTH - 3, max_value=MAX_DEPTH + 3))
def test_nesting_near_the_limit_is_answered_as_the_walk_answers(depth: int) -> None:
    data = _nested(depth)
    assert unencodable(data) == _walk(data, MAX_DEPTH)
    assert unencodable(data, max_depth=10) == _walk(data, 10)


def test_each_kind_of_problem_is_named_with_its_path() -> None:
    assert (
        unencodable({"a": ["x", "bad \ud800"]})
        == "a lone surrogate '\\ud800' at ['a'][1] (character 4)"
    )
    assert unencodable({"f": math.nan}) == "a float that is not finite (nan) at ['f']"
    assert "an integer of" in (unencodable([2**14_001]) or "")
    assert unencodable({"ok": [1, 2.5, "text", None, True]}) is None
    assert unencodable({"obj": object()}) is None  # other types are left to the encoder


def test_an_integer_past_the_readers_digit_limit_is_named_as_the_walk_names_it() -> None:
    for data in ([10**4300], {"n": -(10**4400)}, [1, {"x": 10**5000}]):
        assert unencodable(data) == _walk(data, MAX_DEPTH)
        assert "an integer of" in (unencodable(data) or "")


@settings(max_examples=400, deadline=None)
@given(_DATA)
def test_made_safe_data_is_what_the_walk_makes_it_and_always_encodes(data: Any) -> None:
    safe = json_safe(data)
    walked = json_safe(data, 1)  # below the top: always walked
    strict = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
    strict.encode(safe).encode()  # strict UTF-8 JSON: nothing JSON cannot carry is left
    # The same data, read as JSON reads it (tuples as lists, keys as text).
    assert json.loads(strict.encode(safe)) == json.loads(strict.encode(walked))
    if type(data) in (dict, list):
        assert safe is not data  # a fresh copy, never the caller's own object


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_TEXT, _SCALARS, max_size=6))
def test_a_flat_dict_is_taken_as_json_exactly_when_nothing_in_it_is_refused(data: Any) -> None:
    problem = _walk(data, MAX_DEPTH)
    try:
        kept = to_json(data, what="the value")
    except JournalError:
        assert problem is not None or any(
            type(v) is float and not math.isfinite(v) for v in data.values()
        )
    else:
        assert problem is None
        assert kept == data
        assert kept is not data
