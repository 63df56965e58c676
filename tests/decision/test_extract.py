"""Examples for reply extraction, one group per rule of docs/decisions.md §6."""

from __future__ import annotations

import pytest

from engine import Runtime, decision
from engine._decision import _extract
from engine._decision._extract import MAX_DEPTH, RawPick, extract_action, find_pick
from engine._decision._picks import load_literal
from engine.models import ScriptedModel


def _call(reply: str, names: set[str] | None = None) -> object:
    pick = find_pick(reply, names)
    return None if pick is None else pick.call


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param('<think>{"call": "no"}</think>{"call": "yes"}', "yes", id="block"),
        pytest.param('<THINK>{"call": "no"}</Think> {"call": "yes"}', "yes", id="any-case"),
        pytest.param('plan {"call": "no"}\n</think>\n{"call": "yes"}', "yes", id="lone-closer"),
        pytest.param('{"call": "yes"}\n<think>then {"call": "no"}', "yes", id="unclosed-opener"),
        pytest.param('<think>only {"call": "no"}</think>', None, id="all-reasoning"),
    ],
)
def test_find_pick_drops_reasoning(reply: str, call: object) -> None:
    assert _call(reply) == call


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param('```json\n{"call": "a"}\n```', "a", id="json-tag"),
        pytest.param('```JSON\n{"call": "a"}\n```', "a", id="tag-any-case"),
        pytest.param('```\n{"call": "a"}\n```', "a", id="untagged"),
        pytest.param('~~~json\n{"call": "a"}\n~~~', "a", id="tildes"),
        pytest.param('   ```json\n{"call": "a"}\n   ```', "a", id="indented-three"),
        pytest.param('```json\n{"call": "a"}', "a", id="unclosed-runs-to-end"),
        pytest.param('```python\nx = {"call": "no"}\n```', None, id="python-ignored"),
        pytest.param('```bash\necho \'{"call": "no"}\'\n```\n', None, id="bash-ignored"),
        pytest.param('```python\n{"call": "no"}\n```\n{"call": "yes"}', "yes", id="bare-after"),
    ],
)
def test_find_pick_reads_fences(reply: str, call: object) -> None:
    assert _call(reply) == call


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            '````json\n{"call": "a", "args": {"code": "```\\nx\\n```"}}\n````', id="escaped"
        ),
        pytest.param(
            '````json\n{"call": "a", "args": {"code": "\n```\nx\n```\n"}}\n````', id="raw"
        ),
        pytest.param('~~~\n{"call": "a", "args": {"code": "\n```\nx\n"}}\n~~~', id="other-char"),
    ],
)
def test_find_pick_fence_closes_only_on_same_char_at_least_as_long(reply: str) -> None:
    pick = find_pick(reply)
    assert pick is not None
    assert pick.call == "a"
    assert isinstance(pick.args, dict)
    assert "```" in pick.args["code"]


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param(
            '```json\n{"call": "a"}\n``` trailing\n{"call": "b"}\n```', "b", id="text-after"
        ),
        pytest.param('``` js`on\n{"call": "a"}\n', "a", id="backtick-info-not-a-fence"),
        pytest.param('````\n{"call": "a"}\n```\n{"call": "b"}\n````', "b", id="shorter-closer"),
    ],
)
def test_find_pick_fence_edges_follow_commonmark(reply: str, call: object) -> None:
    assert _call(reply) == call


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param('I could {"call": "a"}, but: {"call": "b"}', "b", id="mentioned-then-picked"),
        pytest.param('```json\n{"call": "a"}\n```\nor {"call": "b"}', "a", id="fenced-beats-bare"),
        pytest.param('```json\n{"call": "a"}\n```\n```\n{"call": "b"}\n```', "b", id="last-fence"),
        pytest.param('```json\n{"x": 1}\n```\n{"call": "b"}', "b", id="fence-without-pick"),
        pytest.param('{"call": "a"} {"call": "b"} {"call": "c"}', "c", id="flat-run"),
        pytest.param('[{"call": "a"}, {"call": "b"}]', "b", id="in-a-list"),
    ],
)
def test_find_pick_last_pick_wins(reply: str, call: object) -> None:
    assert _call(reply) == call


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param('{"action": "a"}', "a", id="action"),
        pytest.param('{"function": "a"}', "a", id="function"),
        pytest.param('{"tool": "a"}', "a", id="tool"),
        pytest.param('{"tool": "t", "action": "a", "call": "c"}', "c", id="call-wins"),
        pytest.param('{"tool": "t", "function": "f", "action": "a"}', "a", id="action-next"),
        pytest.param('{"tool": "t", "function": "f"}', "f", id="function-before-tool"),
    ],
)
def test_find_pick_call_key_and_aliases(reply: str, call: object) -> None:
    assert _call(reply) == call


