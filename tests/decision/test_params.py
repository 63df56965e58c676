"""docs/decisions.md §4: function options, their parameters, types and injected values."""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import threading
from typing import Any, Literal, Optional

import anyio
import postponed_options as postponed
import pytest
from pydantic import BaseModel

from engine import DecisionError, Runtime, agentic_function, decision
from engine.models import ScriptedModel


def pick(call: object, **args: object) -> str:
    return json.dumps({"call": call, "args": args})


async def ask(options: object, reply: str, **kwargs: Any) -> Any:
    """Ask once, without re-picks, and return the resolved result of the pick."""
    runtime = Runtime(ScriptedModel([reply]))
    return await decision.make("Pick one.", options, runtime=runtime, max_retries=0, **kwargs)


def rejected(options: object, reply: str) -> DecisionError:
    """Return the DecisionError that parsing ``reply`` against ``options`` raises."""
    with pytest.raises(DecisionError) as info:
        decision.parse_args(reply, options)
    return info.value


def signature(options: object) -> str:
    return decision.render_options(options).splitlines()[0]


class Order(BaseModel):
    sku: str
    qty: int = 1


def untyped(note, count=2):  # type: ignore[no-untyped-def]
    """Take anything."""
    return note, count


def typed(
    count: int,
    ratio: float,
    flag: bool,
    names: list[str],
    maybe: Optional[int] = None,  # noqa: UP045 - the typing form is what is under test
    either: int | None = None,
    order: Order | None = None,
) -> dict[str, object]:
    """Take typed values."""
    return {"count": count, "ratio": ratio, "flag": flag, "names": names, "maybe": maybe}


VALID = {"count": 1, "ratio": 0.5, "flag": True, "names": ["a"]}


# Types from annotations ---------------------------------------------------------------------


def test_params_unannotated_parameter_is_a_string() -> None:
    assert signature([untyped]) == "untyped(note: str, count: str = 2)"
    assert decision.parse_args(pick("untyped", note="hi"), [untyped]) == (untyped, {"note": "hi"})
    error = rejected([untyped], pick("untyped", note=5))
    assert error.kind == "type_mismatch"


def test_params_types_come_from_the_annotations() -> None:
    assert signature([typed]) == (
        "typed(count: int, ratio: float, flag: bool, names: list[str], maybe: int | None = null, "
        "either: int | None = null, order: Order | None = null)"
    )


def test_params_annotated_values_validate_and_convert() -> None:
    reply = pick("typed", **{**VALID, "ratio": 2, "order": {"sku": "a-1", "qty": 3}})
    chosen, kwargs = decision.parse_args(reply, [typed])
    assert chosen is typed
    assert kwargs == {**VALID, "ratio": 2.0, "order": Order(sku="a-1", qty=3)}
    assert type(kwargs["ratio"]) is float  # an int is a valid float, passed as a float


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("count", True, "count"),
        ("count", "1", "count"),
        ("count", 1.0, "count"),
        ("ratio", "0.5", "ratio"),
        ("ratio", False, "ratio"),
        ("flag", 1, "flag"),
        ("flag", "true", "flag"),
        ("names", "a", "names"),
        ("names", ["a", 2], "names[1]"),
        ("maybe", "3", "maybe"),
        ("maybe", True, "maybe"),
        ("either", 1.5, "either"),
        ("order", {"sku": "a-1", "qty": "3"}, "order.qty"),
        ("order", {"sku": "a-1", "qty": True}, "order.qty"),
        ("order", ["a-1"], "order"),
    ],
    ids=[
        "bool-is-not-int",
        "no-str-to-int",
        "float-is-not-int",
        "no-str-to-float",
        "bool-is-not-float",
        "int-is-not-bool",
        "str-is-not-bool",
        "str-is-not-list",
        "list-item",
        "optional-no-str-to-int",
        "optional-bool-is-not-int",
        "union-float-is-not-int",
        "model-no-str-to-int",
        "model-bool-is-not-int",
        "model-from-list",
    ],
)
def test_params_validation_is_strict(field: str, value: object, path: str) -> None:
    error = rejected([typed], pick("typed", **{**VALID, field: value}))
    assert error.kind == "type_mismatch"
    assert f"{path}:" in error.message


def test_params_model_missing_field_is_missing_required_with_its_path() -> None:
    error = rejected([typed], pick("typed", **VALID, order={"qty": 2}))
    assert error.kind == "missing_required"
    assert "order.sku" in error.message


