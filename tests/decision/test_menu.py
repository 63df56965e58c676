"""docs/decisions.md §5: the menu text, line by line."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel

from engine import RetryEvent, Runtime, agentic_function, decision
from engine.models import ScriptedModel


class Customer(BaseModel):
    name: str
    vip: bool = False


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


class Tone(enum.StrEnum):
    WARM = "warm"
    DRY = "dry"


class Mixed(enum.Enum):
    AUTO = "auto"
    NONE = None
    TEN = 10
    ALSO_TEN = 10  # an alias is no option of its own


class Point(enum.Enum):
    ORIGIN = (0, 0)  # JSON sends a list, which pydantic does not take back as this member


class Perm(enum.Flag):
    READ = 1
    WRITE = 2


@agentic_function(
    input={
        "reason": {"description": "why the customer gets money back"},
        "channel": {"options": ["email", "phone"]},
        "account": {"hidden": True},
    }
)
async def refund(
    amount: float,
    reason: str,
    items: list[str],
    channel: str = "email",
    note: str | None = None,
    customer: Customer | None = None,
    urgent: bool = False,
    copies: int = 1,
    extra: dict[str, int] | None = None,
    account: str = "main",
    runtime: Runtime | None = None,
) -> str:
    """Refund the customer.

    The second paragraph is for readers of the code, not for the model.
    """
    return reason


async def wait() -> str:
    """Wait for the customer to answer."""
    return "waiting"


async def tier(level: Literal[1, 2, 3], label: Literal["gold", "silver"] = "gold") -> str:
    """Set the tier."""
    return label


REFUND_BLOCK = [
    "refund(amount: float, reason: str, items: list[str], channel: str = "
    '"email", note: str | None = null, customer: Customer | None = null, urgent: bool = false, '
    "copies: int = 1, extra: dict[str, int] | None = null)",
    "    Refund the customer.",
    "    amount",
    "    reason: why the customer gets money back",
    "    items",
    '    channel (options: "email", "phone")',
    "    note",
    "    customer",
    "    urgent",
    "    copies",
    "    extra",
    '    Call: {"call": "refund", "args": {"amount": 0.0, "reason": "<str>", "items": ["<str>"], '
    '"channel": "email", "note": "<str>", "customer": {"name": "<str>", "vip": false}, '
    '"urgent": false, "copies": 0, "extra": {}}}',
]


def test_menu_function_option_block_line_by_line() -> None:
    assert decision.render_options([refund]).splitlines() == REFUND_BLOCK


def test_menu_representative_options_exact_text() -> None:
    options = [
        refund,
        wait,
        tier,
        "done",
        ("escalate", "Hand over to a human."),
        (
            "plan",
            "Produce a plan.",
            {
                "steps": [{"action": {"options": ["call", "mail"]}, "target": str}],
                "rationale": "why this plan",
                "budget": {"type": int, "description": "in euros"},
                "ratio": float,
                "tags": list,
                "meta": dict,
                "approved": bool,
            },
        ),
    ]
    expected = [
        *REFUND_BLOCK,
        "",
        "wait()",
        "    Wait for the customer to answer.",
        '    Call: {"call": "wait"}',
        "",
        'tier(level: int, label: str = "gold")',
        "    Set the tier.",
        "    level (options: 1, 2, 3)",
        '    label (options: "gold", "silver")',
        '    Call: {"call": "tier", "args": {"level": 1, "label": "gold"}}',
        "",
        "done()",
        '    Call: {"call": "done"}',
        "",
        "escalate()",
        "    Hand over to a human.",
        '    Call: {"call": "escalate"}',
        "",
        "plan(steps: list[dict], rationale: str, budget: int, ratio: float, tags: list, "
        "meta: dict, approved: bool)",
        "    Produce a plan.",
        "    steps",
        "    rationale: why this plan",
        "    budget: in euros",
        "    ratio",
        "    tags",
        "    meta",
        "    approved",
        '    Call: {"call": "plan", "args": {"steps": [{"action": "call", "target": "<str>"}], '
        '"rationale": "<str>", "budget": 0, "ratio": 0.0, "tags": [], "meta": {}, '
        '"approved": false}}',
    ]
    assert decision.render_options(options) == "\n".join(expected) + "\n"


def test_menu_dict_form_value_and_schema_options_exact_text() -> None:
    options = {
        "close": ("CLOSED", "Close the ticket."),
        "snooze": {"until": "tomorrow"},
        "reply": ("Write a reply.", {"body": "the text", "tone": {"options": ["warm", "dry"]}}),
    }
    assert decision.render_options(options) == (
        "close()\n"
        "    Close the ticket.\n"
        '    Call: {"call": "close"}\n'
        "\n"
        "snooze()\n"
        '    Call: {"call": "snooze"}\n'
        "\n"
        "reply(body: str, tone: str)\n"
        "    Write a reply.\n"
        "    body: the text\n"
        '    tone (options: "warm", "dry")\n'
        '    Call: {"call": "reply", "args": {"body": "<str>", "tone": "warm"}}\n'
    )


@pytest.mark.parametrize(
    ("default", "shown"),
    [
        ("fast", '"fast"'),
        (None, "null"),
        (3, "3"),
        (2.5, "2.5"),
        (True, "true"),
        ([], "[]"),
        ({"k": [1]}, '{"k": [1]}'),
        ((1, 2), "[1, 2]"),
        ("naïve", '"naïve"'),
        (float("nan"), '"nan"'),
        (object, "\"<class 'object'>\""),
    ],
    ids=[
        "str",
        "none",
        "int",
        "float",
        "bool",
        "list",
        "dict",
        "tuple",
        "non-ascii",
        "nan-as-its-repr",
        "non-json-as-its-repr",
    ],
)
def test_menu_signature_shows_defaults_in_json_form(default: object, shown: str) -> None:
    async def act(value: object = default) -> None:
        """Act."""

    line = decision.render_options({"act": act}).splitlines()[0]
    assert line == f"act(value: any = {shown})"


@pytest.mark.parametrize(
    ("default", "shown"),
    [
        (Color.BLUE, '"blue"'),
        (Size.LARGE, "2"),
        (Customer(name="Ann"), '{"name": "Ann", "vip": false}'),
        (datetime.date(2024, 1, 2), '"2024-01-02"'),
        (datetime.datetime(2024, 1, 2, 3, 4, 5), '"2024-01-02T03:04:05"'),
        (frozenset({1}), "[1]"),
        (b"raw", '"raw"'),
        ([Color.RED, {"on": datetime.date(2024, 1, 2)}], '["red", {"on": "2024-01-02"}]'),
        ([object], "\"[<class 'object'>]\""),
    ],
    ids=[
        "enum-member",
        "int-enum-member",
        "model",
        "date",
        "datetime",
        "frozenset",
        "bytes",
        "nested",
        "nested-non-json-as-its-repr",
    ],
)
def test_menu_signature_shows_other_defaults_as_pydantic_writes_them(
    default: object, shown: str
) -> None:
    async def act(value: object = default) -> None:
        """Act."""

    line = decision.render_options({"act": act}).splitlines()[0]
    assert line == f"act(value: any = {shown})"


def test_menu_signature_shows_typed_defaults_in_json_form() -> None:
    def plan(
        color: Color = Color.BLUE,
        customer: Customer = Customer(name="x"),  # noqa: B008 - the default under test
        day: datetime.date = datetime.date(2024, 1, 2),
        ids: set[int] = frozenset({1}),  # type: ignore[assignment]
    ) -> None:
        """Plan."""

    assert decision.render_options([plan]).splitlines()[0] == (
        'plan(color: Color = "blue", customer: Customer = {"name": "x", "vip": false}, '
        'day: date = "2024-01-02", ids: set[int] = [1])'
    )


@pytest.mark.parametrize(
    ("values", "shown", "placeholder"),
    [
        (["a", "b"], '"a", "b"', '"a"'),
        ([1, 2], "1, 2", "1"),
        ([0.5, 2.0], "0.5, 2.0", "0.5"),
        ([False, True], "false, true", "false"),
        (["a", None], '"a", null', '"a"'),
        (['say "hi"'], '"say \\"hi\\""', '"say \\"hi\\""'),
    ],
    ids=["str", "int", "float", "bool", "null", "quotes"],
)
def test_menu_enum_values_are_written_as_json(
    values: list[object], shown: str, placeholder: str
) -> None:
    options = {"pick": ("Pick.", {"x": {"options": values}})}
    lines = decision.render_options(options).splitlines()
    assert lines[2] == f"    x (options: {shown})"
    assert lines[3] == f'    Call: {{"call": "pick", "args": {{"x": {placeholder}}}}}'


@pytest.mark.parametrize(
    ("annotation", "shown", "placeholder"),
    [
        (Color, '"red", "blue"', '"red"'),
        (Size, "1, 2", "1"),
        (Tone, '"warm", "dry"', '"warm"'),
        (Mixed, '"auto", null, 10', '"auto"'),
        (Color | None, '"red", "blue"', '"red"'),
        (Annotated[Size, "metadata"], "1, 2", "1"),
    ],
    ids=["enum", "int-enum", "str-enum", "mixed-values-and-alias", "optional", "annotated"],
)
def test_menu_enum_type_lists_its_members_values_as_json_options(
    annotation: object, shown: str, placeholder: str
) -> None:
    def paint(color: str) -> None:
        """Paint."""

    paint.__annotations__["color"] = annotation
    for options in ([paint], {"paint": ("Paint.", {"color": annotation})}):
        lines = decision.render_options(options).splitlines()
        assert lines[2] == f"    color (options: {shown})"
        assert lines[3] == f'    Call: {{"call": "paint", "args": {{"color": {placeholder}}}}}'


@pytest.mark.parametrize(
    ("annotation", "placeholder"),
    [(Point, "[0, 0]"), (Perm, "1")],
    ids=["values-json-cannot-send", "flag-takes-combinations"],
)
def test_menu_enum_type_whose_values_cannot_all_be_listed_shows_no_options(
    annotation: object, placeholder: str
) -> None:
    lines = decision.render_options({"paint": ("Paint.", {"x": annotation})}).splitlines()
    assert lines[2] == "    x"
    assert lines[3] == f'    Call: {{"call": "paint", "args": {{"x": {placeholder}}}}}'


async def test_menu_enum_options_are_what_a_pick_may_send() -> None:
    async def paint(color: Color, size: Size = Size.SMALL) -> tuple[Color, Size]:
        """Paint the wall."""
        return color, size

    model = ScriptedModel(
        [
            json.dumps({"call": "paint", "args": {"color": "green"}}),
            json.dumps({"call": "paint", "args": {"color": "blue", "size": 2}}),
        ]
    )
    events: list[RetryEvent] = []
    runtime = Runtime(model)
    result = await decision.make("Pick.", [paint], runtime=runtime, on_retry=events.append)
    assert result == (Color.BLUE, Size.LARGE)
    menu = model.requests[0].messages[0].text
    assert '    color (options: "red", "blue")\n    size (options: 1, 2)\n' in menu
    assert [e.kind for e in events] == ["enum_violation"]
    (choice,) = model.requests[0].choices or []
    assert choice.parameters["properties"]["color"]["enum"] == ["red", "blue"]


async def test_menu_flag_enum_still_takes_combinations() -> None:
    async def grant(perm: Perm) -> Perm:
        """Grant."""
        return perm

    model = ScriptedModel([json.dumps({"call": "grant", "args": {"perm": 3}})])
    assert await decision.make("Pick.", [grant], runtime=Runtime(model)) == Perm.READ | Perm.WRITE


@pytest.mark.parametrize(
    ("spec", "placeholder"),
    [
        (str, '"<str>"'),
        (int, "0"),
        (float, "0.0"),
        (bool, "false"),
        (list, "[]"),
        (dict, "{}"),
        ([int], "[0]"),
        ([[str]], '[["<str>"]]'),
        ({"a": int, "b": [str]}, '{"a": 0, "b": ["<str>"]}'),
        ({"options": ["x", "y"]}, '"x"'),
        (int | None, "0"),
        (list[str] | None, '["<str>"]'),
        (Customer, '{"name": "<str>", "vip": false}'),
        (Customer | None, '{"name": "<str>", "vip": false}'),
    ],
    ids=[
        "str",
        "int",
        "float",
        "bool",
        "list",
        "dict",
        "list-template",
        "nested-list",
        "nested-object",
        "enum-first-value",
        "optional",
        "optional-list",
        "model",
        "optional-model",
    ],
)
def test_menu_call_line_placeholders(spec: object, placeholder: str) -> None:
    call_line = decision.render_options({"f": ("F.", {"x": spec})}).splitlines()[-1]
    assert call_line == f'    Call: {{"call": "f", "args": {{"x": {placeholder}}}}}'
    assert json.loads(call_line.removeprefix("    Call: "))  # the placeholder line is JSON


@pytest.mark.parametrize(
    ("spec", "label"),
    [
        (str, "str"),
        (list[str], "list[str]"),
        (int | None, "int | None"),
        (Customer, "Customer"),
        (list[Customer] | None, "list[Customer] | None"),
        (dict[str, list[int]], "dict[str, list[int]]"),
        (int | str, "int | str"),
        ([str], "list[str]"),
        ({"a": str}, "dict"),
    ],
    ids=[
        "str",
        "list",
        "optional",
        "model",
        "optional-list-of-models",
        "nested-generics",
        "union",
        "schema-list",
        "schema-object",
    ],
)
def test_menu_types_are_written_as_a_reader_would(spec: object, label: str) -> None:
    line = decision.render_options({"f": ("F.", {"x": spec})}).splitlines()[0]
    assert line == f"f(x: {label})"


@pytest.mark.parametrize(
    "options",
    [["a"], ["a", "b", "c"], {"x": 1, "y": ("d", {"f": str})}, [refund, wait]],
    ids=["one", "three", "dict", "functions"],
)
def test_menu_blocks_are_separated_by_one_blank_line_and_end_with_one_newline(
    options: object,
) -> None:
    text = decision.render_options(options)
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    blocks = text.removesuffix("\n").split("\n\n")
    assert len(blocks) == len(options)  # type: ignore[arg-type]
    assert all(block.splitlines()[-1].startswith("    Call: ") for block in blocks)


async def test_menu_is_what_the_model_reads_after_the_prompt() -> None:
    model = ScriptedModel([json.dumps({"call": "wait"})])
    options = [refund, wait, "done"]
    assert await decision.make("Pick the next step.", options, runtime=Runtime(model)) == "waiting"
    (request,) = model.requests
    assert [m.role for m in request.messages] == ["user"]
    assert request.messages[0].text == "Pick the next step.\n\n" + decision.render_options(options)


def test_menu_multi_line_descriptions_stay_inside_their_block() -> None:
    options = [
        ("escalate", "Hand over to a human.\n\n  Only when the customer asks twice.\n"),
        ("note", "Write a note.", {"text": {"description": "the note,\nin one paragraph"}}),
    ]
    assert decision.render_options(options) == (
        "escalate()\n"
        "    Hand over to a human.\n"
        "    Only when the customer asks twice.\n"
        '    Call: {"call": "escalate"}\n'
        "\n"
        "note(text: str)\n"
        "    Write a note.\n"
        "    text: the note,\n"
        "        in one paragraph\n"
        '    Call: {"call": "note", "args": {"text": "<str>"}}\n'
    )


def test_menu_whitespace_description_shows_no_description_line() -> None:
    assert decision.render_options([("done", "   ")]) == 'done()\n    Call: {"call": "done"}\n'


class Line(BaseModel):
    sku: str
    qty: int


class Basket(BaseModel):
    lines: list[Line]
    gift: Line | None = None


def references(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in references(value)]
    if isinstance(node, list):
        return [r for value in node for r in references(value)]
    return []


async def test_menu_choices_offered_to_the_model_are_self_contained_json_schema() -> None:
    async def checkout(basket: Basket, backups: list[Basket] | None = None) -> None:
        """Check out."""

    model = ScriptedModel([json.dumps({"call": "done"})])
    await decision.make("Pick.", [checkout, "done"], runtime=Runtime(model))
    (request,) = model.requests
    assert request.choices is not None
    choice = next(c for c in request.choices if c.name == "checkout")
    parameters = choice.parameters
    assert parameters["required"] == ["basket"]
    refs = references(parameters)
    assert refs
    for ref in refs:  # every reference resolves from the root of the parameters
        assert ref.startswith("#/$defs/")
        assert ref.removeprefix("#/$defs/") in parameters["$defs"]
    assert '"$defs":' not in json.dumps(parameters["properties"])