def test_find_pick_other_keys_are_extras() -> None:
    pick = find_pick('{"call": "move", "action": "left", "speed": 2}')
    assert pick == RawPick("move", None, False, {"action": "left", "speed": 2})


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param('{"result": {"call": "a"}}', "a", id="in-object"),
        pytest.param('{"steps": [{"call": "a"}, {"call": "b"}], "n": 2}', "b", id="in-list"),
        pytest.param('{"x": {"y": [{"z": {"call": "a"}}]}}', "a", id="deep"),
        pytest.param('{ here is it: {"call": "a"} }', "a", id="in-non-json"),
    ],
)
def test_find_pick_nested_in_non_pick_counts(reply: str, call: object) -> None:
    assert _call(reply) == call


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param('{"call": "outer", "args": {"call": "inner"}}', id="args"),
        pytest.param('{"call": "outer", "args": {"a": [{"b": {"call": "x"}}]}}', id="deep-args"),
        pytest.param('{"call": "outer", "note": {"tool": "x"}}', id="other-key"),
        pytest.param("{'call': 'outer', 'args': {'call': 'inner'}}", id="literal"),
    ],
)
def test_find_pick_objects_inside_a_pick_are_data(reply: str) -> None:
    assert _call(reply) == "outer"


@pytest.mark.parametrize(
    ("reply", "names", "expected"),
    [
        pytest.param(
            '{"type": "function", "function": {"name": "f", "arguments": "{\\"x\\": 1}"}}',
            None,
            RawPick("f", {"x": 1}, True, {}),
            id="tool-call-shape",
        ),
        pytest.param(
            '{"id": "c1", "function": {"name": "f", "arguments": {"x": 1}}, "call": "no"}',
            None,
            RawPick("f", {"x": 1}, True, {}),
            id="tool-call-shape-first",
        ),
        pytest.param(
            '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>',
            set(),
            RawPick("f", {"x": 1}, True, {}),
            id="tool-call-wrapper",
        ),
        pytest.param(
            '<tool_call>{"name": "f", "x": 1}',
            None,
            RawPick("f", None, False, {"x": 1}),
            id="unclosed-wrapper",
        ),
        pytest.param(
            '{"name": "f", "arguments": {"x": 1}}',
            {"f"},
            RawPick("f", {"x": 1}, True, {}),
            id="name-is-option",
        ),
        pytest.param(
            '{"name": "f", "x": 1}', {"f"}, RawPick("f", None, False, {"x": 1}), id="name-flat"
        ),
        pytest.param(
            '{"name": "f", "input": {"x": 1}}',
            None,
            RawPick("f", {"x": 1}, True, {}),
            id="name-without-names",
        ),
        pytest.param(
            '{"call": "f", "args": "{\\"x\\": 1}"}',
            None,
            RawPick("f", {"x": 1}, True, {}),
            id="args-json-string",
        ),
        pytest.param(
            '{"call": "f", "args": "[1, 2]"}', None, RawPick("f", "[1, 2]", True, {}), id="args-str"
        ),
        pytest.param(
            '{"call": "f", "arguments": {"x": 1}}',
            None,
            RawPick("f", {"x": 1}, True, {}),
            id="arguments",
        ),
        pytest.param(
            '{"call": "f", "parameters": {"x": 1}, "input": 2}',
            None,
            RawPick("f", {"x": 1}, True, {"input": 2}),
            id="parameters-before-input",
        ),
        pytest.param(
            '{"call": "f", "args": null}', None, RawPick("f", {}, True, {}), id="args-null"
        ),
        pytest.param(
            '{"call": "f", "args": {"s": "a\tb\nc"}}',
            None,
            RawPick("f", {"s": "a\tb\nc"}, True, {}),
            id="raw-control-chars",
        ),
        pytest.param(
            "{'call': 'f', 'args': {'a': True, 'b': None, 'c': [1, 2.5]}}",
            None,
            RawPick("f", {"a": True, "b": None, "c": [1, 2.5]}, True, {}),
            id="python-literal",
        ),
        pytest.param(
            '{"call": "f", "args": {"a": [1, 2,], "b": "x,}",},}',
            None,
            RawPick("f", {"a": [1, 2], "b": "x,}"}, True, {}),
            id="trailing-commas",
        ),
        pytest.param(
            '{"call": "f", "args": {"a": [1,], "b": True}}',
            None,
            RawPick("f", {"a": [1], "b": True}, True, {}),
            id="trailing-comma-and-literal",
        ),
    ],
)
def test_find_pick_tolerated_shapes(reply: str, names: set[str] | None, expected: RawPick) -> None:
    assert find_pick(reply, names) == expected


