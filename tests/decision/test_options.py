"""docs/decisions.md §2: option containers, dict form and list form."""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

import pytest
from pydantic import BaseModel

from engine import (
    DecisionError,
    EngineError,
    OptionsTypeError,
    OptionsValueError,
    Runtime,
    agentic_function,
    decision,
)
from engine.models import ScriptedModel


def pick(call: object, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def ask(options: object, reply: str) -> Any:
    """Ask once and return the resolved result of the pick."""
    model = ScriptedModel([reply])
    return await decision.make("Pick one.", options, runtime=Runtime(model), max_retries=0)


def first_line(options: object) -> str:
    return decision.render_options(options).splitlines()[0]


def second_line(options: object) -> str:
    return decision.render_options(options).splitlines()[1]


async def refund(amount: int) -> str:
    """Refund the customer.

    Only for orders younger than thirty days.
    """
    return f"refunded {amount}"


def escalate(reason: str) -> str:
    """Escalate to a human."""
    return f"escalated: {reason}"


def undocumented(reason: str) -> str:
    return reason


class Ticket:
    """Open a ticket."""

    def __init__(self, title: str) -> None:
        self.title = title


class Handler:
    """Handle the request with a callable instance."""

    def __call__(self, x: int) -> int:
        return x * 2


class CallDocOnly:
    def __call__(self, x: int) -> int:
        """Double the number."""
        return x * 2


class Item(BaseModel):
    name: str
    qty: int = 1


@agentic_function
async def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@agentic_function(name="search_web", description="Search the web.")
async def web(query: str) -> str:
    """Not this docstring."""
    return f"web {query}"


# The container ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [5, None, "refund", {"a", "b"}, frozenset({"a"}), 2.5, b"ab", iter(["a"])],
    ids=["int", "none", "str", "set", "frozenset", "float", "bytes", "iterator"],
)
def test_options_container_other_than_dict_or_list_is_type_error(options: object) -> None:
    with pytest.raises(TypeError, match=r"options must be a dict or list, got \w+"):
        decision.render_options(options)


@pytest.mark.parametrize("options", [{}, [], ()], ids=["dict", "list", "tuple"])
def test_options_empty_container_is_value_error(options: object) -> None:
    with pytest.raises(ValueError, match="empty"):
        decision.render_options(options)


def test_options_errors_subclass_the_builtins_and_the_engine_root() -> None:
    assert issubclass(OptionsTypeError, TypeError)
    assert issubclass(OptionsTypeError, EngineError)
    assert issubclass(OptionsValueError, ValueError)
    assert issubclass(OptionsValueError, EngineError)


@pytest.mark.parametrize(
    ("options", "error"),
    [(7, TypeError), ({}, ValueError), ([()], TypeError), (["a", "a"], ValueError)],
    ids=["bad-container", "empty", "bad-item", "duplicate"],
)
async def test_options_bad_container_fails_before_any_model_call(
    options: object, error: type[Exception]
) -> None:
    model = ScriptedModel([pick("a")])
    with pytest.raises(error):
        await decision.make("Pick one.", options, runtime=Runtime(model))
    with pytest.raises(error):
        await Runtime(model).exec("Work, then pick.", choices=options)
    assert model.calls == 0


def test_options_tuple_container_is_accepted_like_a_list() -> None:
    assert decision.render_options(("yes", "no")) == decision.render_options(["yes", "no"])


# Dict form ----------------------------------------------------------------------------------


async def test_options_dict_key_names_the_function_and_its_name_is_ignored() -> None:
    options = {"give_back": refund}
    assert first_line(options) == "give_back(amount: int)"
    assert await ask(options, pick("give_back", amount=5)) == "refunded 5"
    with pytest.raises(DecisionError, match="valid options: give_back") as info:
        await ask(options, pick("refund", amount=5))
    assert info.value.kind == "unknown_call"


@pytest.mark.parametrize(
    ("handler", "field", "expected"),
    [
        (escalate, "reason", "escalated: late"),
        (lookup, "query", "found late"),
        (functools.partial(escalate), "reason", "escalated: late"),
        (lambda reason: reason.upper(), "reason", "LATE"),
    ],
    ids=["function", "agentic-function", "partial", "lambda"],
)
async def test_options_dict_callable_is_a_function_option(
    handler: object, field: str, expected: str
) -> None:
    options = {"act": handler}
    assert first_line(options) == f"act({field}: str)"
    assert await ask(options, pick("act", **{field: "late"})) == expected


