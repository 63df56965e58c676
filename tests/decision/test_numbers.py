"""Numbers no float or int can hold, in a pick: an argument error naming the field, never no pick.

docs/decisions.md §6 and §7: ``1E1161806064188723`` and an integer of thousands of digits
are read as numbers out of range, which validation reports as ``type_mismatch`` at their
path, whatever the field's type and however deep they sit.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from engine import DecisionError, Engine, Runtime, agentic_function, decision
from engine.decision import extract_action, parse_args
from engine.models import ScriptedModel
from engine.store import MemoryStore


async def refund(order_id: str, amount: float, **notes: Any) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order_id}"


class Line(BaseModel):
    sku: str
    price: float


async def order(
    lines: list[Line], tags: list[Any], meta: dict[str, Any], count: int, anything: Any = None
) -> str:
    """Place an order."""
    return "ordered"


OPTIONS = {"refund": refund, "order": order, "plan": ("Plan it", {"steps": [{"minutes": int}]})}

HUGE = [
    "1E1161806064188723",
    "1e400",
    "-2.5e309",
    "1" + "0" * 5000,
    "-" + "9" * 4301,
]


def fails(reply: str) -> DecisionError:
    with pytest.raises(DecisionError) as caught:
        parse_args(reply, OPTIONS)
    return caught.value


@pytest.mark.parametrize("number", HUGE)
def test_numbers_a_float_field_out_of_range_is_a_type_mismatch_at_its_path(number: str) -> None:
    error = fails(f'{{"call": "refund", "args": {{"order_id": "A1", "amount": {number}}}}}')

    assert error.kind == "type_mismatch"
    assert error.detail.startswith("'refund': amount: expected float, got ")


def test_numbers_the_issue_pick_names_amount_and_the_number() -> None:
    reply = '{"call":"refund","args":{"order_id":"A1","amount": 1E1161806064188723}}'

    error = fails(reply)

    assert (error.kind, error.detail) == (
        "type_mismatch",
        "'refund': amount: expected float, got 1E1161806064188723, a number out of a float's range",
    )


def test_numbers_written_out_and_as_exponent_are_the_same_kind_of_failure() -> None:
    written = fails(f'{{"call": "refund", "args": {{"order_id": "A1", "amount": {10**400}}}}}')
    exponent = fails('{"call": "refund", "args": {"order_id": "A1", "amount": 1e400}}')

    assert written.kind == exponent.kind == "type_mismatch"
    assert "amount" in written.detail
    assert "amount" in exponent.detail


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ('{"lines": [{"sku": "a", "price": 1e999}], "tags": [], "meta": {}, "count": 1}', "lines"),
        ('{"lines": [], "tags": [1, [2e999]], "meta": {}, "count": 1}', "tags[1][0]"),
        ('{"lines": [], "tags": [], "meta": {"a": {"b": -1e999}}, "count": 1}', "meta.a.b"),
        ('{"lines": [], "tags": [], "meta": {}, "count": 1e999}', "count"),
        ('{"lines": [], "tags": [], "meta": {}, "count": 1, "anything": [1e999]}', "anything[0]"),
    ],
    ids=["pydantic-model", "untyped-list", "dict", "int", "any"],
)
def test_numbers_deep_in_any_field_are_named_at_their_path(args: str, path: str) -> None:
    error = fails(f'{{"call": "order", "args": {args}}}')

    assert error.kind == "type_mismatch"
    assert f"'order': {path}" in error.detail


def test_numbers_in_a_schema_option_and_in_extra_keyword_arguments() -> None:
    plan = fails('{"call": "plan", "args": {"steps": [{"minutes": 1}, {"minutes": 9e999}]}}')
    extra = fails('{"call": "refund", "args": {"order_id": "A", "amount": 1, "why": [1e999]}}')

    assert (plan.kind, extra.kind) == ("type_mismatch", "type_mismatch")
    assert "steps[1].minutes" in plan.detail
    assert "why[0]" in extra.detail


def test_numbers_a_python_literal_pick_is_read_the_same_way() -> None:
    error = fails("{'call': 'refund', 'args': {'order_id': 'A1', 'amount': 1e999}}")

    assert error.kind == "type_mismatch"
    assert "amount" in error.detail


def test_numbers_extract_action_still_finds_the_pick() -> None:
    pick = extract_action('{"call": "refund", "args": {"amount": 1e999}}')

    assert pick is not None
    assert pick["call"] == "refund"


async def test_numbers_a_re_pick_tells_the_model_which_field_to_fix() -> None:
    model = ScriptedModel(
        [
            '{"call": "refund", "args": {"order_id": "A1", "amount": 1E1161806064188723}}',
            '{"call": "refund", "args": {"order_id": "A1", "amount": 12}}',
        ]
    )

    result = await decision.make("Refund it.", OPTIONS, runtime=Runtime(model))

    assert result == "refunded 12.0 on A1"
    assert "amount: expected float" in model.requests[1].messages[-1].text


# -- properties -----------------------------------------------------------------------------

keys = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
huge = st.one_of(
    st.integers(min_value=309, max_value=10**18).map(lambda e: f"1e{e}"),
    st.integers(min_value=309, max_value=10**18).map(lambda e: f"-9.5E+{e}"),
    st.integers(min_value=4301, max_value=6000).map(lambda n: "7" * n),
)


@st.composite
def nested_number(draw: st.DrawFn) -> tuple[str, str]:
    """JSON text of a value holding one huge number somewhere, and that number's path."""
    number = draw(huge)
    text, path = number, ""
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        if draw(st.booleans()):
            before = draw(st.integers(min_value=0, max_value=2))
            text = "[" + "1, " * before + text + "]"
            path = f"[{before}]{path}"
        else:
            key = draw(keys)
            text = f'{{"{key}": {text}}}'
            path = f".{key}{path}"
    return text, path