# Postponed annotations ----------------------------------------------------------------------


def test_params_postponed_annotations_render_as_real_types() -> None:
    assert decision.render_options([postponed.ship, postponed.annotate, postponed.Point]) == (
        'ship(order: Order, speed: str = "slow", count: int | None = null, '
        "tags: list[str] | None = null)\n"
        "    Ship an order.\n"
        "    order\n"
        '    speed (options: "slow", "fast")\n'
        "    count\n"
        "    tags\n"
        '    Call: {"call": "ship", "args": {"order": {"sku": "<str>", "qty": 0}, '
        '"speed": "slow", "count": 0, "tags": ["<str>"]}}\n'
        "\n"
        "annotate(note: str, weight: float)\n"
        "    Annotate a ticket.\n"
        "    note: a note for the log\n"
        "    weight\n"
        '    Call: {"call": "annotate", "args": {"note": "<str>", "weight": 0.0}}\n'
        "\n"
        "Point(x: int, y: float = 0.0)\n"
        "    A point on the plane.\n"
        "    x\n"
        "    y\n"
        '    Call: {"call": "Point", "args": {"x": 0, "y": 0.0}}\n'
    )


@pytest.mark.parametrize(
    ("args", "path", "kind"),
    [
        ({"order": {"sku": 5}}, "order.sku", "type_mismatch"),
        ({"order": {"sku": "a"}, "speed": "warp"}, "speed", "enum_violation"),
        ({"order": {"sku": "a"}, "count": "2"}, "count", "type_mismatch"),
        ({"order": {"sku": "a"}, "tags": [1]}, "tags[0]", "type_mismatch"),
    ],
    ids=["forward-referenced-model", "literal", "optional", "list-of-str"],
)
def test_params_postponed_annotations_validate(
    args: dict[str, object], path: str, kind: str
) -> None:
    error = rejected([postponed.ship], pick("ship", **args))
    assert error.kind == kind
    assert f"{path}:" in error.message


async def test_params_postponed_options_run_with_validated_arguments() -> None:
    reply = pick("ship", order={"sku": "a-1", "qty": 2}, speed="fast", count=None, tags=["x"])
    assert await ask([postponed.ship], reply) == "a-1 x2 fast None ['x']"
    reply = pick("annotate", note="hi", weight=1)
    assert await ask([postponed.annotate], reply, context={"user": "ann"}) == "ann: hi (1.0)"
    assert await ask([postponed.Point], pick("Point", x=1)) == postponed.Point(1, 0.0)


def test_params_unresolvable_annotation_is_type_error_at_registration() -> None:
    with pytest.raises(TypeError, match="parameter 'x': cannot resolve its annotation"):
        decision.render_options([postponed.refers_to_missing])


class Opaque:
    """A type pydantic has no schema for."""


def test_params_annotation_pydantic_cannot_validate_is_type_error_naming_the_type() -> None:
    def handle(thing: Opaque) -> None:
        """Handle a thing."""

    with pytest.raises(TypeError, match="parameter 'thing': cannot validate values of type Opaque"):
        decision.render_options([handle])


# @agentic_function(input=...) and Literal ---------------------------------------------------


@agentic_function(
    input={
        "team": {"description": "who takes it", "options": ["billing", "tech"]},
        "priority": {"options": [1, 2, 3]},
        "note": {"description": "a short note"},
        "tenant": {"hidden": True},
    }
)
async def route(team: str, priority: int, note: str = "", tenant: str = "acme") -> str:
    """Route the ticket."""
    return f"{tenant}/{team}/{priority}/{note}"


async def level(mode: Literal["safe", "fast"], tier: Literal[1, 2] = 1) -> str:
    """Set the level."""
    return f"{mode}{tier}"


def test_params_input_metadata_describes_enumerates_and_hides() -> None:
    assert decision.render_options([route]) == (
        'route(team: str, priority: int, note: str = "")\n'
        "    Route the ticket.\n"
        '    team: who takes it (options: "billing", "tech")\n'
        "    priority (options: 1, 2, 3)\n"
        "    note: a short note\n"
        '    Call: {"call": "route", "args": {"team": "billing", "priority": 1, "note": "<str>"}}\n'
    )


