"""docs/decisions.md §10: ``timeout_s`` is a number of seconds > 0, or ``None`` for no deadline."""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from engine import Runtime, decision
from engine.models import ScriptedModel

Entry = Callable[..., Awaitable[Any]]

PICK = json.dumps({"call": "a"})


async def via_make(runtime: Runtime, **kwargs: Any) -> Any:
    return await decision.make("Pick one.", ["a", "b"], runtime=runtime, **kwargs)


async def via_exec_choices(runtime: Runtime, **kwargs: Any) -> Any:
    return await runtime.exec("Route the ticket.", choices=["a", "b"], **kwargs)


async def via_exec_text(runtime: Runtime, **kwargs: Any) -> Any:
    return await runtime.exec("Route the ticket.", **kwargs)


ENTRIES = [
    pytest.param(via_make, id="make"),
    pytest.param(via_exec_choices, id="exec-choices"),
    pytest.param(via_exec_text, id="exec-text"),
]
BAD = [
    pytest.param(0, id="zero"),
    pytest.param(-5, id="negative"),
    pytest.param(0.0, id="zero-float"),
    pytest.param("1", id="string"),
    pytest.param(True, id="bool"),
    pytest.param(math.nan, id="nan"),
]


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("timeout_s", BAD)
async def test_timeout_not_a_positive_number_is_refused_before_any_call(
    entry: Entry, timeout_s: object
) -> None:
    model = ScriptedModel([PICK])

    with pytest.raises(ValueError, match=r"timeout_s must be a number of seconds > 0"):
        await entry(Runtime(model), timeout_s=timeout_s)

    assert model.calls == 0


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "timeout_s",
    [
        pytest.param(None, id="none"),
        pytest.param(30, id="int"),
        pytest.param(0.5, id="float"),
        pytest.param(math.inf, id="inf"),
    ],
)
async def test_timeout_none_or_a_positive_number_is_taken(
    entry: Entry, timeout_s: float | None
) -> None:
    model = ScriptedModel([PICK])

    result = await entry(Runtime(model), timeout_s=timeout_s)

    assert result in ("a", PICK)
    assert model.calls == 1
