"""A described menu as a form and back: the pick a person's form sends, whatever they type."""

from __future__ import annotations

from typing import Any

import pytest
import ui_flows as flows
from hypothesis import given
from hypothesis import strategies as st

from engine._decision import describe_menu
from engine.ui._forms import field_errors, option_forms, read_pick
from engine.ui._views import parse_after

MENU = describe_menu({"ship": flows.ship, "hold": flows.hold, "wait": "WAIT"})


def fields_of(option: str) -> dict[str, Any]:
    form = next(f for f in option_forms(MENU) if f.name == option)
    out: dict[str, Any] = {}
    for one in form.fields:
        out[one.path] = one
        out.update({inner.path: inner for inner in one.fields})
    return out


def test_each_argument_gets_the_input_its_type_asks_for() -> None:
    ship = fields_of("ship")
    assert ship["priority"].widget == "select"
    assert ship["priority"].choices == [('"low"', "low"), ('"high"', "high")]
    assert (ship["weight"].widget, ship["weight"].bounds) == (
        "number",
        {"minimum": 1, "maximum": 30},
    )
    assert ship["to"].widget == "group"
    assert (ship["to.city"].widget, ship["to.city"].required) == ("text", True)
    assert ship["to.floor"].bounds == {"minimum": 0, "maximum": 80}


def test_a_filled_form_reads_back_as_the_pick() -> None:
    sent = {
        "a.ship.priority": '"high"',
        "a.ship.weight": "5",
        "a.ship.to.city": "Oslo",
        "a.ship.to.floor": "",
        "a.ship.note": "",
    }
    assert read_pick(option_forms(MENU), "ship", sent) == {
        "call": "ship",
        "args": {"priority": "high", "weight": 5, "to": {"city": "Oslo"}},
    }
    assert read_pick(option_forms(MENU), "wait", {}) == {"call": "wait"}
    with pytest.raises(ValueError, match="pick one of the options: ship, hold, wait"):
        read_pick(option_forms(MENU), "", sent)


def test_a_value_that_does_not_parse_goes_to_the_engine_as_typed() -> None:
    pick = read_pick(option_forms(MENU), "ship", {"a.ship.weight": "heavy"})
    assert pick["args"] == {"weight": "heavy"}


def test_the_engines_error_lands_beside_the_field_it_names() -> None:
    forms = option_forms(MENU)
    assert field_errors(forms, "ship", "'ship': to.city: field required") is None
    ship = next(f for f in forms if f.name == "ship")
    to = next(f for f in ship.fields if f.label == "to")
    assert to.fields[0].error == "field required"
    assert field_errors(forms, "hold", "'hold' is missing required argument(s): reason") is None
    hold = next(f for f in forms if f.name == "hold")
    assert hold.fields[0].error == "required"
    field_errors(forms, "ship", "something else entirely")
    assert ship.error == "something else entirely"


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "a.ship.priority",
                "a.ship.weight",
                "a.ship.to.city",
                "a.ship.to.floor",
                "a.ship.note",
                "x",
            ]
        ),
        st.text(),
    )
)
def test_any_form_reads_into_a_pick_of_the_option(sent: dict[str, str]) -> None:
    pick = read_pick(option_forms(MENU), "ship", sent)
    assert pick["call"] == "ship"
    assert set(pick["args"]) <= {"priority", "weight", "to", "note"}


@given(st.text())
def test_any_page_key_reads_or_is_ignored(text: str) -> None:
    key = parse_after(text)
    assert key is None or (isinstance(key[0], float) and key[1] == text.partition("~")[2])


@given(st.text())
def test_any_engine_message_is_placed_or_kept(detail: str) -> None:
    forms = option_forms(MENU)
    left = field_errors(forms, "ship", detail)
    ship = next(f for f in forms if f.name == "ship")
    placed = [f.error for f in ship.fields] + [i.error for f in ship.fields for i in f.fields]
    assert left is None
    assert ship.error == detail or any(placed)