@pytest.mark.parametrize(
    ("options", "args", "path"),
    [
        ([route], {"team": "sales", "priority": 1}, "team"),
        ([route], {"team": "tech", "priority": 4}, "priority"),
        ([level], {"mode": "slow"}, "mode"),
        ([level], {"mode": "safe", "tier": 3}, "tier"),
    ],
    ids=["input-options-str", "input-options-int", "literal-str", "literal-int"],
)
def test_params_enum_rejects_other_values(
    options: list[object], args: dict[str, object], path: str
) -> None:
    error = rejected(options, pick(options[0].__name__, **args))  # type: ignore[attr-defined]
    assert error.kind == "enum_violation"
    assert f"{path}:" in error.message


def test_params_literal_enum_is_shown_with_json_values() -> None:
    assert decision.render_options([level]) == (
        "level(mode: str, tier: int = 1)\n"
        "    Set the level.\n"
        '    mode (options: "safe", "fast")\n'
        "    tier (options: 1, 2)\n"
        '    Call: {"call": "level", "args": {"mode": "safe", "tier": 1}}\n'
    )


def test_params_literal_int_enum_rejects_bool() -> None:
    assert rejected([level], pick("level", mode="safe", tier=True)).kind == "type_mismatch"


@agentic_function(input={"size": {"options": [1, 2, 4]}, "unit": {"options": ["kb", "mb"]}})
async def allocate(size, unit="kb"):  # type: ignore[no-untyped-def]
    """Allocate memory."""
    return f"{size}{unit}"


def test_params_unannotated_parameter_with_options_takes_the_options_type() -> None:
    assert signature([allocate]) == 'allocate(size: int, unit: str = "kb")'
    assert decision.parse_args(pick("allocate", size=2), [allocate])[1] == {"size": 2}
    assert rejected([allocate], pick("allocate", size="2")).kind == "type_mismatch"


def test_params_options_that_do_not_match_the_annotation_are_type_error() -> None:
    @agentic_function(input={"size": {"options": ["small", "large"]}})
    async def resize(size: int) -> int:
        """Resize."""
        return size

    with pytest.raises(
        TypeError, match="parameter 'size': option value 'small' is not a valid int"
    ):
        decision.render_options([resize])


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"
    GREEN = "green"


@agentic_function(input={"color": {"options": ["red", "blue"]}})
async def paint(color: Color) -> Color:
    """Paint the wall."""
    return color


async def test_params_input_options_narrow_an_enum_type_by_its_json_values() -> None:
    assert decision.render_options([paint]).splitlines()[2] == '    color (options: "red", "blue")'
    assert await ask([paint], pick("paint", color="blue")) is Color.BLUE
    assert rejected([paint], pick("paint", color="green")).kind == "enum_violation"


# Runtime-class and hidden parameters --------------------------------------------------------


RUNTIME = Runtime(ScriptedModel([]))


@agentic_function(input={"account": {"hidden": True}, "token": {"hidden": True}})
async def charge(
    amount: int,
    account: str,
    token: str = "default-token",
    runtime: Runtime | None = None,
    exec_runtime: Runtime | None = None,
    review_runtime: Runtime | None = None,
) -> dict[str, object]:
    """Charge the account."""
    return {"amount": amount, "account": account, "token": token, "runtime": runtime}


def test_params_runtime_and_hidden_parameters_are_never_shown() -> None:
    assert decision.render_options([charge]) == (
        "charge(amount: int)\n"
        "    Charge the account.\n"
        "    amount\n"
        '    Call: {"call": "charge", "args": {"amount": 0}}\n'
    )


def test_params_model_cannot_set_runtime_or_hidden_parameters() -> None:
    reply = pick(
        "charge",
        amount=5,
        account="attacker",
        token="stolen",
        runtime="fake",
        exec_runtime="fake",
        review_runtime="fake",
    )
    chosen, kwargs = decision.parse_args(
        reply, [charge], runtime=RUNTIME, context={"account": "acct-1"}
    )
    assert chosen is charge
    assert kwargs == {
        "amount": 5,
        "account": "acct-1",
        "runtime": RUNTIME,
        "exec_runtime": RUNTIME,
        "review_runtime": RUNTIME,
    }


def act_with_runtime(x: int, runtime: object = None) -> None:
    """Act."""


def act_with_exec_runtime(x: int, exec_runtime: object = None) -> None:
    """Act."""


def act_with_review_runtime(x: int, *, review_runtime: object) -> None:
    """Act."""


