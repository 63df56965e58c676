"""docs/decisions.md §3: the schema language of schema options."""

from __future__ import annotations

import datetime
import enum
import json
import string
import sys
import typing
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from engine import DecisionError, decision

META_KEYS = frozenset({"type", "description", "options", "fields", "items"})


def pick(call: object, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


def schema_option(schema: object) -> dict[str, object]:
    return {"fill": ("Fill the form.", schema)}


def render(schema: object) -> list[str]:
    """Return the menu lines of a one-option schema menu, minus the description line."""
    lines = decision.render_options(schema_option(schema)).splitlines()
    return [lines[0], *lines[2:]]


def call_args(schema: object) -> dict[str, Any]:
    """Return the placeholder args of the option's ``Call:`` line."""
    call_line = decision.render_options(schema_option(schema)).splitlines()[-1]
    assert call_line.startswith("    Call: ")
    parsed: dict[str, Any] = json.loads(call_line.removeprefix("    Call: "))
    return parsed.get("args", {})


def fields_of(schema: object, **args: object) -> dict[str, object]:
    """Parse a pick of the schema option and return its validated fields."""
    name, fields = decision.parse_args(pick("fill", **args), schema_option(schema))
    assert name == "fill"
    return fields


def rejected(schema: object, **args: object) -> DecisionError:
    with pytest.raises(DecisionError) as info:
        decision.parse_args(pick("fill", **args), schema_option(schema))
    return info.value


class Address(BaseModel):
    street: str
    number: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


# Python types -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "label", "placeholder", "value"),
    [
        (str, "str", "<str>", "text"),
        (int, "int", 0, 7),
        (float, "float", 0.0, 1.5),
        (bool, "bool", False, True),
        (list, "list", [], [1, "a", None]),
        (dict, "dict", {}, {"any": ["thing"]}),
        (list[int], "list[int]", [0], [1, 2]),
        (dict[str, int], "dict[str, int]", {}, {"a": 1}),
        (int | None, "int | None", 0, None),
        (typing.Optional[str], "str | None", "<str>", "x"),  # noqa: UP045 - the typing form
        (Literal["a", "b"], "str", "a", "b"),
        (Address, "Address", {"street": "<str>", "number": 0}, {"street": "Main", "number": 1}),
        (list[Address], "list[Address]", [{"street": "<str>", "number": 0}], []),
        (Color, "Color", "red", "blue"),
        (tuple[int, str], "tuple[int, str]", [0, "<str>"], [1, "a"]),
        (datetime.date, "date", "<date>", "2024-05-01"),
        (typing.Any, "any", "<any>", {"free": "form"}),
    ],
    ids=[
        "str",
        "int",
        "float",
        "bool",
        "list",
        "dict",
        "list-of-int",
        "dict-of-int",
        "int-or-none",
        "optional-str",
        "literal",
        "pydantic-model",
        "list-of-models",
        "enum",
        "tuple",
        "date",
        "any",
    ],
)
def test_schema_python_type_is_labelled_placeheld_and_validated(
    spec: object, label: str, placeholder: object, value: object
) -> None:
    assert render({"x": spec})[0] == f"fill(x: {label})"
    assert call_args({"x": spec}) == {"x": placeholder}
    assert "x" in fields_of({"x": spec}, x=value)


@pytest.mark.parametrize(
    ("spec", "value", "path"),
    [
        (int, True, "x"),
        (int, "3", "x"),
        (int, 3.0, "x"),
        (float, "1.5", "x"),
        (float, True, "x"),
        (bool, 0, "x"),
        (str, 5, "x"),
        (list, {"a": 1}, "x"),
        (dict, [1], "x"),
        (list[int], [1, False], "x[1]"),
        (dict[str, int], {"a": "1"}, "x.a"),
        (Address, {"street": "Main", "number": "1"}, "x.number"),
        (int | None, "1", "x"),
    ],
    ids=[
        "bool-is-not-int",
        "no-str-to-int",
        "float-is-not-int",
        "no-str-to-float",
        "bool-is-not-float",
        "int-is-not-bool",
        "int-is-not-str",
        "object-is-not-list",
        "list-is-not-dict",
        "list-item",
        "dict-value",
        "model-field",
        "optional",
    ],
)
def test_schema_python_type_validation_is_strict(spec: object, value: object, path: str) -> None:
    error = rejected({"x": spec}, x=value)
    assert error.kind == "type_mismatch"
    assert f"{path}:" in error.message


