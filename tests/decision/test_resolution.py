"""docs/decisions.md §9: a pick resolves into the result of the next step."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from engine import DecisionError, Runtime, agentic_function, decision
from engine.models import ScriptedModel

Entry = Callable[..., Awaitable[Any]]


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def via_make(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await decision.make("Pick one.", options, runtime=runtime, **kwargs)


async def via_exec(runtime: Runtime, options: object, **kwargs: Any) -> Any:
    return await runtime.exec("Work, then pick.", choices=options, **kwargs)


ENTRIES = [pytest.param(via_make, id="make"), pytest.param(via_exec, id="exec")]


async def resolve(entry: Entry, options: object, reply: str, **kwargs: Any) -> Any:
    return await entry(Runtime(ScriptedModel([reply])), options, **kwargs)


class Signal:
    """A value option that is compared by identity."""


SIGNAL = Signal()


async def add(a: int, b: int = 10) -> int:
    """Add two numbers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


class Greeter:
    def __call__(self, name: str) -> str:
        return f"hello {name}"


class Box:
    """Box a label."""

    def __init__(self, label: str) -> None:
        self.label = label


def scale(x: int, factor: int) -> int:
    return x * factor


@agentic_function
async def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


@agentic_function
def whisper(text: str) -> str:
    """Whisper the text."""
    return text.lower()


# Function options ---------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    ("options", "reply", "expected"),
    [
        pytest.param([add], pick("add", a=1, b=2), 3, id="async-def"),
        pytest.param([add], pick("add", a=1), 11, id="async-def-default"),
        pytest.param([multiply], pick("multiply", a=3, b=4), 12, id="def"),
        pytest.param({"greet": Greeter()}, pick("greet", name="bo"), "hello bo", id="instance"),
        pytest.param({"x3": functools.partial(scale, factor=3)}, pick("x3", x=2), 6, id="partial"),
        pytest.param([shout], pick("shout", text="hi"), "HI", id="agentic-async"),
        pytest.param([whisper], pick("whisper", text="HI"), "hi", id="agentic-def"),
        pytest.param({"lam": lambda: 7}, pick("lam"), 7, id="lambda"),
    ],
)
async def test_resolve_function_option_returns_its_awaited_result(
    entry: Entry, options: object, reply: str, expected: object
) -> None:
    assert await resolve(entry, options, reply) == expected


@pytest.mark.parametrize("entry", ENTRIES)
async def test_resolve_class_option_returns_the_instance(entry: Entry) -> None:
    result = await resolve(entry, [Box], pick("Box", label="fragile"))

    assert isinstance(result, Box)
    assert result.label == "fragile"


@pytest.mark.parametrize("entry", ENTRIES)
async def test_resolve_function_gets_the_runtime_and_hidden_context(entry: Entry) -> None:
    seen: dict[str, object] = {}

    @agentic_function(input={"user_id": {"hidden": True}})
    async def lookup(query: str, user_id: str, runtime: Runtime | None = None) -> str:
        seen.update(query=query, user_id=user_id, runtime=runtime)
        return "found"

    runtime = Runtime(ScriptedModel([pick("lookup", query="q", user_id="evil", runtime="x")]))

    result = await entry(runtime, [lookup], context={"user_id": "u-1"})

    assert result == "found"
    assert seen == {"query": "q", "user_id": "u-1", "runtime": runtime}


@pytest.mark.parametrize("entry", ENTRIES)
async def test_resolve_function_with_var_keyword_gets_extra_fields(entry: Entry) -> None:
    async def note(title: str, **extra: object) -> dict[str, object]:
        return {"title": title, **extra}

    result = await resolve(entry, [note], pick("note", title="t", tag="x"))

    assert result == {"title": "t", "tag": "x"}


# Value, text and schema options -------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "value",
    [SIGNAL, None, 0, "", [1, 2], {"status": "closed"}, (1, 2, 3)],
    ids=["object", "none", "zero", "empty-str", "list", "dict", "3-tuple"],
)
async def test_resolve_dict_value_option_returns_the_stored_value(
    entry: Entry, value: object
) -> None:
    result = await resolve(entry, {"this": value, "other": "OTHER"}, pick("this"))

    assert result is value