@pytest.mark.parametrize(
    ("act", "name"),
    [
        (act_with_runtime, "runtime"),
        (act_with_exec_runtime, "exec_runtime"),
        (act_with_review_runtime, "review_runtime"),
    ],
    ids=["runtime", "exec_runtime", "review_runtime-required"],
)
def test_params_each_runtime_class_parameter_gets_the_runtime(act: object, name: str) -> None:
    options = {"act": act}
    assert signature(options) == "act(x: int)"
    _, kwargs = decision.parse_args(pick("act", x=1, **{name: "fake"}), options, runtime=RUNTIME)
    assert kwargs == {"x": 1, name: RUNTIME}


def test_params_hidden_parameter_with_default_and_no_context_keeps_its_default() -> None:
    _, kwargs = decision.parse_args(
        pick("charge", amount=5, token="stolen"), [charge], context={"account": "a"}
    )
    assert "token" not in kwargs  # the function's own default applies


async def test_params_hidden_parameter_comes_from_context_when_the_function_runs() -> None:
    result = await ask(
        [charge], pick("charge", amount=5, account="attacker"), context={"account": "acct-9"}
    )
    assert result["account"] == "acct-9"
    assert result["token"] == "default-token"
    assert isinstance(result["runtime"], Runtime)


async def test_params_hidden_parameter_with_default_runs_without_context() -> None:
    assert await ask([route], pick("route", team="tech", priority=2, tenant="evil")) == (
        "acme/tech/2/"
    )


def test_params_hidden_parameter_without_default_needs_the_context() -> None:
    with pytest.raises(TypeError, match="hidden parameter 'account' has no default"):
        decision.parse_args(pick("charge", amount=5, account="attacker"), [charge])


def test_params_runtime_parameter_with_an_unresolvable_annotation_is_fine() -> None:
    # postponed.ship annotates runtime with a name imported only for the type checker.
    assert "runtime" not in decision.render_options([postponed.ship])


# Optional and required ----------------------------------------------------------------------


async def greet(name: str, greeting: str = "hello", times: int = 1) -> str:
    """Greet someone."""
    return f"{greeting} {name}" * times


async def test_params_null_for_an_optional_parameter_means_its_default() -> None:
    reply = pick("greet", name="ann", greeting=None, times=None)
    assert decision.parse_args(reply, [greet]) == (greet, {"name": "ann"})
    assert await ask([greet], reply) == "hello ann"


def test_params_null_for_a_required_parameter_is_rejected() -> None:
    error = rejected([greet], pick("greet", name=None))
    assert error.kind == "type_mismatch"
    assert "name: expected str, got null" in error.message


async def set_limit(limit: int | None) -> str:
    """Set or clear the limit."""
    return f"limit={limit}"


async def test_params_required_parameter_typed_optional_takes_null_as_a_value() -> None:
    # Required, but its annotation admits None: null is that value, not "use the default".
    assert signature([set_limit]) == "set_limit(limit: int | None)"
    assert decision.parse_args(pick("set_limit", limit=None), [set_limit])[1] == {"limit": None}
    assert await ask([set_limit], pick("set_limit", limit=None)) == "limit=None"
    assert rejected([set_limit], pick("set_limit")).kind == "missing_required"


def test_params_missing_required_parameter_is_missing_required() -> None:
    error = rejected([greet], pick("greet", greeting="hi"))
    assert error.kind == "missing_required"
    assert "name" in error.message


# **kwargs and *args -------------------------------------------------------------------------


async def flexible(topic: str, *extra: str, **fields: object) -> dict[str, object]:
    """Record a topic and whatever else comes."""
    return {"topic": topic, "extra": extra, **fields}


async def strict(topic: str, *extra: str) -> dict[str, object]:
    """Record a topic."""
    return {"topic": topic, "extra": extra}


@agentic_function(input={"secret": {"hidden": True}})
async def flexible_hidden(topic: str, secret: str = "kept", **fields: object) -> dict[str, object]:
    """Record a topic, with a hidden secret."""
    return {"topic": topic, "secret": secret, **fields}


async def test_params_var_keyword_absorbs_fields_outside_the_signature() -> None:
    reply = pick("flexible", topic="t", color="red", size=3)
    assert decision.parse_args(reply, [flexible])[1] == {"topic": "t", "color": "red", "size": 3}
    assert await ask([flexible], reply) == {"topic": "t", "extra": (), "color": "red", "size": 3}


async def test_params_without_var_keyword_unknown_fields_are_dropped() -> None:
    reply = pick("strict", topic="t", color="red")
    assert decision.parse_args(reply, [strict])[1] == {"topic": "t"}
    assert await ask([strict], reply) == {"topic": "t", "extra": ()}