@pytest.mark.parametrize(
    ("reply", "names"),
    [
        pytest.param('{"name": "Ada", "age": 36}', {"f"}, id="name-not-an-option"),
        pytest.param('{"name": "Ada", "age": 36}', None, id="name-without-arguments"),
        pytest.param('{"name": ["f"], "arguments": {}}', {"f"}, id="unhashable-name"),
    ],
)
def test_find_pick_name_shape_needs_an_option_name(reply: str, names: set[str] | None) -> None:
    assert find_pick(reply, names) is None


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("{'call': 'f', 'args': (1, 2)}", id="tuple"),
        pytest.param("{'call': 'f', 'args': {1, 2}}", id="set"),
        pytest.param("{'call': 'f', 'args': b'x'}", id="bytes"),
        pytest.param("{'call': 'f', 'args': 1j}", id="complex"),
        pytest.param("{'call': 'f', 1: 2}", id="non-str-key"),
        pytest.param("{'call': 'f', 'args': __import__('os')}", id="never-evaluated"),
    ],
)
def test_find_pick_python_literal_limited_to_json_types(reply: str) -> None:
    assert find_pick(reply) is None


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param('{"call": 5}', 5, id="int"),
        pytest.param('{"call": null}', None, id="null"),
        pytest.param('{"call": ["a"]}', ["a"], id="list"),
        pytest.param('{"function": {"x": 1}}', {"x": 1}, id="function-without-name"),
    ],
)
def test_find_pick_non_string_call_returned_as_is(reply: str, call: object) -> None:
    pick = find_pick(reply)
    assert pick is not None
    assert pick.call == call


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param('{"call": "a", "args": {"x": 1', id="cut-in-args"),
        pytest.param('{"call": "a", "args": {"call": "b"}', id="nested-pick-in-args"),
        pytest.param('{"call": "a", "args": {"steps": [{"action": "b"}], "n":', id="in-a-list"),
        pytest.param('{"call": "a", "args": {"x": "unterminated', id="cut-in-string"),
        pytest.param("{'call': 'a', 'args': {'call': 'b'}", id="literal"),
    ],
)
def test_find_pick_truncated_pick_is_not_repaired(reply: str) -> None:
    assert find_pick(reply) is None


def test_find_pick_complete_pick_after_a_truncated_one() -> None:
    reply = '{"call": "a", "args": {"x": 1\nSorry, again:\n{"call": "b"}'
    assert _call(reply) == "b"


def _nested(depth: int) -> str:
    """Return a pick whose objects nest ``depth`` deep."""
    return '{"call": "f", "args": ' + '{"a": ' * (depth - 2) + "{}" + "}" * (depth - 1)