@pytest.mark.parametrize("entry", ENTRIES)
async def test_resolve_described_value_option_returns_the_value(entry: Entry) -> None:
    options = {"abort": (SIGNAL, "Pick when stuck."), "go": "GO"}

    assert await resolve(entry, options, pick("abort")) is SIGNAL


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "options",
    [["done", "retry"], [("done", "All work is finished."), "retry"]],
    ids=["name", "name-description"],
)
async def test_resolve_text_option_returns_its_name(entry: Entry, options: object) -> None:
    assert await resolve(entry, options, pick("done")) == "done"


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "options",
    [{"ack": ("Acknowledge.", {}), "no": "NO"}, [("ack", "Acknowledge.", {}), "no"]],
    ids=["dict", "list"],
)
async def test_resolve_empty_schema_option_returns_its_name(entry: Entry, options: object) -> None:
    assert await resolve(entry, options, pick("ack")) == "ack"


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "options",
    [
        {"plan": ("Plan.", {"steps": [str], "done": bool})},
        [("plan", "Plan.", {"steps": [str], "done": bool})],
    ],
    ids=["dict", "list"],
)
async def test_resolve_schema_option_returns_decision_and_fields(
    entry: Entry, options: object
) -> None:
    result = await resolve(entry, options, pick("plan", steps=["a"], done=False))

    assert result == {"decision": "plan", "steps": ["a"], "done": False}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    "options",
    [{"plan": ("Plan.", {"decision": str})}, [("plan", "Plan.", {"decision": str})]],
    ids=["dict", "list"],
)
async def test_resolve_schema_field_named_decision_is_a_type_error(
    entry: Entry, options: object
) -> None:
    model = ScriptedModel([pick("plan", decision="x")])

    with pytest.raises(TypeError, match="decision"):
        await entry(Runtime(model), options)

    assert model.calls == 0


# The split API: parse_args then resolve_decision --------------------------------------------


async def test_resolve_decision_runs_a_parsed_function_pick() -> None:
    chosen, kwargs = decision.parse_args(pick("add", a=2), [add])

    assert (chosen, kwargs) == (add, {"a": 2})
    assert await decision.resolve_decision(chosen, kwargs, [add]) == 12


@pytest.mark.parametrize(
    ("options", "reply", "expected"),
    [
        pytest.param({"stop": SIGNAL}, pick("stop"), SIGNAL, id="value"),
        pytest.param(["done"], pick("done"), "done", id="text"),
        pytest.param(
            [("tag", "Tag.", {"label": str})],
            pick("tag", label="bug"),
            {"decision": "tag", "label": "bug"},
            id="schema",
        ),
    ],
)
async def test_resolve_decision_resolves_a_parsed_pick(
    options: object, reply: str, expected: object
) -> None:
    chosen, kwargs = decision.parse_args(reply, options)

    assert await decision.resolve_decision(chosen, kwargs, options) == expected


async def test_parse_args_binds_the_runtime_and_hidden_context() -> None:
    @agentic_function(input={"user_id": {"hidden": True}})
    async def lookup(query: str, user_id: str, runtime: object = None) -> str:
        return query

    reply = pick("lookup", query="q", user_id="evil")
    runtime = Runtime(ScriptedModel([]))

    chosen, kwargs = decision.parse_args(reply, [lookup], runtime=runtime, context={"user_id": "u"})

    assert chosen is lookup
    assert kwargs == {"query": "q", "user_id": "u", "runtime": runtime}


async def test_parse_args_invalid_reply_is_a_decision_error_after_one_attempt() -> None:
    with pytest.raises(DecisionError, match=r"^decision failed after 1 attempt\(s\)") as info:
        decision.parse_args(pick("nope"), ["done"])

    assert (info.value.kind, info.value.attempts, info.value.replies) == (
        "unknown_call",
        1,
        [pick("nope")],
    )


async def test_resolve_decision_rejects_what_was_not_offered() -> None:
    with pytest.raises(ValueError, match="not one of the offered options"):
        await decision.resolve_decision("other", {}, ["done"])
