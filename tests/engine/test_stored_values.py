"""A flow's stored arguments and a step's stored result come back as their annotation reads
them: a value already of its annotation's own JSON type comes back as it is."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from engine import Engine, Runtime, agentic_function
from engine._base import from_json
from engine.models import ScriptedModel
from engine.store import MemoryStore

SCALARS = st.one_of(
    st.text(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.booleans(),
    st.floats(allow_nan=False),
    st.none(),
)


@given(value=SCALARS, annotation=st.sampled_from([str, int, bool, float]))
def test_a_scalar_reads_back_as_validating_it_into_its_annotation_does(
    value: Any, annotation: type
) -> None:
    try:
        expected: Any = TypeAdapter(annotation).validate_python(value)
    except Exception:
        expected = "refused"
    try:
        got: Any = from_json(value, annotation, what="value")
    except Exception:
        got = "refused"
    assert got == expected
    assert type(got) is type(expected)


seen: list[tuple[Any, ...]] = []


@agentic_function
async def typed_flow(text: str, count: int, flag: bool, runtime: Runtime | None = None) -> str:
    seen.append((text, count, flag))
    return f"{text}:{count}:{flag}"


async def test_a_run_gets_its_arguments_as_it_was_given_them() -> None:
    seen.clear()
    engine = Engine(model=ScriptedModel([]), store=MemoryStore())
    run = await engine.run(typed_flow, " spaced ", 2**70, False, run_id="typed")
    assert run.status == "completed"
    assert seen == [(" spaced ", 2**70, False)]
    assert [type(v) for v in seen[0]] == [str, int, bool]
    assert run.result == f" spaced :{2**70}:False"
