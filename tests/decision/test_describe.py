"""A menu described for a person (``describe_menu``) and a pick that is valid (``example_pick``)."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from engine import agentic_function
from engine._decision import (
    DECISION_FINISH_INSTRUCTION,
    RawPick,
    asked_prompt,
    build_menu,
    describe_menu,
    example_pick,
    validate,
)
from engine.models import Message, TextBlock


class Queue(enum.Enum):
    BILLING = "billing"
    TECH = "tech"


class Address(BaseModel):
    """Where to ship."""

    street: str
    zip: Annotated[str, Field(min_length=5, max_length=5, description="postal code")]
    floor: int = 0


@agentic_function(
    input={
        "note": {"description": "why, in a few words"},
        "account": {"hidden": True},
    }
)
async def classify(
    severity: Literal["low", "high"],
    note: str = "",
    queue: Queue = Queue.TECH,
    account: str = "",
    runtime: object = None,
) -> str:
    """Classify the ticket."""
    return severity


async def remove(reason: str) -> str:
    """Remove the post."""
    return reason


async def ship(to: Address, count: Annotated[int, Field(ge=1, le=9)], when: datetime.date) -> str:
    return "shipped"


PLAN = (
    "Plan the fix",
    {
        "title": "a one-line summary",
        "steps": [{"action": {"options": ["restart", "rollback"]}, "minutes": int}],
    },
)
OPTIONS: dict[str, object] = {
    "classify": classify,
    "remove": remove,
    "ship": ship,
    "plan": PLAN,
    "close": ("CLOSED", "Close the ticket"),
}


def described(name: str) -> dict[str, Any]:
    return next(o for o in describe_menu(OPTIONS) if o["name"] == name)


def is_valid(pick: dict[str, Any], options: object = OPTIONS) -> dict[str, Any]:
    raw = RawPick(pick["call"], pick.get("args"), "args" in pick, {})
    return validate(raw, build_menu(options), strict=True).args


def test_describe_function_option_lists_only_what_a_pick_fills() -> None:
    option = described("classify")
    assert (option["kind"], option["description"]) == ("function", "Classify the ticket.")
    assert [a["name"] for a in option["args"]] == ["severity", "note", "queue"]
    severity, note, queue = option["args"]
    assert severity == {
        "name": "severity",
        "type": "'low' | 'high'",
        "required": True,
        "enum": ["low", "high"],
        "description": None,
        "example": "low",
    }
    assert note == {
        "name": "note",
        "type": "str",
        "required": False,
        "default": "",
        "description": "why, in a few words",
        "example": "text",
    }
    assert (queue["type"], queue["default"], queue["enum"]) == (
        "'billing' | 'tech'",
        "tech",
        ["billing", "tech"],
    )


def test_describe_pydantic_types_by_their_fields_and_bounds() -> None:
    to, count, when = described("ship")["args"]
    assert to["type"] == "{street: str, zip: str, floor: int}"
    assert to["description"] == "Where to ship."
    assert [(f["name"], f["required"]) for f in to["fields"]] == [
        ("street", True),
        ("zip", True),
        ("floor", False),
    ]
    assert to["fields"][1]["bounds"] == {"minLength": 5, "maxLength": 5}
    assert to["fields"][2]["default"] == 0
    assert (count["type"], count["bounds"], count["example"]) == (
        "int",
        {"minimum": 1, "maximum": 9},
        1,
    )
    assert (when["type"], when["example"]) == ("date", "2024-01-31")


def test_describe_schema_option_nests_objects_and_lists() -> None:
    option = described("plan")
    assert option["kind"] == "schema"
    title, steps = option["args"]
    assert (title["type"], title["required"], title["description"]) == (
        "str",
        True,
        "a one-line summary",
    )
    assert steps["type"] == "list[{action: 'restart' | 'rollback', minutes: int}]"
    assert [f["name"] for f in steps["items"]["fields"]] == ["action", "minutes"]
    assert steps["items"]["fields"][0]["enum"] == ["restart", "rollback"]


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({"close": ("CLOSED", "Close the ticket")}, "value"),
        (["billing"], "text"),
        ([("note", "Leave a note", {})], "schema"),
    ],
    ids=["value", "text", "empty-schema"],
)
def test_describe_options_without_arguments(options: object, kind: str) -> None:
    (option,) = describe_menu(options)
    assert (option["kind"], option["args"]) == (kind, [])
    assert example_pick(option) == {"call": option["name"]}


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


OPAQUE = Opaque()


def test_describe_menu_is_json_data() -> None:
    def odd(limit: float = float("inf"), thing: Any = OPAQUE) -> None:
        """A lone \ud800 surrogate."""

    described_menu = describe_menu({"odd\ud800": odd, **OPTIONS})
    text = json.dumps(described_menu, allow_nan=False)
    assert json.loads(text) == described_menu
    limit, thing = described_menu[0]["args"]
    assert (limit["default"], thing["default"]) == ("inf", "<opaque>")
    assert described_menu[0]["name"] == "odd\\ud800"


def test_example_pick_fills_required_arguments_validly() -> None:
    assert example_pick(described("remove")) == {"call": "remove", "args": {"reason": "text"}}
    for option in describe_menu(OPTIONS):
        is_valid(example_pick(option))
    shipped = is_valid(example_pick(described("ship")))
    assert shipped["to"] == Address(street="text", zip="textx")


def test_example_pick_builds_from_a_description_without_examples() -> None:
    option = described("plan")
    for arg in option["args"]:
        del arg["example"]
    assert example_pick(option) == {"call": "plan", "args": {"title": "text", "steps": []}}
    option = {
        "name": "plan",
        "args": [
            {"name": "level", "type": "int", "required": True},
            {"name": "tag", "type": "'a' | 'b'", "enum": ["a", "b"], "required": True},
            {
                "name": "box",
                "type": "{w: float}",
                "required": True,
                "fields": [{"name": "w", "type": "float", "required": True}],
            },
            {"name": "skip", "type": "bool", "required": False},
        ],
    }
    assert example_pick(option) == {
        "call": "plan",
        "args": {"level": 0, "tag": "a", "box": {"w": 0.0}},
    }


def test_asked_prompt_is_the_question_without_the_menu() -> None:
    menu = build_menu(OPTIONS)
    made = [Message(role="user", content=[TextBlock(text=f"Ticket: it broke.\n\n{menu.text}")])]
    assert asked_prompt(made, menu) == "Ticket: it broke."
    executed = [
        Message(role="system", content=[TextBlock(text="Be brief.")]),
        Message(
            role="user",
            content=[
                TextBlock(text="Review the change."),
                TextBlock(text=f"{DECISION_FINISH_INSTRUCTION}\n\n{menu.text}"),
            ],
        ),
    ]
    assert asked_prompt(executed, OPTIONS) == "Review the change."
    long = [Message(role="user", content=[TextBlock(text="x" * 5000)])]
    assert len(asked_prompt(long, menu)) == 2000
    assert asked_prompt(long, menu).endswith("…")
    assert asked_prompt([], menu) == ""


def test_describe_menu_twice_gives_data_of_its_own() -> None:
    menu = build_menu(OPTIONS)
    first, second = describe_menu(menu), describe_menu(menu)
    assert first == second
    first[0]["args"].clear()
    assert describe_menu(menu) == second


def test_the_same_values_in_another_order_keep_their_own_order() -> None:
    # Literal["low", "high"] == Literal["high", "low"]: a cache keyed by the form alone would
    # serve one menu the other's order.
    def first(level: Literal["high", "low"]) -> None: ...

    def second(level: Literal["low", "high"]) -> None: ...

    (a,) = describe_menu([first])
    (b,) = describe_menu([second])
    assert a["args"][0]["enum"] == ["high", "low"]
    assert b["args"][0]["enum"] == ["low", "high"]
    assert 'options: "low", "high"' in build_menu([second]).text
