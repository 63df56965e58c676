"""Enforced picks: the menu compiled to one JSON Schema, and its OpenAI strict form.

Every option form of docs/decisions.md §2 is compiled; each strict schema is checked against the
subset OpenAI's strict mode accepts (the checker below), and values drawn from each schema
are picks the decision core accepts.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import random
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from engine import agentic_function, decision
from engine._decision._enforce import PICK_KEY, menu_schema, pick_schemas, strict_schema
from engine._decision._menu import build_menu
from engine.models._fill import fill

# ---------------------------------------------------------------------------------------------
# The subset of JSON Schema OpenAI's strict mode accepts

_STRICT_KEYS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf"}
    | {"$ref", "description"}
)
_STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_SCALARS = (str, int, float, bool, type(None))


def assert_strict(schema: dict[str, Any]) -> None:
    """Fail unless ``schema`` lies in the subset OpenAI's strict mode accepts.

    The root is an object (never ``anyOf``); every object lists all its properties as
    required and forbids others; only supported keywords appear; every ``$ref`` points into
    the root's ``$defs``; nesting is at most 10 objects deep and there are at most 5000
    properties in all.
    """
    assert schema.get("type") == "object", "the root must be an object"
    assert "anyOf" not in schema, "anyOf is not allowed at the root"
    defs = schema.get("$defs", {})
    counter = [0]
    _check_node({k: v for k, v in schema.items() if k != "$defs"}, defs, 0, counter, "$")
    for name, sub in defs.items():
        _check_node(sub, defs, 1, counter, f"$defs.{name}")
    assert counter[0] <= 5000


def _check_node(
    node: object, defs: dict[str, Any], depth: int, counter: list[int], path: str
) -> None:
    assert isinstance(node, dict), path
    unknown = set(node) - _STRICT_KEYS
    assert not unknown, f"{path}: unsupported keywords {sorted(unknown)}"
    if "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/$defs/"), path
        assert ref.removeprefix("#/$defs/") in defs, path
        return
    if "anyOf" in node:
        for i, branch in enumerate(node["anyOf"]):
            _check_node(branch, defs, depth, counter, f"{path}.anyOf[{i}]")
        return
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    assert kinds, f"{path}: no type"
    assert all(k in _STRICT_TYPES for k in kinds), f"{path}: type {kind!r}"
    if "enum" in node:
        assert all(isinstance(v, _SCALARS) for v in node["enum"]), path
    if kind == "object":
        assert depth < 10, f"{path}: nested deeper than 10"
        properties = node.get("properties")
        assert isinstance(properties, dict), f"{path}: an object needs properties"
        assert node.get("required") == list(properties), f"{path}: all properties required"
        assert node.get("additionalProperties") is False, f"{path}: additionalProperties"
        counter[0] += len(properties)
        for name, sub in properties.items():
            _check_node(sub, defs, depth + 1, counter, f"{path}.{name}")
    elif kind == "array":
        _check_node(node.get("items"), defs, depth + 1, counter, f"{path}[]")
    else:
        assert "properties" not in node, path
        assert "items" not in node, path


# ---------------------------------------------------------------------------------------------
# Options of every form


class Item(BaseModel):
    sku: str
    qty: int = 1
    note: str | None = None


class Tree(BaseModel):
    label: str
    children: list[Tree] = Field(default_factory=list)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


async def refund(amount: float, reason: str, note: str | None = None, urgent: bool = False) -> str:
    """Refund the customer."""
    return reason


def escalate(team: Literal["billing", "tech"], items: list[Item]) -> str:
    """Escalate with the items."""
    return team


@agentic_function(input={"level": {"options": [1, 2, 3]}, "account": {"hidden": True}})
async def tier(level: int, account: str = "main", runtime: object = None) -> int:
    """Set the tier."""
    return level


class Ticket:
    """Open a ticket."""

    def __init__(self, title: str, priority: int = 3) -> None:
        self.title = title


@dataclasses.dataclass
class Note:
    """Leave a note."""

    text: str
    color: Color = Color.RED


class Doubler:
    """Double a number."""

    def __call__(self, x: int) -> int:
        return x * 2


def tag(label: str, weight: float) -> str:
    return label


async def plant(tree: Tree) -> str:
    """Plant a tree."""
    return tree.label


FORMS = [
    pytest.param({"refund": refund}, id="dict-function"),
    pytest.param({"ticket": Ticket}, id="dict-class"),
    pytest.param({"note": Note}, id="dict-dataclass"),
    pytest.param({"double": Doubler()}, id="dict-callable-instance"),
    pytest.param({"tag": functools.partial(tag, weight=1.0)}, id="dict-partial"),
    pytest.param({"tier": tier}, id="dict-agentic-function"),
    pytest.param({"escalate": (escalate, "Send it up.")}, id="dict-callable-description"),
    pytest.param(
        {"ship": ("Ship it.", {"carrier": {"options": ["ups", "dhl"]}, "days": int})},
        id="dict-schema",
    ),
    pytest.param({"wait": ("Wait.", {})}, id="dict-empty-schema"),
    pytest.param({"two": (2, "The number two.")}, id="dict-value-description"),
    pytest.param(
        {"none": None, "data": {"a": 1}, "seq": [1, 2], "triple": (1, 2, 3)}, id="dict-values"
    ),
    pytest.param([refund, escalate], id="list-callables"),
    pytest.param([(refund, "Give money back.")], id="list-callable-description"),
    pytest.param(["approve", "deny"], id="list-names"),
    pytest.param([("approve", "Approve it.")], id="list-name-description"),
    pytest.param(
        [
            (
                "plan",
                "Plan the steps.",
                {
                    "title": "a short title",
                    "steps": [{"action": str, "minutes": int}],
                    "meta": {"fields": {"owner": str, "tags": [str]}},
                    "mode": {"options": ["fast", "safe"]},
                    "count": {"type": int, "description": "how many"},
                    "lines": {"items": str},
                },
            )
        ],
        id="list-schema-language",
    ),
    pytest.param({"plant": plant}, id="recursive-model"),
    pytest.param(
        {"refund": refund, "close": ("Close it.", {"why": str}), "later": "later"}, id="mixed"
    ),
]


@pytest.mark.parametrize("options", FORMS)
def test_enforce_strict_schema_is_in_openai_strict_subset(options: object) -> None:
    _, strict = pick_schemas(build_menu(options))

    assert strict is not None
    assert_strict(strict)


@pytest.mark.parametrize("options", FORMS)
def test_enforce_branch_per_option_with_call_fixed_to_its_name(options: object) -> None:
    menu = build_menu(options)
    schema = menu_schema(menu)

    pick = schema["properties"][PICK_KEY]
    branches = pick.get("anyOf", [pick])
    assert [b["properties"]["call"]["const"] for b in branches] == menu.names
    assert all(b["required"] == ["call", "args"] for b in branches)


@pytest.mark.parametrize("options", FORMS)
@pytest.mark.parametrize("which", ["schema", "strict"])
def test_enforce_values_drawn_from_the_schema_are_valid_picks(options: object, which: str) -> None:
    schema, strict = pick_schemas(build_menu(options))
    target = strict if which == "strict" else schema
    assert target is not None
    rng = random.Random(7)

    for _ in range(25):
        reply = json.dumps(fill(target, rng)[PICK_KEY])
        chosen, _ = decision.parse_args(reply, options, context={"account": "x"})

        assert chosen is not None


def test_enforce_optional_parameters_are_nullable_and_required_in_strict_form() -> None:
    _, strict = pick_schemas(build_menu({"refund": refund}))
    assert strict is not None

    args = strict["properties"][PICK_KEY]["properties"]["args"]
    assert args["required"] == ["amount", "reason", "note", "urgent"]
    assert args["properties"]["urgent"] == {"anyOf": [{"type": "boolean"}, {"type": "null"}]}
    assert args["properties"]["amount"] == {"type": "number"}


def test_enforce_null_for_an_optional_parameter_means_its_default() -> None:
    reply = json.dumps({"call": "refund", "args": {"amount": 5, "reason": "r", "urgent": None}})

    _, kwargs = decision.parse_args(reply, {"refund": refund})

    assert "urgent" not in kwargs


def test_enforce_nested_optional_fields_stay_non_nullable_in_strict_form() -> None:
    _, strict = pick_schemas(build_menu([escalate]))
    assert strict is not None

    item = strict["properties"][PICK_KEY]["properties"]["args"]["properties"]["items"]["items"]
    item = strict["$defs"][item["$ref"].rsplit("/", 1)[-1]] if "$ref" in item else item
    assert item["required"] == ["sku", "qty", "note"]
    assert item["properties"]["qty"] == {"type": "integer"}


def test_enforce_hidden_and_runtime_parameters_never_reach_the_schema() -> None:
    schema = menu_schema(build_menu({"tier": tier}))

    args = schema["properties"][PICK_KEY]["properties"]["args"]
    assert set(args["properties"]) == {"level"}


def test_enforce_one_option_needs_no_any_of() -> None:
    schema = menu_schema(build_menu(["only"]))

    assert "anyOf" not in schema["properties"][PICK_KEY]


def _tree_model(extra: str) -> type[BaseModel]:
    """Build a recursive model named ``Node`` whose children sit under ``extra``."""
    namespace: dict[str, Any] = {"__annotations__": {"label": str, extra: "list[Node]"}}
    namespace[extra] = Field(default_factory=list)
    model = type("Node", (BaseModel,), namespace)
    model.model_rebuild(_types_namespace={"Node": model})
    return model


NodeA = _tree_model("kids")
NodeB = _tree_model("leaves")


async def one(node: NodeA) -> None:  # type: ignore[valid-type]
    """One."""


async def two(node: NodeB) -> None:  # type: ignore[valid-type]
    """Two."""


def test_enforce_clashing_model_names_are_renamed_per_option() -> None:
    schema, strict = pick_schemas(build_menu({"one": one, "two": two}))

    assert len(schema["$defs"]) == 2
    assert strict is not None
    assert_strict(strict)
    for reply in (
        {"call": "one", "args": {"node": {"label": "a", "kids": [{"label": "b", "kids": []}]}}},
        {"call": "two", "args": {"node": {"label": "a", "leaves": []}}},
    ):
        assert decision.parse_args(json.dumps(reply), {"one": one, "two": two})


async def free_form(payload: dict[str, Any]) -> None:
    """Take anything."""


async def counts(by_name: dict[str, int]) -> None:
    """Take counts."""


async def anything(value: Any) -> None:
    """Take a value of any type."""


async def pair(point: tuple[int, int]) -> None:
    """Take a pair."""


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"free": free_form}, id="free-form-dict"),
        pytest.param({"counts": counts}, id="typed-dict-values"),
        pytest.param({"any": anything}, id="untyped"),
        pytest.param({"pair": pair}, id="tuple"),
        pytest.param([("blob", "A blob.", {"data": dict})], id="schema-dict-field"),
    ],
)
def test_enforce_without_a_strict_form_falls_back_to_the_plain_schema(options: object) -> None:
    schema, strict = pick_schemas(build_menu(options))

    assert strict is None
    assert schema["properties"][PICK_KEY]


def test_enforce_too_deep_has_no_strict_form() -> None:
    nested: dict[str, Any] = {"leaf": str}
    for i in range(11):
        nested = {f"level{i}": nested}

    _, strict = pick_schemas(build_menu([("deep", "Deep.", nested)]))

    assert strict is None


def test_enforce_strict_converts_const_one_of_and_single_all_of() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"const": "x"},
            "b": {"oneOf": [{"type": "string", "format": "email"}, {"type": "integer"}]},
            "c": {"allOf": [{"$ref": "#/$defs/C"}], "description": "see C", "default": {}},
        },
        "required": ["a", "b", "c"],
        "$defs": {"C": {"type": "object", "properties": {"n": {"type": "integer"}}, "title": "C"}},
    }

    strict = strict_schema(schema)

    assert strict is not None
    assert_strict(strict)
    assert strict["properties"]["a"] == {"enum": ["x"], "type": "string"}
    assert strict["properties"]["c"] == {"$ref": "#/$defs/C", "description": "see C"}


def test_enforce_schemas_are_computed_once_per_menu() -> None:
    menu = build_menu({"refund": refund, "close": ("Close it.", {"why": str})})

    assert pick_schemas(menu) is pick_schemas(menu)


def test_enforce_strict_checker_rejects_what_strict_mode_rejects() -> None:
    with pytest.raises(AssertionError, match="root"):
        assert_strict({"anyOf": [{"type": "object"}]})
    with pytest.raises(AssertionError, match="required"):
        assert_strict({"type": "object", "properties": {"a": {"type": "string"}}, "required": []})
    with pytest.raises(AssertionError, match="unsupported"):
        assert_strict(
            {
                "type": "object",
                "properties": {"a": {"type": "string", "default": "x"}},
                "required": ["a"],
                "additionalProperties": False,
            }
        )