@settings(max_examples=200, deadline=None)
@given(nested_number(), st.sampled_from(["meta", "anything", "tags", "count"]))
def test_numbers_anywhere_in_args_are_an_argument_error_with_the_path(
    value: tuple[str, str], field: str
) -> None:
    text, path = value
    args = {"lines": [], "tags": [], "meta": {}, "count": 1}
    body = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in args.items() if k != field)
    reply = f'{{"call": "order", "args": {{{body}, "{field}": {text}}}}}'

    error = fails(reply)

    assert error.kind == "type_mismatch"
    if field in ("meta", "anything") or (field == "tags" and path.startswith("[")):
        assert f"'order': {field}{path}:" in error.detail
    else:  # the field's own type refuses the container (or the number) first
        assert f"'order': {field}" in error.detail


@settings(max_examples=100, deadline=None)
@given(st.lists(huge, min_size=1, max_size=8), st.sampled_from(["{}", "[]", "prose "]))
def test_numbers_never_turn_a_pick_into_no_action(numbers: list[str], wrapper: str) -> None:
    notes = ", ".join(f'"n{i}": {n}' for i, n in enumerate(numbers))
    pick = f'{{"call": "refund", "args": {{"order_id": "A1", "amount": 1, {notes}}}}}'
    reply = f"I refund it.\n{pick}" if wrapper == "prose " else pick

    error = fails(reply)

    assert error.kind == "type_mismatch"
    assert "'refund': n" in error.detail


def _seconds(reply: str) -> float:
    # CPU time of this process, the best of several: other processes' load does not count.
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        with pytest.raises(DecisionError):
            parse_args(reply, OPTIONS)
        best = min(best, time.process_time() - started)
    return best


def _reply(count: int) -> str:
    numbers = ", ".join(f'"n{i}": 1e{400 + i}' for i in range(count))
    digits = ", ".join(f'"d{i}": {"9" * 4400}' for i in range(count // 50))
    return f'{{"call": "refund", "args": {{"order_id": "A", "amount": 1, {numbers}, {digits}}}}}'


def test_numbers_reading_huge_numbers_stays_linear() -> None:
    small, large = _reply(1_000), _reply(8_000)

    ratio = _seconds(large) / _seconds(small)

    # Eight times the text: linear reading takes about eight times as long; a quadratic one
    # would take sixty-four.
    assert ratio < 30, ratio
    assert len(large) > 7 * len(small)


async def test_numbers_a_run_suspends_on_the_argument_naming_its_path() -> None:
    reply = '{"call":"refund","args":{"order_id":"A1","amount": 1E1161806064188723}}'
    engine = Engine(model=ScriptedModel([reply, reply]), store=MemoryStore())

    run = await engine.run(route, "broken")

    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "type_mismatch"
    assert "amount" in run.error.message


@agentic_function
async def route(ticket: str, runtime: Any = None) -> Any:
    return await decision.make(f"Ticket: {ticket}", OPTIONS, runtime=runtime)