def test_schema_int_is_a_valid_float_and_comes_back_as_float() -> None:
    value = fields_of({"x": float}, x=2)["x"]
    assert value == 2.0
    assert type(value) is float


def test_schema_pydantic_model_field_comes_back_as_the_model() -> None:
    fields = fields_of({"home": Address}, home={"street": "Main", "number": 1})
    assert fields == {"home": Address(street="Main", number=1)}


def test_schema_enum_field_rejects_other_values() -> None:
    assert rejected({"c": Color}, c="green").kind == "enum_violation"
    assert rejected({"c": Literal["a", "b"]}, c="z").kind == "enum_violation"


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(
            typing.TypedDict("Legacy", {"a": int}),
            marks=pytest.mark.skipif(
                sys.version_info >= (3, 12), reason="pydantic accepts typing.TypedDict from 3.12"
            ),
            id="typing-typeddict",
        ),
        pytest.param(type("Opaque", (), {}), id="plain-class"),
    ],
)
def test_schema_type_pydantic_cannot_validate_is_type_error(spec: object) -> None:
    with pytest.raises(TypeError, match="cannot validate values of type"):
        decision.render_options(schema_option({"x": spec}))


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


def test_schema_recursive_model_renders_one_level_and_validates_any_depth() -> None:
    assert render({"tree": Tree}) == [
        "fill(tree: Tree)",
        "    tree",
        '    Call: {"call": "fill", "args": {"tree": {"label": "<str>", "children": [{}]}}}',
    ]
    deep = {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]}
    assert fields_of({"tree": Tree}, tree=deep) == {"tree": Tree.model_validate(deep)}
    error = rejected({"tree": Tree}, tree={"label": "a", "children": [{"label": 1}]})
    assert "tree.children[0].label:" in error.message


@pytest.mark.parametrize(
    ("spec", "bad"),
    [
        (Annotated[int, Field(gt=0)], 0),
        (Annotated[str, Field(max_length=3)], "long"),
        (Annotated[int, {"unhashable": "metadata"}], "1"),
    ],
    ids=["int-constraint", "str-constraint", "unhashable-metadata"],
)
def test_schema_annotated_type_is_labelled_by_its_type_and_validated(
    spec: object, bad: object
) -> None:
    label = typing.get_args(spec)[0].__name__
    assert render({"x": spec})[0] == f"fill(x: {label})"
    good = 1 if label == "int" else "abc"
    assert fields_of({"x": spec}, x=good) == {"x": good}
    assert rejected({"x": spec}, x=bad).kind == "type_mismatch"


def test_schema_annotated_optional_type_takes_null_as_pydantic_says() -> None:
    spec = Annotated[int | None, Field(ge=0)]
    assert render({"x": spec})[0] == "fill(x: int | None)"
    assert fields_of({"x": spec}, x=None) == {"x": None}
    assert rejected({"x": Annotated[int, Field(ge=0)]}, x=None).kind == "type_mismatch"


# Strings, lists, meta-specs, nested objects -------------------------------------------------


def test_schema_string_is_a_str_field_with_that_description() -> None:
    assert render({"why": "the reason, in one sentence"}) == [
        "fill(why: str)",
        "    why: the reason, in one sentence",
        '    Call: {"call": "fill", "args": {"why": "<str>"}}',
    ]
    assert rejected({"why": "reason"}, why=1).kind == "type_mismatch"


def test_schema_list_spec_validates_each_item_and_names_its_path() -> None:
    schema = {"steps": [{"action": str, "target": str}]}
    assert render(schema) == [
        "fill(steps: list[dict])",
        "    steps",
        '    Call: {"call": "fill", "args": {"steps": [{"action": "<str>", "target": "<str>"}]}}',
    ]
    steps = [{"action": "a", "target": "t"}, {"action": "b", "target": "u"}]
    assert fields_of(schema, steps=steps) == {"steps": steps}
    error = rejected(schema, steps=[{"action": "a", "target": "t"}, {"action": 1, "target": "u"}])
    assert error.kind == "type_mismatch"
    assert "steps[1].action:" in error.message


@pytest.mark.parametrize(
    "spec",
    [[str, int], [], [str, str, str]],
    ids=["two-templates", "no-template", "three-templates"],
)
def test_schema_list_spec_needs_exactly_one_item_template(spec: list[object]) -> None:
    with pytest.raises(TypeError, match="exactly one item template"):
        decision.render_options(schema_option({"x": spec}))