async def test_options_dict_class_is_a_function_option_returning_an_instance() -> None:
    options = {"open": Ticket}
    assert decision.render_options(options) == (
        'open(title: str)\n    Open a ticket.\n    title\n    Call: {"call": "open", "args": '
        '{"title": "<str>"}}\n'
    )
    result = await ask(options, pick("open", title="printer on fire"))
    assert isinstance(result, Ticket)
    assert result.title == "printer on fire"


@pytest.mark.parametrize(
    "handler",
    [functools.partial(refund, amount=3), Handler(), functools.partial(Handler())],
    ids=["partial-with-keyword", "callable-instance", "partial-of-instance"],
)
def test_options_dict_callable_without_name_works(handler: object) -> None:
    assert not hasattr(handler, "__name__")
    text = decision.render_options({"act": handler})
    assert text.startswith("act(")


async def test_options_dict_callable_instance_is_called_with_the_model_arguments() -> None:
    assert await ask({"double": Handler()}, pick("double", x=21)) == 42


async def test_options_dict_partial_keeps_its_bound_arguments_out_of_the_menu() -> None:
    options = {"refund_three": functools.partial(refund, amount=3)}
    assert first_line(options) == "refund_three(amount: int = 3)"
    assert await ask(options, pick("refund_three")) == "refunded 3"


def test_options_dict_callable_with_description_overrides_the_docstring() -> None:
    options = {"back": (refund, "Give the money back.")}
    assert second_line(options) == "    Give the money back."


@pytest.mark.parametrize("description", ["", None], ids=["empty", "none"])
def test_options_dict_callable_with_empty_description_falls_back_to_docstring(
    description: str | None,
) -> None:
    assert second_line({"back": (refund, description)}) == "    Refund the customer."


async def test_options_dict_description_and_schema_is_a_schema_option() -> None:
    options = {"note": ("Write a note.", {"text": str, "urgent": bool})}
    assert first_line(options) == "note(text: str, urgent: bool)"
    assert second_line(options) == "    Write a note."
    result = await ask(options, pick("note", text="hi", urgent=True))
    assert result == {"decision": "note", "text": "hi", "urgent": True}


async def test_options_dict_schema_option_with_empty_schema_returns_its_name() -> None:
    options = {"done": ("Nothing left to do.", {})}
    assert decision.render_options(options) == (
        'done()\n    Nothing left to do.\n    Call: {"call": "done"}\n'
    )
    assert await ask(options, pick("done")) == "done"


async def test_options_dict_value_with_description_returns_the_value() -> None:
    sentinel = object()
    options = {"abort": (sentinel, "Pick when stuck."), "close": ("CLOSED", "Close it.")}
    assert decision.render_options(options).splitlines()[:2] == ["abort()", "    Pick when stuck."]
    assert await ask(options, pick("abort")) is sentinel
    assert await ask(options, pick("close")) == "CLOSED"


@pytest.mark.parametrize(
    "value",
    [None, {"status": "closed"}, ["a", "b"], 0, "", "CONVERSATION_OVER", (1,), (1, 2, 3), 2.5],
    ids=["none", "dict", "list", "zero", "empty-str", "str", "1-tuple", "3-tuple", "float"],
)
async def test_options_dict_other_handler_is_a_value_returned_as_is(value: object) -> None:
    options = {"pick_me": value}
    assert decision.render_options(options) == 'pick_me()\n    Call: {"call": "pick_me"}\n'
    result = await ask(options, pick("pick_me"))
    assert result is value


@pytest.mark.parametrize(
    "value", [(1, 2), ("a", 5), (None, None)], ids=["ints", "str-int", "nones"]
)
def test_options_dict_literal_two_tuple_cannot_be_a_value(value: object) -> None:
    with pytest.raises(TypeError, match="wrap a tuple value in a list"):
        decision.render_options({"pair": value})


async def test_options_dict_two_tuple_value_wrapped_in_a_list_is_returned() -> None:
    assert await ask({"pair": [(1, 2)]}, pick("pair")) == [(1, 2)]