@pytest.mark.parametrize(
    ("reply", "call"),
    [
        pytest.param(_nested(MAX_DEPTH), "f", id="at-limit"),
        pytest.param(_nested(MAX_DEPTH + 1), None, id="past-limit"),
        pytest.param(_nested(5000), None, id="5000-deep"),
        pytest.param('{"call": "f", "args": ' + "[" * 5000 + "]" * 5000 + "}", None, id="lists"),
        pytest.param("{" * 5000 + "}" * 5000, None, id="braces"),
        pytest.param('{"a":' * 5000 + "1" + "}" * 5000, None, id="objects"),
        pytest.param('{"a": ' * 5000 + '{"call": "f"}', "f", id="after-unclosed"),
    ],
)
def test_find_pick_deep_nesting_is_a_parse_failure(reply: str, call: object) -> None:
    assert _call(reply) == call


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("{" * 100_000 + '{"call": "a"}', id="run-of-braces"),
        pytest.param("use { to open, { again, then " + '{"call": "a"}', id="scattered"),
        pytest.param('It\'s 5" tall {like "this. {"call": "a"}', id="stray-quotes"),
        pytest.param('Note, "quoted {"call": "a"}', id="odd-quote-at-depth-zero"),
        pytest.param('{x, "y {"call": "a"}', id="quote-swallows-pick"),
        pytest.param('} } ] {"call": "a"} } ]', id="stray-closers"),
    ],
)
def test_find_pick_unmatched_braces_in_prose_do_not_hide_a_pick(reply: str) -> None:
    assert _call(reply) == "a"


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("", id="empty"),
        pytest.param("no json here", id="prose"),
        pytest.param('{"x": 1} [1, 2]', id="no-call-key"),
        pytest.param('"call": "a"', id="no-object"),
        pytest.param('{"call" "a"}', id="broken"),
    ],
)
def test_find_pick_none_without_a_pick(reply: str) -> None:
    assert find_pick(reply) is None


def test_find_pick_rejects_non_str() -> None:
    with pytest.raises(TypeError, match="reply must be a str, got bytes"):
        find_pick(b'{"call": "a"}')  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reply", "action"),
    [
        pytest.param('{"call": "f", "args": {"x": 1}}', {"call": "f", "args": {"x": 1}}, id="args"),
        pytest.param('{"call": "f", "x": 1}', {"call": "f", "args": {"x": 1}}, id="flattened"),
        pytest.param('{"call": "f"}', {"call": "f", "args": {}}, id="bare"),
        pytest.param("nothing", None, id="none"),
    ],
)
def test_extract_action_returns_call_and_args(reply: str, action: object) -> None:
    assert extract_action(reply) == action


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param("null", {}, id="null"),
        pytest.param('""', {}, id="empty-string"),
        pytest.param("[]", {}, id="empty-list"),
        pytest.param("{}", {}, id="empty-object"),
        pytest.param('"{}"', {}, id="json-string-empty-object"),
        pytest.param('" {\\"x\\": 1} "', {"x": 1}, id="json-string-object"),
        pytest.param("5", 5, id="int-kept"),
        pytest.param("true", True, id="bool-kept"),
        pytest.param("[1, 2]", [1, 2], id="list-kept"),
        pytest.param('"later"', "later", id="string-kept"),
        pytest.param('"[1]"', "[1]", id="json-string-list-kept"),
    ],
)
def test_extract_action_normalises_args(args: str, expected: object) -> None:
    reply = '{"call": "f", "args": ' + args + "}"

    assert decision.extract_action(reply) == {"call": "f", "args": expected}
    assert decision.extract_action(reply.replace('"args"', '"arguments"')) == {
        "call": "f",
        "args": expected,
    }


# Replies over the parse budget's floor: a large object before the pick must not use up
# what the pick needs.
_BULK = "x" * 70_000


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            '{"result": None, "log": "' + _BULK + '"}\nSo I pick:\n{"call": "go"}',
            id="literal-object-before",
        ),
        pytest.param(
            "```json\n{'name': 'tool', 'out': '" + _BULK + '\'}\n```\nPick: {"call": "go"}',
            id="fenced-literal-non-pick",
        ),
        pytest.param(
            "{'name': 'tool', 'out': '" + _BULK + "',}\n" + '{"call": "go"}',
            id="all-three-parsers-before",
        ),
        pytest.param("{'call':'go','args':{'s':'" + _BULK + "'}}", id="literal-pick"),
    ],
)
def test_extract_action_large_reply_keeps_its_pick(reply: str) -> None:
    action = decision.extract_action(reply)

    assert action is not None
    assert action["call"] == "go"


