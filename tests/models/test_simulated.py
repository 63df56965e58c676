"""SimulatedModel: deterministic picks from the offered menu, valid arguments, faults, latency."""

from __future__ import annotations

import decimal
import json
import random
from collections import Counter
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field

from engine import (
    DecisionError,
    ModelTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
    Runtime,
    decision,
)
from engine._decision._menu import build_menu
from engine.models import (
    ChoiceSpec,
    Faults,
    Message,
    Request,
    SimulatedModel,
    ToolSpec,
)
from engine.models._fill import fill, wrong_value


class Item(BaseModel):
    sku: str
    qty: int = 1


async def refund(amount: float, items: list[Item], note: str | None = None) -> str:
    """Refund the customer."""
    return "refunded"


async def escalate(team: Literal["billing", "tech"], urgent: bool = False) -> str:
    """Escalate to a team."""
    return team


OPTIONS: dict[str, Any] = {
    "refund": refund,
    "escalate": escalate,
    "close": ("Close the ticket.", {"reason": str, "tags": [str]}),
    "wait": None,
}


CHOICES = [ChoiceSpec(**c) for c in build_menu(OPTIONS).choices()]


def request(i: int) -> Request:
    return Request(messages=[Message.of("user", f"ticket {i}")], choices=CHOICES)


async def replies(model: SimulatedModel, n: int) -> list[str]:
    return [(await model.complete(request(i))).text for i in range(n)]