@pytest.mark.parametrize(
    "key", [1, None, ("a",), b"name", ""], ids=["int", "none", "tuple", "bytes", "empty"]
)
def test_options_dict_key_that_is_not_a_name_is_type_error(key: object) -> None:
    with pytest.raises(TypeError, match="keys must be option names"):
        decision.render_options({key: "value"})


@dataclasses.dataclass(frozen=True)
class Greeter:
    greeting: str

    def __call__(self, name: str) -> str:
        return f"{self.greeting} {name}"


async def test_options_equal_callables_stay_distinct_handlers() -> None:
    first, second = Greeter("hi"), Greeter("hi")
    assert first == second
    assert decision.parse_args(pick("greet", name="a"), {"greet": first})[0] is first
    assert decision.parse_args(pick("greet", name="a"), {"greet": second})[0] is second


# List form ----------------------------------------------------------------------------------


async def test_options_list_callable_is_named_by_its_name_and_described_by_its_docstring() -> None:
    assert decision.render_options([refund]) == (
        "refund(amount: int)\n"
        "    Refund the customer.\n"
        "    amount\n"
        '    Call: {"call": "refund", "args": {"amount": 0}}\n'
    )
    assert await ask([refund, escalate], pick("escalate", reason="x")) == "escalated: x"


def test_options_list_agentic_function_is_named_and_described_by_its_decorator() -> None:
    assert decision.render_options([web]).splitlines()[:2] == [
        "search_web(query: str)",
        "    Search the web.",
    ]


def test_options_list_callable_with_description_overrides_the_docstring() -> None:
    assert second_line([(refund, "Give the money back.")]) == "    Give the money back."


def test_options_list_callable_with_empty_description_falls_back_to_docstring() -> None:
    assert second_line([(refund, "")]) == "    Refund the customer."


def test_options_list_callable_tuple_ignores_extra_elements() -> None:
    text = decision.render_options([(refund, "Give it back.", "extra", 5)])
    assert text == decision.render_options([(refund, "Give it back.")])


@pytest.mark.parametrize(
    "item",
    [functools.partial(refund), Handler(), lambda x: x],
    ids=["partial", "callable-instance", "lambda"],
)
def test_options_list_callable_without_usable_name_says_to_use_the_dict_form(
    item: object,
) -> None:
    with pytest.raises(TypeError, match="use the dict form"):
        decision.render_options([item])


async def test_options_list_name_is_a_text_option_returning_the_name() -> None:
    assert decision.render_options(["done"]) == 'done()\n    Call: {"call": "done"}\n'
    assert await ask(["done", "retry"], pick("retry")) == "retry"


async def test_options_list_name_and_description_is_a_text_option() -> None:
    options = [("escalate", "Hand over to a human.")]
    assert decision.render_options(options) == (
        'escalate()\n    Hand over to a human.\n    Call: {"call": "escalate"}\n'
    )
    assert await ask(options, pick("escalate")) == "escalate"


async def test_options_list_name_description_and_schema_is_a_schema_option() -> None:
    options = [("route", "Route the ticket.", {"team": {"options": ["billing", "tech"]}})]
    assert first_line(options) == "route(team: str)"
    assert await ask(options, pick("route", team="tech")) == {"decision": "route", "team": "tech"}


async def test_options_list_empty_schema_returns_the_name() -> None:
    assert await ask([("done", "Finish.", {})], pick("done")) == "done"


def test_options_list_text_option_with_empty_description_shows_no_description() -> None:
    assert decision.render_options([("done", "")]) == 'done()\n    Call: {"call": "done"}\n'


def test_options_list_empty_tuple_is_type_error() -> None:
    with pytest.raises(TypeError, match="empty tuple"):
        decision.render_options(["ok", ()])


@pytest.mark.parametrize(
    "item",
    [(5, "five"), (None, "nothing"), ({"a": 1}, "dict"), ((), "empty")],
    ids=["int", "none", "dict", "tuple"],
)
def test_options_list_tuple_head_neither_callable_nor_name_is_type_error(item: object) -> None:
    with pytest.raises(TypeError, match="starts with a callable or a name"):
        decision.render_options([item])


@pytest.mark.parametrize(
    "item",
    [5, None, 2.5, {"name": "x"}, ["done"], b"done", True],
    ids=["int", "none", "float", "dict", "list", "bytes", "bool"],
)
def test_options_list_other_item_is_type_error(item: object) -> None:
    with pytest.raises(TypeError, match=r"options\[0\]: expected a callable, a name or a tuple"):
        decision.render_options([item])


