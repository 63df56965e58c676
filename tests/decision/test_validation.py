"""docs/decisions.md §7: validation order, failure kinds and path-named messages."""

from __future__ import annotations

import enum
import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from engine import DecisionError, Runtime, agentic_function, decision
from engine.models import ScriptedModel


def pick(call: object, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def ask(options: object, reply: str) -> Any:
    """Ask once, without re-picks, and return the resolved result."""
    return await decision.make("Pick one.", options, runtime=Runtime(ScriptedModel([reply])))


async def fail(options: object, reply: str) -> DecisionError:
    """Ask once, without re-picks, and return the DecisionError it must raise."""
    model = ScriptedModel([reply])
    with pytest.raises(DecisionError) as info:
        await decision.make("Pick one.", options, runtime=Runtime(model), max_retries=0)
    return info.value


async def book(city: str, nights: int, breakfast: bool = False) -> dict[str, object]:
    """Book a hotel."""
    return {"city": city, "nights": nights, "breakfast": breakfast}


async def rate(score: float) -> float:
    """Rate the answer."""
    return score


@agentic_function(input={"tier": {"options": ["gold", "silver"]}})
async def upgrade(tier: str) -> str:
    """Upgrade the account."""
    return tier


async def mode(level: Literal[1, 2, 3]) -> int:
    """Set the mode."""
    return level


PLAN: dict[str, object] = {
    "plan": ("Produce a plan.", {"steps": [{"action": str, "target": str}], "rationale": str})
}
FUNCTIONS: list[object] = [book, rate, upgrade, mode]


# 1. No pick ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    ["I would book the hotel.", "", '{"answer": 42}', "```python\nbook()\n```"],
    ids=["prose", "empty", "object-without-call", "code"],
)
async def test_validate_reply_without_pick_is_no_action(reply: str) -> None:
    err = await fail(FUNCTIONS, reply)

    assert err.kind == "no_action"


# 2. Unknown call ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    ["cancel", "Book", " book", "book ", 5, None, ["book"]],
    ids=["other", "case", "leading-space", "trailing-space", "int", "null", "list"],
)
async def test_validate_call_not_an_exact_option_name_is_unknown_call(call: object) -> None:
    err = await fail(FUNCTIONS, json.dumps({"call": call, "args": {}}))

    assert err.kind == "unknown_call"
    assert "book, rate, upgrade, mode" in err.message


async def test_validate_unknown_call_wins_over_bad_args() -> None:
    err = await fail(FUNCTIONS, '{"call": "cancel", "args": 5}')

    assert err.kind == "unknown_call"


# 3. args ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    ['{"call": "done"}', '{"call": "done", "args": null}', '{"call": "done", "args": {}}'],
    ids=["missing", "null", "empty"],
)
async def test_validate_missing_null_or_empty_args_mean_no_args(reply: str) -> None:
    async def done(note: str = "none") -> str:
        return note

    assert await ask([done], reply) == "none"


@pytest.mark.parametrize("args", [5, [1, 2], True, 2.5], ids=["int", "list", "bool", "float"])
async def test_validate_non_object_args_are_bad_args(args: object) -> None:
    err = await fail(FUNCTIONS, json.dumps({"call": "book", "args": args}))

    assert err.kind == "bad_args"
    assert "book" in err.message


# 4. Value, text and schema options --------------------------------------------------------


async def test_validate_schema_fields_are_all_required() -> None:
    err = await fail(PLAN, pick("plan", steps=[]))

    assert err.kind == "missing_required"
    assert "rationale" in err.message


async def test_validate_schema_extra_fields_are_dropped() -> None:
    result = await ask(PLAN, pick("plan", steps=[], rationale="r", extra=1, decision="x"))

    assert result == {"decision": "plan", "steps": [], "rationale": "r"}


async def test_validate_text_option_schema_fields_are_required() -> None:
    options = [("tag", "Tag the ticket.", {"label": str})]

    err = await fail(options, pick("tag"))

    assert err.kind == "missing_required"
    assert "label" in err.message


async def test_validate_schema_field_is_validated() -> None:
    err = await fail(PLAN, pick("plan", steps=[], rationale=3))

    assert err.kind == "type_mismatch"
    assert "rationale" in err.message


async def test_validate_value_option_ignores_args() -> None:
    assert await ask({"skip": "SKIPPED"}, pick("skip", reason="x")) == "SKIPPED"


# 5. Function options ------------------------------------------------------------------------


async def test_validate_function_missing_required_lists_them_all() -> None:
    err = await fail(FUNCTIONS, pick("book"))

    assert err.kind == "missing_required"
    assert "city" in err.message
    assert "nights" in err.message
    assert "breakfast" not in err.message


async def test_validate_function_optional_parameter_may_be_left_out() -> None:
    result = await ask(FUNCTIONS, pick("book", city="Oslo", nights=2))

    assert result == {"city": "Oslo", "nights": 2, "breakfast": False}


async def test_validate_function_null_for_optional_means_default() -> None:
    result = await ask(FUNCTIONS, pick("book", city="Oslo", nights=2, breakfast=None))

    assert result == {"city": "Oslo", "nights": 2, "breakfast": False}


async def test_validate_function_null_for_required_is_type_mismatch() -> None:
    err = await fail(FUNCTIONS, pick("book", city=None, nights=2))

    assert err.kind == "type_mismatch"
    assert "city" in err.message


async def test_validate_function_unknown_fields_are_dropped() -> None:
    result = await ask(FUNCTIONS, pick("book", city="Oslo", nights=1, pets=True))

    assert result == {"city": "Oslo", "nights": 1, "breakfast": False}