def test_schema_empty_meta_spec_is_a_plain_str_field() -> None:
    assert render({"x": {}}) == [
        "fill(x: str)",
        "    x",
        '    Call: {"call": "fill", "args": {"x": "<str>"}}',
    ]


def test_schema_meta_spec_type_defaults_to_str_and_shows_its_description() -> None:
    assert render({"x": {"description": "a name"}}) == [
        "fill(x: str)",
        "    x: a name",
        '    Call: {"call": "fill", "args": {"x": "<str>"}}',
    ]


def test_schema_meta_spec_with_type_and_options_is_an_enum_of_that_type() -> None:
    schema = {"n": {"type": int, "description": "how many", "options": [1, 2, 3]}}
    assert render(schema) == [
        "fill(n: int)",
        "    n: how many (options: 1, 2, 3)",
        '    Call: {"call": "fill", "args": {"n": 1}}',
    ]
    assert rejected(schema, n=4).kind == "enum_violation"
    assert rejected(schema, n=True).kind == "type_mismatch"


@pytest.mark.parametrize(
    ("options", "label", "good", "bad"),
    [
        (["low", "high"], "str", "high", 1),
        ([1, 2], "int", 2, 1.5),
        ([0.5, 1.5], "float", 1.5, "1.5"),
        ([True, False], "bool", False, 0),
    ],
    ids=["str", "int", "float", "bool"],
)
def test_schema_meta_spec_options_without_type_infer_it_from_the_values(
    options: list[object], label: str, good: object, bad: object
) -> None:
    schema = {"x": {"options": options}}
    assert render(schema)[0] == f"fill(x: {label})"
    assert fields_of(schema, x=good) == {"x": good}
    assert rejected(schema, x=bad).kind == "type_mismatch"


def test_schema_meta_spec_options_of_mixed_types_are_checked_by_the_enum_alone() -> None:
    schema = {"x": {"options": ["auto", 0, None]}}
    assert render(schema)[:2] == ["fill(x: str | int | None)", '    x (options: "auto", 0, null)']
    assert fields_of(schema, x=0) == {"x": 0}
    assert fields_of(schema, x=None) == {"x": None}
    assert rejected(schema, x=False).kind == "enum_violation"
    assert rejected({"x": {"options": ["auto", 0]}}, x=None).kind == "enum_violation"


def test_schema_meta_spec_fields_make_an_object() -> None:
    schema = {"who": {"description": "the person", "fields": {"name": str, "age": int}}}
    assert render(schema) == [
        "fill(who: dict)",
        "    who: the person",
        '    Call: {"call": "fill", "args": {"who": {"name": "<str>", "age": 0}}}',
    ]
    assert fields_of(schema, who={"name": "a", "age": 3, "extra": 1}) == {
        "who": {"name": "a", "age": 3}
    }
    error = rejected(schema, who={"name": "a"})
    assert error.kind == "missing_required"
    assert "who.age" in error.message


def test_schema_meta_spec_items_make_a_list() -> None:
    schema = {"tags": {"items": str, "description": "labels"}}
    assert render(schema) == [
        "fill(tags: list[str])",
        "    tags: labels",
        '    Call: {"call": "fill", "args": {"tags": ["<str>"]}}',
    ]
    assert rejected(schema, tags=["a", 1]).kind == "type_mismatch"


def test_schema_meta_spec_items_with_options_enumerate_the_items() -> None:
    schema = {"tags": {"items": {"options": ["a", "b"]}}}
    assert call_args(schema) == {"tags": ["a"]}
    error = rejected(schema, tags=["a", "c"])
    assert error.kind == "enum_violation"
    assert "tags[1]:" in error.message


def test_schema_other_dict_is_a_nested_object() -> None:
    schema = {"plan": {"goal": str, "steps": [{"action": {"options": ["go", "stop"]}}]}}
    assert render(schema) == [
        "fill(plan: dict)",
        "    plan",
        '    Call: {"call": "fill", "args": {"plan": {"goal": "<str>", "steps": [{"action": '
        '"go"}]}}}',
    ]
    error = rejected(schema, plan={"goal": "g", "steps": [{"action": "go"}, {"action": "jump"}]})
    assert error.kind == "enum_violation"
    assert "plan.steps[1].action:" in error.message
    error = rejected(schema, plan={"goal": "g", "steps": [{}]})
    assert error.kind == "missing_required"
    assert "plan.steps[0].action" in error.message