@pytest.mark.parametrize(
    "schema", [[str], "text", 5, (("a", str),)], ids=["list", "str", "int", "tuple"]
)
def test_options_list_schema_that_is_not_a_dict_is_type_error(schema: object) -> None:
    with pytest.raises(TypeError, match=r"the schema must be a dict, got \w+; write a dict"):
        decision.render_options([("route", "Route it.", schema)])


@pytest.mark.parametrize(
    ("item", "fix"),
    [
        (("route", "Route it.", None), r"\('route', 'Route it.'\)"),
        (("route", "", None), "'route'"),
        (("route", None, None), "'route'"),
    ],
    ids=["described", "empty-description", "no-description"],
)
def test_options_list_schema_none_is_type_error_naming_the_text_form(
    item: tuple[object, ...], fix: str
) -> None:
    with pytest.raises(
        OptionsTypeError,
        match=f"option 'route': the schema must be a dict, got None; for an option without "
        f"fields leave it out: {fix}$",
    ):
        decision.render_options([item])


async def test_options_list_text_option_without_schema_still_returns_its_name() -> None:
    assert await ask([("route", "Route it."), "stay"], json.dumps({"call": "route"})) == "route"


def test_options_list_description_that_is_not_a_string_is_type_error() -> None:
    with pytest.raises(TypeError, match="description must be a string"):
        decision.render_options([("route", 5)])


@pytest.mark.parametrize(
    ("options", "name"),
    [
        (["done", "done"], "done"),
        ([escalate, escalate], "escalate"),
        ([escalate, "escalate"], "escalate"),
        ([("escalate", "Hand over."), (escalate, "Escalate.")], "escalate"),
        ([web, "search_web"], "search_web"),
    ],
    ids=["texts", "functions", "function-and-text", "tuples", "agentic-name"],
)
def test_options_duplicate_name_is_value_error_naming_it(options: list[object], name: str) -> None:
    with pytest.raises(ValueError, match=f"two options are named '{name}'"):
        decision.render_options(options)


# Descriptions -------------------------------------------------------------------------------


def docstring_paragraphs() -> None:
    """
    Check the account,
        then decide.

    Everything after the first blank line is detail for readers of the code.
    """


@pytest.mark.parametrize(
    ("options", "description"),
    [
        ([docstring_paragraphs], "    Check the account, then decide."),
        ({"act": refund}, "    Refund the customer."),
        ({"act": Handler()}, "    Handle the request with a callable instance."),
        ({"act": CallDocOnly()}, "    Double the number."),
        ({"act": functools.partial(escalate)}, "    Escalate to a human."),
        ([Ticket], "    Open a ticket."),
    ],
    ids=[
        "first-paragraph",
        "function",
        "instance-class-doc",
        "instance-call-doc",
        "partial",
        "class",
    ],
)
def test_options_description_is_the_docstring_up_to_its_first_blank_line(
    options: object, description: str
) -> None:
    assert second_line(options) == description


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            [undocumented],
            'undocumented(reason: str)\n    reason\n    Call: {"call": "undocumented", "args": '
            '{"reason": "<str>"}}\n',
        ),
        (
            {"item": Item},
            'item(name: str, qty: int = 1)\n    name\n    qty\n    Call: {"call": "item", "args": '
            '{"name": "<str>", "qty": 0}}\n',
        ),
        ([("done", None)], 'done()\n    Call: {"call": "done"}\n'),
    ],
    ids=["function", "model-borrows-no-base-docstring", "text"],
)
def test_options_without_description_has_no_description_line(
    options: object, expected: str
) -> None:
    assert decision.render_options(options) == expected


def test_schema_option_offered_again_with_other_content_is_compiled_anew() -> None:
    schema: dict[str, object] = {"priority": {"options": [1, 2]}}
    first = decision.render_options({"plan": ("Plan.", schema)})
    schema["priority"] = {"options": [True, False]}
    second = decision.render_options({"plan": ("Plan.", schema)})
    assert "(options: 1, 2)" in first
    assert "(options: true, false)" in second
    assert decision.render_options({"plan": ("Plan.", {"priority": {"options": [1, 2]}})}) == first