# 6. Field checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "path"),
    [
        pytest.param(pick("book", city="Oslo", nights="2"), "nights", id="str-for-int"),
        pytest.param(pick("book", city="Oslo", nights=2.0), "nights", id="float-for-int"),
        pytest.param(pick("book", city="Oslo", nights=True), "nights", id="bool-for-int"),
        pytest.param(pick("book", city=7, nights=2), "city", id="int-for-str"),
        pytest.param(pick("book", city="Oslo", nights=1, breakfast=1), "breakfast", id="int-bool"),
        pytest.param(pick("rate", score=True), "score", id="bool-for-float"),
        pytest.param(pick("rate", score="0.5"), "score", id="str-for-float"),
        pytest.param(pick("upgrade", tier=1), "tier", id="enum-type-first"),
    ],
)
async def test_validate_wrong_type_is_type_mismatch_naming_the_field(reply: str, path: str) -> None:
    err = await fail(FUNCTIONS, reply)

    assert err.kind == "type_mismatch"
    assert path in err.message


async def test_validate_int_is_a_valid_float() -> None:
    result = await ask(FUNCTIONS, pick("rate", score=3))

    assert result == 3.0
    assert isinstance(result, float)


@pytest.mark.parametrize(
    ("reply", "kind", "detail"),
    [
        pytest.param(pick("upgrade", tier="bronze"), "enum_violation", '"gold", "silver"', id="in"),
        pytest.param(pick("mode", level=4), "enum_violation", "level", id="literal"),
        pytest.param(pick("mode", level=True), "type_mismatch", "level", id="bool-is-not-1"),
        pytest.param(pick("mode", level=2.0), "type_mismatch", "level", id="float-is-not-2"),
    ],
)
async def test_validate_enum_is_checked_after_type(reply: str, kind: str, detail: str) -> None:
    err = await fail(FUNCTIONS, reply)

    assert err.kind == kind
    assert detail in err.message


async def test_validate_schema_enum_is_checked() -> None:
    options = {"triage": ("Triage.", {"priority": {"options": ["low", "high"]}})}

    err = await fail(options, pick("triage", priority="urgent"))

    assert err.kind == "enum_violation"
    assert "priority" in err.message


@pytest.mark.parametrize(
    ("steps", "kind", "path"),
    [
        pytest.param([{"action": 5, "target": "b"}], "type_mismatch", "steps[0].action", id="t0"),
        pytest.param(
            [{"action": "a", "target": "b"}, {"action": "a", "target": []}],
            "type_mismatch",
            "steps[1].target",
            id="t1",
        ),
        pytest.param([{"action": "a"}], "missing_required", "steps[0].target", id="missing"),
        pytest.param(["a"], "type_mismatch", "steps[0]", id="not-object"),
        pytest.param({"action": "a"}, "type_mismatch", "steps", id="not-list"),
    ],
)
async def test_validate_nested_failures_name_the_path(steps: object, kind: str, path: str) -> None:
    err = await fail(PLAN, pick("plan", steps=steps, rationale="r"))

    assert err.kind == kind
    assert path in err.message


async def test_validate_nested_extra_fields_are_dropped() -> None:
    steps = [{"action": "a", "target": "b", "note": "n"}]

    result = await ask(PLAN, pick("plan", steps=steps, rationale="r"))

    assert result["steps"] == [{"action": "a", "target": "b"}]


# Order: the first failure is reported ------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        pytest.param(pick("book", nights="x"), "missing_required", id="missing-before-type"),
        pytest.param(pick("plan", steps=5), "missing_required", id="schema-missing-first"),
        pytest.param(pick("upgrade", tier=3), "type_mismatch", id="type-before-enum"),
    ],
)
async def test_validate_reports_the_first_failure_in_spec_order(reply: str, kind: str) -> None:
    err = await fail([*FUNCTIONS, ("plan", "Plan.", {"steps": [str], "why": str})], reply)

    assert err.kind == kind


async def test_validate_valid_pick_passes_every_check() -> None:
    result = await ask(FUNCTIONS, pick("upgrade", tier="gold"))

    assert result == "gold"


async def test_validate_constraint_failure_quotes_the_constraint_as_written() -> None:
    async def ship(code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]) -> str:
        """Ship to an airport."""
        return code

    error = await fail([ship], pick("ship", code="abc"))

    assert error.kind == "type_mismatch"
    assert "^[A-Z]{3}$" in error.detail  # the pattern as written, not lowered


async def test_validate_numbers_no_float_can_hold_are_failures_not_errors() -> None:
    async def setv(v: float) -> float:
        """Set the value."""
        return v

    too_large = await fail([setv], pick("setv", v=10**400))
    out_of_range = await fail([setv], '{"call": "setv", "args": {"v": 1e400}}')

    assert too_large.kind == "type_mismatch"
    assert "too large" in too_large.detail
    # 1e400 would be infinity: still a pick, whose argument no float can hold.
    assert out_of_range.kind == "type_mismatch"
    assert out_of_range.detail.startswith("'setv': v: expected float, got 1e400")


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


async def set_level(level: Level) -> Level:
    """Set the level."""
    return level


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("1", "type_mismatch"),
        (True, "type_mismatch"),
        (1.0, "type_mismatch"),
        (3, "enum_violation"),
    ],
    ids=["string", "bool", "float", "not-a-member"],
)
async def test_validate_enum_type_is_checked_before_its_values(value: object, kind: str) -> None:
    error = await fail([set_level], pick("set_level", level=value))

    assert error.kind == kind


async def test_validate_enum_member_by_its_value() -> None:
    assert await ask([set_level], pick("set_level", level=2)) is Level.HIGH