async def test_decision_make_large_reply_keeps_its_pick() -> None:
    reply = '{"result": None, "log": "' + _BULK + '"}\nSo I pick:\n{"call": "go"}'
    runtime = Runtime(ScriptedModel([reply]))

    assert await decision.make("Pick one.", {"go": "GONE"}, runtime=runtime, max_retries=0) == (
        "GONE"
    )


def test_find_pick_literal_parses_read_the_reply_at_most_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Nested objects that each fail as a Python literal: without a bound, every level would
    # be read again inside its parent's failure.
    read: list[int] = []

    def counting(chunk: str) -> dict[str, object] | None:
        read.append(len(chunk))
        return load_literal(chunk)

    monkeypatch.setattr(_extract, "load_literal", counting)
    level = '{"name": None, "pad": "' + "x" * 2000 + '", "x": '
    reply = level * 40 + "1" + " oops}" * 40

    assert find_pick(reply) is None
    assert read
    assert sum(read) <= len(reply) + _extract._LITERAL_FLOOR


def test_find_pick_literal_parses_stop_at_their_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # ast.literal_eval takes microseconds a character on dense tokens: a reply full of
    # objects that fail as literals gets a bounded share of it, whatever its size.
    read: list[int] = []

    def counting(chunk: str) -> dict[str, object] | None:
        read.append(len(chunk))
        return load_literal(chunk)

    monkeypatch.setattr(_extract, "load_literal", counting)
    reply = "Note: " + "{'call': None, 'x': [1, 1, 1, 1] oops} " * 20_000
    pick = '{"call": "go"}'

    assert find_pick(reply + pick) is not None  # json picks are not affected
    assert find_pick(reply) is None
    assert sum(read) <= _extract._LITERAL_CAP + _extract._LITERAL_FLOOR


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_extract_action_a_pick_holding_a_constant_json_lacks_is_no_pick(constant: str) -> None:
    assert decision.extract_action(f'{{"call": "set", "args": {{"v": {constant}}}}}') is None
    assert decision.extract_action('{"call": "set", "args": {"v": 1.5}}') == {
        "call": "set",
        "args": {"v": 1.5},
    }


async def _f(x: int) -> int:
    """Do f."""
    return x


async def _g(when: str = "now") -> str:
    """Do g."""
    return when


NAMED = {"f": _f, "g": _g}


@pytest.mark.parametrize(
    "mention",
    [
        '(I did not pick {"name": "g"}.)',
        'The options were: [{"name": "f"}, {"name": "g", "description": "end"}]',
    ],
    ids=["bare-name", "echoed-menu"],
)
def test_parse_args_an_object_with_a_name_is_data_unless_it_reads_as_a_pick(mention: str) -> None:
    chosen, kwargs = decision.parse_args(f'{{"call": "f", "args": {{"x": 1}}}}\n{mention}', NAMED)

    assert chosen is _f
    assert kwargs == {"x": 1}


def test_parse_args_a_name_with_the_options_own_parameters_is_a_flattened_pick() -> None:
    chosen, kwargs = decision.parse_args(
        '{"call": "f", "args": {"x": 1}} {"name": "g", "when": "later"}', NAMED
    )

    assert chosen is _g
    assert kwargs == {"when": "later"}


@pytest.mark.parametrize(
    "reply",
    [
        'Done. {"call": "say", "args": {"text": "wrap it in <think> tags"}}',
        'Final: {"call": "say", "args": {"text": "a <think>secret</think> b"}}',
        'Done. {"call": "say", "args": {"text": "close </think> tag"}}',
        'I could {"call": "wipe"} but no. {"call": "say", "args": {"text": "say <think>"}}',
    ],
    ids=["opener", "block", "closer", "mentioned-before"],
)
def test_extract_action_reasoning_tags_inside_a_string_are_text(reply: str) -> None:
    action = decision.extract_action(reply, ["say", "wipe"])

    assert action is not None
    assert action["call"] == "say"
    assert "think>" in action["args"]["text"]