def test_schema_dict_with_only_meta_keys_is_a_meta_spec_not_an_object() -> None:
    # The documented caveat: a nested object needs at least one key outside the meta set.
    assert render({"x": {"type": int, "description": "a count"}})[0] == "fill(x: int)"
    assert render({"x": {"type": int, "label": str}})[0] == "fill(x: dict)"
    assert call_args({"x": {"type": int, "label": str}}) == {"x": {"type": 0, "label": "<str>"}}


def test_schema_nested_typing_forms_and_models_work_inside_the_language() -> None:
    schema = {"orders": [{"home": Address, "note": str | None, "qty": {"type": int}}]}
    assert call_args(schema) == {
        "orders": [{"home": {"street": "<str>", "number": 0}, "note": "<str>", "qty": 0}]
    }
    fields = fields_of(
        schema, orders=[{"home": {"street": "s", "number": 1}, "note": None, "qty": 2}]
    )
    assert fields == {"orders": [{"home": Address(street="s", number=1), "note": None, "qty": 2}]}
    error = rejected(
        schema, orders=[{"home": {"street": "s", "number": "1"}, "note": "", "qty": 1}]
    )
    assert "orders[0].home.number:" in error.message


def test_schema_every_field_is_required_and_extra_fields_are_dropped() -> None:
    schema = {"a": str, "b": int | None}
    assert fields_of(schema, a="x", b=None, c="dropped") == {"a": "x", "b": None}
    error = rejected(schema, a="x")
    assert error.kind == "missing_required"
    assert "b" in error.message


def test_schema_null_is_rejected_for_a_non_optional_field() -> None:
    error = rejected({"a": str}, a=None)
    assert error.kind == "type_mismatch"
    assert "a: expected str, got null" in error.message


# Malformed specs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        (5, "5"),
        (None, "None"),
        (1.5, "1.5"),
        (True, "True"),
        (b"str", "b'str'"),
        ((str,), r"\(<class 'str'>,\)"),
        ({str}, r"\{<class 'str'>\}"),
    ],
    ids=["int", "none", "float", "bool", "bytes", "tuple", "set"],
)
def test_schema_other_value_is_type_error_naming_it(spec: object, shown: str) -> None:
    with pytest.raises(TypeError, match=f"fill'.x: {shown} is not a spec"):
        decision.render_options(schema_option({"x": spec}))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"options": []}, "options must be a non-empty list"),
        ({"options": "ab"}, "options must be a non-empty list"),
        ({"description": 5}, "description must be a string"),
        ({"type": "integer"}, "type must be a Python type or a spec"),
        ({"fields": [str]}, "must be a dict of field specs"),
        ({"items": [str, int]}, "exactly one item template"),
        ({"name": str, 3: int}, "field names must be strings"),
        ({"type": None}, "None is not a spec"),
        ({"type": int, "options": [1, "2"]}, "option value '2' is not a valid int"),
        ({"items": int, "options": [[1], 2]}, "option value 2 is not a valid list"),
    ],
    ids=[
        "empty-options",
        "options-not-a-list",
        "description-not-a-string",
        "type-as-a-string",
        "fields-not-a-dict",
        "items-two-templates",
        "non-string-field-name",
        "type-none",
        "options-not-of-the-type",
        "options-not-of-the-list-type",
    ],
)
def test_schema_malformed_meta_spec_or_object_is_type_error(spec: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        decision.render_options(schema_option({"x": spec}))


@pytest.mark.parametrize(
    "options",
    [
        {"plan": ("Plan.", {"decision": str})},
        [("plan", "Plan.", {"steps": [str], "decision": str})],
    ],
    ids=["dict-form", "list-form"],
)
def test_schema_field_named_decision_is_type_error_at_definition(options: object) -> None:
    with pytest.raises(TypeError, match="may not be named 'decision'"):
        decision.render_options(options)


def test_schema_field_named_decision_is_allowed_below_the_top_level() -> None:
    assert fields_of(
        {"why": {"decision": str, "reason": str}}, why={"decision": "d", "reason": "r"}
    )


# Properties ---------------------------------------------------------------------------------

# Strings stay inside a small alphabet so that the property exercises the schema language,
# not the reply extractor's handling of fences and reasoning tags.
TEXT = st.text(alphabet=string.ascii_letters + string.digits + " .,;:!?'-_", max_size=12)
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda n: n not in META_KEYS and n != "decision"
)
JSON_LEAF = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | TEXT
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=8,
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=32) | st.integers(-1000, 1000)

Pair = tuple[object, st.SearchStrategy[Any]]


def enum_leaf(values: list[object]) -> Pair:
    return {"options": values}, st.sampled_from(values)


