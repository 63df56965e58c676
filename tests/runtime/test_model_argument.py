"""Runtime and per-call ``model=`` arguments: a model object or a model string, nothing else."""

from __future__ import annotations

import pytest

from engine import Runtime
from engine.models import ScriptedModel, SimulatedModel


async def test_runtime_exec_takes_a_model_string_for_one_call() -> None:
    own = ScriptedModel(["from the runtime's model"])
    runtime = Runtime(own)

    text = await runtime.exec("Summarise the ticket.", model="simulated:1")

    assert text == await Runtime(SimulatedModel(1)).exec("Summarise the ticket.")
    assert own.calls == 0


async def test_runtime_exec_choices_takes_a_model_string_for_one_call() -> None:
    own = ScriptedModel([])
    runtime = Runtime(own)

    picked = await runtime.exec("Route the ticket.", choices=["a", "b"], model="simulated:1")

    assert picked in ("a", "b")
    assert own.calls == 0


async def test_runtime_exec_refuses_a_model_that_is_neither_model_nor_string() -> None:
    own = ScriptedModel(["never asked"])

    with pytest.raises(TypeError, match="model must be a Model or a string"):
        await Runtime(own).exec("Hi.", model=42)  # type: ignore[arg-type]

    assert own.calls == 0


def test_runtime_refuses_a_model_that_is_neither_model_nor_string() -> None:
    with pytest.raises(TypeError, match="model must be a Model or a string"):
        Runtime(42)  # type: ignore[arg-type]


def test_runtime_takes_a_model_string() -> None:
    assert isinstance(Runtime("simulated:7").model, SimulatedModel)


@pytest.mark.parametrize("system", [123, ["You are terse."], b"bytes"])
def test_runtime_refuses_a_system_prompt_that_is_not_text(system: object) -> None:
    with pytest.raises(TypeError, match="system must be a string"):
        Runtime(ScriptedModel([]), system=system)  # type: ignore[arg-type]


async def test_runtime_sends_its_system_prompt_first() -> None:
    model = ScriptedModel(['{"call": "a"}'])

    await Runtime(model, system="You are terse.").exec("Pick.", choices=["a", "b"])

    first = model.requests[0].messages[0]
    assert (first.role, first.text) == ("system", "You are terse.")