class Sleeps:
    """An injected sleep that records what it was asked to wait, and never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_simulated_same_seed_same_replies() -> None:
    assert await replies(SimulatedModel(7), 50) == await replies(SimulatedModel(7), 50)


async def test_simulated_other_seed_other_replies() -> None:
    assert await replies(SimulatedModel(7), 50) != await replies(SimulatedModel(8), 50)


async def test_simulated_replies_do_not_depend_on_call_order() -> None:
    forward = SimulatedModel(3)
    backward = SimulatedModel(3)
    first = {i: (await forward.complete(request(i))).text for i in range(20)}
    second = {i: (await backward.complete(request(i))).text for i in reversed(range(20))}

    assert first == second


async def test_simulated_repeated_request_gets_a_fresh_draw() -> None:
    model = SimulatedModel(1)
    texts = {(await model.complete(request(0))).text for _ in range(10)}

    assert len(texts) > 1


async def test_simulated_picks_are_valid_and_cover_the_menu() -> None:
    model = SimulatedModel(11)
    picked: Counter[str] = Counter()

    for i in range(400):
        reply = (await model.complete(request(i))).text
        chosen, _ = decision.parse_args(reply, OPTIONS)
        picked[chosen if isinstance(chosen, str) else chosen.__name__] += 1

    assert set(picked) == {"refund", "escalate", "close", "wait"}
    assert min(picked.values()) > 60  # uniform: about 100 each


async def test_simulated_reads_the_menu_from_choices_not_text() -> None:
    choices = [ChoiceSpec(name="alpha"), ChoiceSpec(name="beta")]
    prompt = "Options: gamma(), delta()"
    req = Request(messages=[Message.of("user", prompt)], choices=choices)

    reply = (await SimulatedModel(0).complete(req)).text

    assert json.loads(reply[reply.index("{") : reply.rindex("}") + 1])["call"] in {"alpha", "beta"}


async def test_simulated_weights_skew_the_picks_and_unnamed_options_weigh_zero() -> None:
    model = SimulatedModel(5, weights={"refund": 0.8, "escalate": 0.2})
    picked: Counter[str] = Counter()
    for i in range(2000):
        picked[json.loads(_json(await model.complete(request(i))))["call"]] += 1

    assert set(picked) == {"refund", "escalate"}
    assert 0.75 < picked["refund"] / 2000 < 0.85


async def test_simulated_policy_by_name_fills_the_arguments() -> None:
    model = SimulatedModel(0, policy=lambda req: "escalate")

    reply = (await model.complete(request(1))).text
    chosen, kwargs = decision.parse_args(reply, OPTIONS)

    assert chosen is escalate
    assert kwargs["team"] in ("billing", "tech")


async def test_simulated_policy_may_return_the_whole_pick() -> None:
    pick = {"call": "close", "args": {"reason": "done", "tags": []}}
    model = SimulatedModel(0, policy=lambda req: pick)

    result = await decision.make("Pick.", OPTIONS, runtime=Runtime(model))

    assert result == {"decision": "close", "reason": "done", "tags": []}


async def test_simulated_plain_turn_is_short_deterministic_prose() -> None:
    req = Request(messages=[Message.of("user", "Summarise the ticket.")])

    first = await SimulatedModel(2).complete(req)
    second = await SimulatedModel(2).complete(req)

    assert first.text == second.text
    assert "{" not in first.text
    assert first.finish_reason == "stop"


async def test_simulated_usage_counts_about_four_characters_a_token() -> None:
    req = Request(messages=[Message.of("user", "x" * 400)])

    response = await SimulatedModel(0).complete(req)

    assert response.usage.input_tokens == 100
    assert response.usage.output_tokens == len(response.text) // 4


async def test_simulated_drives_a_runtime_decision_end_to_end() -> None:
    runtime = Runtime(model="simulated:4")

    results = [await decision.make("Pick one.", OPTIONS, runtime=runtime) for _ in range(20)]

    assert len(results) == 20


# -- faults ----------------------------------------------------------------------------------

FAULTS = Faults(
    no_json=0.1,
    unknown_option=0.05,
    wrong_types=0.1,
    truncated=0.05,
    rate_limit=0.1,
    server_error=0.05,
    timeout=0.05,
    retry_after=2.5,
)


async def test_simulated_fault_rates_hold_over_ten_thousand_calls() -> None:
    calls = 10_000
    model = SimulatedModel(42, faults=FAULTS)
    seen: Counter[str] = Counter()

    for i in range(calls):
        seen[await _outcome(model, request(i))] += 1

    assert model.calls == calls
    for name, rate in FAULTS.rates().items():
        assert seen[name] == model.fault_counts[name]
        # Five standard deviations of a binomial share at these rates is under 0.015.
        assert abs(seen[name] / calls - rate) < 0.015, name
    assert abs(seen["ok"] / calls - 0.5) < 0.025


async def _outcome(model: SimulatedModel, req: Request) -> str:
    """Classify one call by what the caller sees."""
    try:
        response = await model.complete(req)
    except RateLimitError as exc:
        return "rate_limit" if exc.retry_after == 2.5 else "rate_limit without retry_after"
    except ProviderUnavailableError:
        return "server_error"
    except ModelTimeoutError:
        return "timeout"
    if response.truncated:
        return "truncated"
    try:
        decision.parse_args(response.text, OPTIONS)
    except DecisionError as exc:
        return {
            "no_action": "no_json",
            "unknown_call": "unknown_option",
            "type_mismatch": "wrong_types",
            "bad_args": "wrong_types",
        }[exc.kind]
    return "ok"


async def test_simulated_truncated_reply_is_cut_and_says_length() -> None:
    model = SimulatedModel(0, faults={"truncated": 1.0})

    response = await model.complete(request(0))

    assert response.finish_reason == "length"
    assert response.truncated


async def test_simulated_faults_make_runtime_repick_then_fail() -> None:
    runtime = Runtime(model=SimulatedModel(0, faults={"no_json": 1.0}))

    with pytest.raises(DecisionError, match="after 2 attempt") as info:
        await decision.make("Pick.", OPTIONS, runtime=runtime)

    assert info.value.kind == "no_action"


@pytest.mark.parametrize(
    "faults",
    [
        pytest.param({"no_json": 1.5}, id="above-one"),
        pytest.param({"timeout": -0.1}, id="negative"),
        pytest.param({"no_json": 0.6, "timeout": 0.6}, id="sum-above-one"),
    ],
)
def test_simulated_bad_fault_rates_are_rejected(faults: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="fault rate"):
        SimulatedModel(faults=faults)


def test_simulated_unknown_fault_name_is_rejected() -> None:
    with pytest.raises(TypeError, match="bogus"):
        SimulatedModel(faults={"bogus": 0.1})


# -- latency ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latency", "check"),
    [
        pytest.param(0.25, lambda w: w == 0.25, id="fixed"),
        pytest.param((0.1, 0.3), lambda w: 0.1 <= w <= 0.3, id="range"),
        pytest.param(lambda rng: rng.choice([1.0, 2.0]), lambda w: w in (1.0, 2.0), id="callable"),
    ],
)
async def test_simulated_latency_goes_through_the_injected_sleep(latency: Any, check: Any) -> None:
    sleeps = Sleeps()
    model = SimulatedModel(0, latency=latency, sleep=sleeps)

    with anyio.fail_after(5):
        responses = [await model.complete(request(i)) for i in range(20)]

    assert len(sleeps.waits) == 20
    assert all(check(w) for w in sleeps.waits)
    assert [r.latency_s for r in responses] == sleeps.waits


def test_simulated_bad_latency_range_is_rejected() -> None:
    with pytest.raises(ValueError, match="latency"):
        SimulatedModel(latency=(2.0, 1.0))


# -- native tools ----------------------------------------------------------------------------


async def test_simulated_tool_rate_calls_an_offered_tool_with_valid_arguments() -> None:
    tool = ToolSpec(
        name="lookup",
        parameters={
            "type": "object",
            "properties": {"order_id": {"type": "integer", "minimum": 1}},
            "required": ["order_id"],
        },
    )
    req = Request(messages=[Message.of("user", "find it")], tools=[tool])

    response = await SimulatedModel(0, tool_rate=1.0).complete(req)

    assert response.finish_reason == "tool_calls"
    [call] = response.tool_calls
    assert call.name == "lookup"
    assert isinstance(call.arguments, dict)
    assert call.arguments["order_id"] >= 1


# -- schema-valid values ---------------------------------------------------------------------

PROPERTIES: dict[str, Any] = {
    "name": {"type": "string", "minLength": 3, "maxLength": 10},
    "count": {"type": "integer", "minimum": 5, "maximum": 9},
    "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
    "flag": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
    "mode": {"enum": ["a", "b"]},
    "fixed": {"const": 3},
    "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    "either": {"type": ["string", "null"]},
    "when": {"type": "string", "format": "date-time"},
    "item": {"$ref": "#/$defs/Item"},
    "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": PROPERTIES,
    "required": list(PROPERTIES),
    "$defs": {
        "Item": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            "required": ["sku"],
        }
    },
}


def test_simulated_fill_respects_types_bounds_and_refs() -> None:
    rng = random.Random(0)

    for _ in range(200):
        value = fill(SCHEMA, rng)

        assert 3 <= len(value["name"]) <= 10
        assert 5 <= value["count"] <= 9
        assert 0 < value["ratio"] <= 1
        assert isinstance(value["flag"], bool)
        assert 1 <= len(value["tags"]) <= 2
        assert value["mode"] in ("a", "b")
        assert value["fixed"] == 3
        assert value["maybe"] is None or isinstance(value["maybe"], int)
        assert value["either"] is None or isinstance(value["either"], str)
        assert value["when"].endswith("Z")
        assert isinstance(value["item"]["sku"], str)
        assert isinstance(value["pair"][0], int)
        assert isinstance(value["pair"][1], str)


@pytest.mark.parametrize(
    ("schema", "bad_type"),
    [
        pytest.param({"type": "integer"}, str, id="integer"),
        pytest.param({"type": "string"}, int, id="string"),
        pytest.param({"anyOf": [{"type": "string"}, {"type": "integer"}]}, list, id="union"),
    ],
)
def test_simulated_wrong_value_has_a_type_the_schema_rejects(
    schema: dict[str, Any], bad_type: type
) -> None:
    assert isinstance(wrong_value(schema), bad_type)


def _json(response: Any) -> str:
    text = response.text
    return text[text.index("{") : text.rindex("}") + 1]


async def half_steps(amount: Annotated[float, Field(multiple_of=0.5, gt=0, le=20)]) -> float:
    """Take a quantity in half steps."""
    return amount


async def cents(price: Annotated[float, Field(multiple_of=0.01)]) -> float:
    """Take a price."""
    return price


async def exact(amount: decimal.Decimal, cap: decimal.Decimal | None = None) -> str:
    """Take a decimal amount."""
    return str(amount)


async def tags(labels: Annotated[set[str], Field(min_length=6)]) -> int:
    """Take six or more distinct labels."""
    return len(labels)


async def flags(seen: Annotated[set[bool], Field(min_length=2)]) -> int:
    """Take both booleans."""
    return len(seen)


async def slots(
    picked: Annotated[frozenset[Annotated[int, Field(ge=0, le=3)]], Field(min_length=4)],
) -> int:
    """Take every slot."""
    return len(picked)


@pytest.mark.parametrize(
    "option",
    [
        pytest.param(half_steps, id="float-multiple-of-half"),
        pytest.param(cents, id="float-multiple-of-cent"),
        pytest.param(exact, id="decimal"),
        pytest.param(tags, id="set-of-str-min-length"),
        pytest.param(flags, id="set-of-bool-min-length"),
        pytest.param(slots, id="frozenset-of-small-int-min-length"),
    ],
)
async def test_simulated_fills_constrained_arguments_with_valid_values(option: Any) -> None:
    choices = [ChoiceSpec(**c) for c in build_menu([option]).choices()]

    for seed in range(60):
        req = Request(messages=[Message.of("user", "Pick.")], choices=choices)
        reply = (await SimulatedModel(seed).complete(req)).text

        chosen, kwargs = decision.parse_args(reply, [option])  # raises when invalid

        assert chosen is option
        assert kwargs
