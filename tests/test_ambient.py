"""docs/decisions.md §11: the ambient runtime of agentic functions."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from engine import Runtime, agentic_function, decision
from engine.models import ScriptedModel

OPTIONS: dict[str, object] = {"yes": "YES", "no": "NO"}


def runtime_saying(call: str) -> Runtime:
    """A runtime whose model always picks ``call``."""
    return Runtime(ScriptedModel(lambda request: json.dumps({"call": call})))


@agentic_function
async def ask(runtime: Runtime | None = None) -> object:
    return await decision.make("Yes or no?", OPTIONS)


@agentic_function
async def ask_via_inner(runtime: Runtime | None = None) -> object:
    return await plain_helper()


async def plain_helper() -> object:
    """A plain coroutine: it sees the ambient runtime of the agentic function above it."""
    return await decision.make("Yes or no?", OPTIONS)


@agentic_function
async def no_runtime_param() -> object:
    return await decision.make("Yes or no?", OPTIONS)


@agentic_function
async def outer(
    runtime: Runtime | None = None, inner_runtime: Runtime | None = None
) -> tuple[object, object]:
    inner = await ask(runtime=inner_runtime)
    after = await decision.make("Yes or no?", OPTIONS)
    return inner, after


@agentic_function
async def returns_runtime(runtime: Runtime | None = None) -> Runtime | None:
    return runtime


@agentic_function
def returns_runtime_sync(runtime: Runtime | None = None) -> Runtime | None:
    return runtime


# Missing runtime ----------------------------------------------------------------------------


async def test_ambient_make_without_any_runtime_says_how_to_fix_it() -> None:
    with pytest.raises(RuntimeError, match=r"runtime=None.*runtime="):
        await decision.make("Yes or no?", OPTIONS)


async def test_ambient_agentic_function_without_runtime_parameter_has_none() -> None:
    with pytest.raises(RuntimeError, match=r"runtime=None"):
        await no_runtime_param()


async def test_ambient_runtime_parameter_left_none_without_ambient_raises() -> None:
    with pytest.raises(RuntimeError, match=r"runtime="):
        await ask()


# Injection and publication ------------------------------------------------------------------


async def test_ambient_explicit_runtime_is_published_to_make() -> None:
    assert await ask(runtime=runtime_saying("yes")) == "YES"


async def test_ambient_positional_runtime_is_published() -> None:
    assert await ask(runtime_saying("no")) == "NO"


async def test_ambient_plain_coroutine_below_sees_the_runtime() -> None:
    assert await ask_via_inner(runtime=runtime_saying("yes")) == "YES"


@agentic_function
async def takes_exec_runtime(exec_runtime: Runtime | None = None) -> Runtime | None:
    return exec_runtime


@agentic_function
async def takes_review_runtime(review_runtime: Runtime | None = None) -> Runtime | None:
    return review_runtime


@pytest.mark.parametrize(
    "inner",
    [returns_runtime, takes_exec_runtime, takes_review_runtime],
    ids=["runtime", "exec_runtime", "review_runtime"],
)
async def test_ambient_every_runtime_class_parameter_is_injected(inner: Any) -> None:
    runtime = runtime_saying("yes")

    @agentic_function
    async def top(runtime: Runtime | None = None) -> object:
        return await inner()

    assert await top(runtime=runtime) is runtime


@pytest.mark.parametrize(
    "inner",
    [takes_exec_runtime, takes_review_runtime],
    ids=["exec_runtime", "review_runtime"],
)
async def test_ambient_other_runtime_parameters_publish_too(inner: Any) -> None:
    runtime = runtime_saying("no")

    @agentic_function
    async def top(exec_runtime: Runtime | None = None) -> object:
        return await plain_helper()

    assert await top(exec_runtime=runtime) == "NO"
    assert await inner(runtime) is runtime


async def test_ambient_is_injected_into_a_nested_agentic_function() -> None:
    runtime = runtime_saying("yes")

    @agentic_function
    async def top(runtime: Runtime | None = None) -> object:
        return await returns_runtime()

    assert await top(runtime=runtime) is runtime


async def test_ambient_sync_agentic_function_gets_the_ambient_runtime() -> None:
    runtime = runtime_saying("yes")

    @agentic_function
    async def top(runtime: Runtime | None = None) -> object:
        return returns_runtime_sync()

    assert await top(runtime=runtime) is runtime
    assert returns_runtime_sync(runtime=runtime) is runtime
    assert returns_runtime_sync() is None


async def test_ambient_sync_agentic_option_gets_the_runtime_on_its_thread() -> None:
    runtime = Runtime(ScriptedModel([json.dumps({"call": "returns_runtime_sync"})]))

    result = await decision.make("Pick.", [returns_runtime_sync], runtime=runtime)

    assert result is runtime


@agentic_function
def sync_flow(runtime: Runtime | None = None) -> object:
    """A plain-def flow on a worker thread, asking through the event loop."""
    return anyio.from_thread.run(plain_helper)


async def test_ambient_sync_agentic_function_on_a_thread_can_ask() -> None:
    runtime = runtime_saying("no")

    result = await anyio.to_thread.run_sync(lambda: sync_flow(runtime=runtime))

    assert result == "NO"
    assert [(n.kind, n.parent_id) for n in runtime.trace.nodes] == [
        ("frame", None),
        ("decision", 0),
        ("model_call", 1),
    ]


async def test_ambient_picked_function_runs_with_the_runtime_ambient() -> None:
    async def research() -> object:
        """A plain option: the decision's runtime is ambient while it runs."""
        return await decision.make("Yes or no?", OPTIONS)

    model = ScriptedModel([json.dumps({"call": "research"}), json.dumps({"call": "no"})])

    assert await decision.make("Pick.", [research], runtime=Runtime(model)) == "NO"