LEAVES: st.SearchStrategy[Pair] = st.one_of(
    st.just((str, TEXT)),
    st.just((int, st.integers(-(10**9), 10**9))),
    st.just((float, FLOATS)),
    st.just((bool, st.booleans())),
    st.just((list, st.lists(JSON, max_size=3))),
    st.just((dict, st.dictionaries(NAMES, JSON, max_size=3))),
    TEXT.map(lambda description: (description, TEXT)),
    st.just(({}, TEXT)),
    st.just((int | None, st.none() | st.integers())),
    st.just((list[str], st.lists(TEXT, max_size=3))),
    st.just((Literal["x", "y"], st.sampled_from(["x", "y"]))),
    st.lists(TEXT, min_size=1, max_size=4, unique=True).map(enum_leaf),
    st.lists(st.integers(-50, 50), min_size=1, max_size=4, unique=True).map(enum_leaf),
    st.just(({"type": int, "description": "a number"}, st.integers())),
)


def nest(inner: st.SearchStrategy[Pair]) -> st.SearchStrategy[Pair]:
    def as_list(pair: Pair) -> Pair:
        spec, values = pair
        return [spec], st.lists(values, max_size=3)

    def as_items(pair: Pair) -> Pair:
        spec, values = pair
        return {"items": spec, "description": "items"}, st.lists(values, max_size=3)

    def as_object(pairs: dict[str, Pair]) -> Pair:
        spec = {name: s for name, (s, _) in pairs.items()}
        return spec, st.fixed_dictionaries({name: v for name, (_, v) in pairs.items()})

    def as_fields(pairs: dict[str, Pair]) -> Pair:
        spec, values = as_object(pairs)
        return {"fields": spec}, values

    objects = st.dictionaries(NAMES, inner, min_size=1, max_size=3)
    return st.one_of(
        inner.map(as_list), inner.map(as_items), objects.map(as_object), objects.map(as_fields)
    )


SPECS = st.recursive(LEAVES, nest, max_leaves=10)
SCHEMAS = st.dictionaries(NAMES, SPECS, min_size=1, max_size=4).map(
    lambda pairs: (
        {name: spec for name, (spec, _) in pairs.items()},
        st.fixed_dictionaries({name: values for name, (_, values) in pairs.items()}),
    )
)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), pair=SCHEMAS)
def test_schema_property_any_schema_renders_and_a_matching_value_validates(
    data: st.DataObject, pair: tuple[dict[str, object], st.SearchStrategy[dict[str, Any]]]
) -> None:
    schema, values = pair
    options = schema_option(schema)
    text = decision.render_options(options)
    assert text.endswith("}}\n")
    assert not text.endswith("\n\n")
    assert text.splitlines()[0].startswith("fill(")
    # The Call: line is itself a valid pick.
    call_line = text.splitlines()[-1].removeprefix("    Call: ")
    assert decision.parse_args(call_line, options)[0] == "fill"
    # So is any value generated to match the schema, and it comes back equal.
    value = data.draw(values)
    name, fields = decision.parse_args(json.dumps({"call": "fill", "args": value}), options)
    assert name == "fill"
    assert fields == value


BAD_LEAVES = st.sampled_from(
    [
        5,
        None,
        1.5,
        True,
        b"x",
        (str,),
        object(),
        [str, int],
        [],
        {"options": []},
        {"options": "ab"},
        {"options": {"a": 1}},
        {"description": 5},
        {"description": str},
        {"type": "integer"},
        {"type": 5},
        {"type": int, "options": ["1"]},
        {"fields": 5},
        {"fields": [str]},
        {"items": []},
        {"name": str, 1: int},
    ]
)


def bury(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(
        inner.map(lambda spec: [spec]),
        inner.map(lambda spec: {"name": str, "inner": spec}),
        inner.map(lambda spec: {"fields": {"inner": spec}}),
        inner.map(lambda spec: {"items": spec}),
        inner.map(lambda spec: {"type": spec, "description": "buried"}),
    )


@settings(max_examples=150, deadline=None)
@given(bad=st.recursive(BAD_LEAVES, bury, max_leaves=6), good=SCHEMAS)
def test_schema_property_malformed_spec_raises_only_type_error(
    bad: object, good: tuple[dict[str, object], object]
) -> None:
    schema = {**good[0], "broken": bad}
    with pytest.raises(TypeError):
        decision.render_options(schema_option(schema))
    with pytest.raises(TypeError):
        decision.render_options([("fill", "Fill the form.", schema)])