def test_params_var_keyword_never_absorbs_runtime_or_hidden_parameters() -> None:
    reply = pick("flexible_hidden", topic="t", secret="stolen", runtime="fake", color="red")
    _, kwargs = decision.parse_args(reply, [flexible_hidden], runtime=RUNTIME)
    assert kwargs == {"topic": "t", "color": "red"}


def test_params_var_positional_is_never_required_nor_shown() -> None:
    assert signature([flexible]) == "flexible(topic: str)"
    assert signature([strict]) == "strict(topic: str)"
    assert decision.parse_args(pick("strict", topic="t"), [strict]) == (strict, {"topic": "t"})


def test_params_positional_only_parameter_is_type_error_at_registration() -> None:
    def move(x: int, /, y: int) -> None:
        """Move."""

    with pytest.raises(TypeError, match="parameter 'x' is positional-only"):
        decision.render_options([move])
    with pytest.raises(TypeError, match="positional-only"):
        decision.render_options({"move": move})


async def test_params_positional_only_parameter_fails_before_any_model_call() -> None:
    model = ScriptedModel([pick("len", obj=[1])])
    with pytest.raises(TypeError, match="positional-only"):
        await decision.make("Pick one.", {"len": len}, runtime=Runtime(model))
    assert model.calls == 0


# Callables of every shape -------------------------------------------------------------------


class Doubler:
    """Double a number."""

    async def __call__(self, x: int) -> int:
        return x * 2


class Tripler:
    def __call__(self, x: int) -> int:
        """Triple a number."""
        return x * 3


async def add(x: int, y: int) -> int:
    """Add two numbers."""
    return x + y


@agentic_function
async def negate(x: int) -> int:
    """Negate a number."""
    return -x


@dataclasses.dataclass
class Box:
    """A box."""

    width: int
    label: str = "box"


class Plain:
    def __init__(self, size: int, name: str = "plain") -> None:
        self.size = size
        self.name = name


@pytest.mark.parametrize(
    ("handler", "reply_args", "expected"),
    [
        (add, {"x": 1, "y": 2}, 3),
        (negate, {"x": 4}, -4),
        (Doubler(), {"x": 4}, 8),
        (Tripler(), {"x": 4}, 12),
        (functools.partial(add, y=10), {"x": 1}, 11),
        (functools.partial(Doubler()), {"x": 5}, 10),
        (lambda text: text.upper(), {"text": "hi"}, "HI"),
    ],
    ids=[
        "async-def",
        "async-agentic",
        "async-callable-instance",
        "callable-instance",
        "partial-of-async",
        "partial-of-async-instance",
        "lambda",
    ],
)
async def test_params_callable_options_are_called_and_awaited(
    handler: object, reply_args: dict[str, object], expected: object
) -> None:
    assert await ask({"op": handler}, pick("op", **reply_args)) == expected


@pytest.mark.parametrize(
    ("cls", "args", "expected_signature", "check"),
    [
        (Box, {"width": 3}, 'op(width: int, label: str = "box")', Box(3, "box")),
        (Order, {"sku": "a", "qty": 2}, "op(sku: str, qty: int = 1)", Order(sku="a", qty=2)),
        (Plain, {"size": 2}, 'op(size: int, name: str = "plain")', None),
    ],
    ids=["dataclass", "pydantic-model", "plain-class"],
)
async def test_params_classes_are_options_built_from_validated_arguments(
    cls: type, args: dict[str, object], expected_signature: str, check: object
) -> None:
    assert signature({"op": cls}) == expected_signature
    result = await ask({"op": cls}, pick("op", **args))
    assert isinstance(result, cls)
    if check is not None:
        assert result == check


@pytest.mark.parametrize(
    ("cls", "args"),
    [(Box, {"width": "3"}), (Order, {"sku": "a", "qty": True}), (Plain, {"size": 2.5})],
    ids=["dataclass", "pydantic-model", "plain-class"],
)
def test_params_class_options_validate_their_fields(cls: type, args: dict[str, object]) -> None:
    assert rejected({"op": cls}, pick("op", **args)).kind == "type_mismatch"


async def test_params_plain_def_does_not_block_the_event_loop() -> None:
    released = threading.Event()

    def wait_for_release() -> bool:
        """Block until released."""
        return released.wait(timeout=5)

    async def release() -> None:
        await anyio.sleep(0.01)
        released.set()

    results: list[object] = []

    async def decide() -> None:
        results.append(await ask([wait_for_release], pick("wait_for_release")))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(decide)
            group.start_soon(release)
    assert results == [True]