# Explicit beats ambient ---------------------------------------------------------------------


async def test_ambient_explicit_runtime_wins_over_outer_ambient() -> None:
    outer_rt, inner_rt = runtime_saying("yes"), runtime_saying("no")

    inner, after = await outer(runtime=outer_rt, inner_runtime=inner_rt)

    assert (inner, after) == ("NO", "YES")
    assert outer_rt.model.calls == 1  # type: ignore[attr-defined]
    assert inner_rt.model.calls == 1  # type: ignore[attr-defined]


async def test_ambient_explicit_runtime_to_make_wins_over_ambient() -> None:
    ambient, explicit = runtime_saying("yes"), runtime_saying("no")

    @agentic_function
    async def top(runtime: Runtime | None = None) -> object:
        return await decision.make("Yes or no?", OPTIONS, runtime=explicit)

    assert await top(runtime=ambient) == "NO"
    assert ambient.model.calls == 0  # type: ignore[attr-defined]


async def test_ambient_runtime_is_restored_after_the_call() -> None:
    await ask(runtime=runtime_saying("yes"))

    with pytest.raises(RuntimeError, match="runtime="):
        await decision.make("Yes or no?", OPTIONS)


async def test_ambient_runtime_is_restored_after_an_exception() -> None:
    @agentic_function
    async def broken(runtime: Runtime | None = None) -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await broken(runtime=runtime_saying("yes"))

    with pytest.raises(RuntimeError, match="runtime="):
        await decision.make("Yes or no?", OPTIONS)


# Per task -----------------------------------------------------------------------------------


async def test_ambient_child_task_does_not_leak_into_its_parent() -> None:
    results: list[object] = []

    async def child() -> None:
        results.append(await ask(runtime=runtime_saying("yes")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(child)

    assert results == ["YES"]
    with pytest.raises(RuntimeError, match="runtime="):
        await decision.make("Yes or no?", OPTIONS)


async def test_ambient_child_task_inherits_the_parent_runtime() -> None:
    runtime = runtime_saying("no")
    results: list[object] = []

    @agentic_function
    async def top(runtime: Runtime | None = None) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(plain_then_store, results)

    async def plain_then_store(out: list[object]) -> None:
        out.append(await plain_helper())

    await top(runtime=runtime)

    assert results == ["NO", "NO", "NO"]


# The decorator ------------------------------------------------------------------------------


@agentic_function(name="lookup_order", description="Find an order by its number.")
async def find(number: int, runtime: Runtime | None = None) -> int:
    """Internal docstring, not shown to the model."""
    return number


async def test_agentic_function_keeps_the_wrapped_identity() -> None:
    assert returns_runtime.__qualname__ == "returns_runtime"
    assert find.__doc__ == "Internal docstring, not shown to the model."
    assert find.__qualname__ == "find"


async def test_agentic_function_name_names_the_option_and_the_frame() -> None:
    runtime = Runtime(ScriptedModel([json.dumps({"call": "lookup_order", "args": {"number": 7}})]))

    assert await decision.make("Pick.", [find], runtime=runtime) == 7

    menu = runtime.model.requests[0].messages[0].text  # type: ignore[attr-defined]
    assert "lookup_order(number: int)\n    Find an order by its number." in menu
    assert "Internal docstring" not in menu
    assert [n.name for n in runtime.trace.find("frame")] == ["lookup_order"]


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        pytest.param({"missing": {"description": "x"}}, "not a parameter", id="unknown-param"),
        pytest.param({"text": {"label": "x"}}, "description, options, hidden", id="unknown-key"),
        pytest.param({"text": "a description"}, "must be a dict", id="not-a-dict"),
    ],
)
def test_agentic_function_bad_input_metadata_raises_at_decoration(
    inputs: dict[str, Any], match: str
) -> None:
    def shout(text: str) -> str:
        return text

    with pytest.raises(ValueError, match=match):
        agentic_function(input=inputs)(shout)
