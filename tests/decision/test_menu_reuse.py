"""Menus offered again: the same container, equal values, changed schemas.

Building a menu is cached (the same dict literal of functions and markers is found again at
the cost of a lookup); these tests pin that a cache never hands back a stale or a merely
equal menu.
"""

from __future__ import annotations

import json

import pytest

from engine import Runtime, decision
from engine.models import ScriptedModel


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def test_equal_but_different_values_resolve_to_their_own_value() -> None:
    # 1, 1.0 and True are equal (and hash alike) in Python; each menu returns its own.
    runtime = Runtime(model=ScriptedModel([pick("x")] * 3))
    results = [
        await decision.make("Pick.", {"x": value}, runtime=runtime) for value in (1, 1.0, True)
    ]
    assert [type(r) for r in results] == [int, float, bool]


async def test_a_reused_dict_that_changed_offers_the_new_options() -> None:
    options: dict[str, object] = {"a": "A", "b": "B"}
    model = ScriptedModel([pick("b"), pick("c")])
    runtime = Runtime(model=model)
    assert await decision.make("Pick.", options, runtime=runtime) == "B"
    options["c"] = "C"
    del options["b"]
    assert await decision.make("Pick.", options, runtime=runtime) == "C"
    assert "- b" not in model.requests[1].messages[-1].text
    assert "c" in [choice.name for choice in model.requests[1].choices or []]


async def test_a_schema_changed_in_place_is_validated_as_it_now_reads() -> None:
    schema: dict[str, object] = {"count": int}
    options = {"report": ("Report a count.", schema)}
    model = ScriptedModel([pick("report", count=3), pick("report", count=3)])
    runtime = Runtime(model=model)
    assert await decision.make("Pick.", options, runtime=runtime) == {
        "decision": "report",
        "count": 3,
    }
    schema["count"] = str  # the same dict, now asking for a string
    with pytest.raises(decision.DecisionError) as raised:
        await decision.make("Pick.", options, runtime=runtime, max_retries=0)
    assert raised.value.kind == "type_mismatch"


async def test_value_options_with_descriptions_are_offered_again_unchanged() -> None:
    options = {
        "ok": ("ok", "The item arrived as ordered."),
        "damaged": ("damaged", "The item arrived broken."),
    }
    model = ScriptedModel([pick("damaged"), pick("ok")])
    runtime = Runtime(model=model)
    assert await decision.make("Pick.", options, runtime=runtime) == "damaged"
    assert await decision.make("Pick.", options, runtime=runtime) == "ok"
    first, second = (r.messages[-1].text for r in model.requests)
    assert first == second
    assert "The item arrived broken." in first


async def test_a_mutable_value_is_returned_as_the_same_object() -> None:
    basket: list[str] = []
    runtime = Runtime(model=ScriptedModel([pick("basket")] * 2))
    first = await decision.make("Pick.", {"basket": basket}, runtime=runtime)
    basket.append("apple")
    second = await decision.make("Pick.", {"basket": basket}, runtime=runtime)
    assert first is basket
    assert second is basket
