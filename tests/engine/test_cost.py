"""Cost in money: prices from the table or the user, per call, per run, across resumes, budgets."""

from __future__ import annotations

import math
import socket
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import Engine, Price, RunBudget, Runtime, agentic_function, decision
from engine.models import (
    AnthropicModel,
    OpenAIModel,
    Request,
    Response,
    ScriptedModel,
    SimulatedModel,
    Usage,
    call_cost,
)
from engine.models import _costs as costs_module
from engine.store import Store

#: $1 per million input tokens, $2 per million output tokens: easy sums.
ONE_TWO = Price(input_per_mtok=1.0, output_per_mtok=2.0)
PICK = '{"call": "billing"}'


@agentic_function
async def two_routes(ticket: str, runtime: Runtime | None = None) -> list[str]:
    """Two decisions."""
    return [
        await decision.make(f"Route {ticket}, step {n}.", ["billing", "shipping"]) for n in (1, 2)
    ]


def reply(input_tokens: int, output_tokens: int, model: str | None = None) -> Response:
    return Response(
        text=PICK, usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens), model=model
    )


class Canned:
    """A model that answers every call with a pick and fixed usage (100 in, 10 out)."""

    def __init__(self, name: str = "canned", *, price: Price | None = None) -> None:
        self.name = name
        self.price = price
        self.calls = 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        return reply(100, 10, self.name)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No socket may connect: the price table must answer from the package alone."""

    def refuse(self: socket.socket, *args: Any) -> None:
        raise AssertionError("the price lookup tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


# -- prices ------------------------------------------------------------------------------------


def test_a_price_costs_tokens_per_million() -> None:
    assert ONE_TWO.cost(1_000_000, 0) == 1.0
    assert ONE_TWO.cost(100, 10) == pytest.approx(0.00012)
    assert Price(input_per_mtok=0.15, output_per_mtok=0.6).cost(1000, 500) == 0.00045


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("in=0.15,out=0.60", Price(input_per_mtok=0.15, output_per_mtok=0.6)),
        (" out = 2 , in = 1 ", ONE_TWO),
        ("input=1,output=2", ONE_TWO),
        ("in=0,out=0", Price(input_per_mtok=0, output_per_mtok=0)),
    ],
    ids=["cli-form", "spaces-any-order", "long-names", "free"],
)
def test_a_price_parses_from_the_command_line_form(text: str, expected: Price) -> None:
    assert Price.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0.15", "write in=<dollars>,out=<dollars>"),
        ("in=0.15", "gives no out="),
        ("in=1,in=2,out=3", "gives in= twice"),
        ("in=cheap,out=1", "'cheap' is not a number"),
        ("in=-1,out=1", "must be a finite number >= 0"),
        ("in=nan,out=1", "must be a finite number >= 0"),
        ("in=1,out=1,cached=0.5", "write in=<dollars>,out=<dollars>"),
    ],
    ids=["bare-number", "missing-side", "repeated", "not-a-number", "negative", "nan", "unknown"],
)
def test_a_bad_price_says_how_to_write_one(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Price.parse(text)


@pytest.mark.parametrize("bad", [True, "1", None, math.inf], ids=["bool", "str", "none", "inf"])
def test_a_price_is_a_finite_number_of_dollars(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="input_per_mtok"):
        Price(input_per_mtok=bad, output_per_mtok=1.0)


@given(st.text(max_size=60))
def test_parsing_any_text_gives_a_price_or_a_value_error(text: str) -> None:
    try:
        price = Price.parse(text)
    except ValueError:
        return
    assert price.input_per_mtok >= 0
    assert price.output_per_mtok >= 0


@given(
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
)
def test_a_price_written_out_parses_back(input_per_mtok: float, output_per_mtok: float) -> None:
    price = Price(input_per_mtok=input_per_mtok, output_per_mtok=output_per_mtok)
    assert Price.parse(f"in={input_per_mtok!r},out={output_per_mtok!r}") == price


# -- which price a call gets -------------------------------------------------------------------


@pytest.mark.usefixtures("offline")
def test_a_known_openai_model_is_priced_from_the_table_without_the_network() -> None:
    from genai_prices import data_snapshot

    model = OpenAIModel("gpt-4o-mini", api_key="sk-test")
    # $0.15 and $0.60 per million in the table; the dated name the API reports matches too.
    assert call_cost(model, reply(1000, 500, "gpt-4o-mini-2024-07-18")) == pytest.approx(0.00045)
    assert call_cost(model, reply(1000, 500)) == pytest.approx(0.00045)
    assert data_snapshot.get_snapshot().from_auto_update is False  # the shipped table


@pytest.mark.usefixtures("offline")
def test_a_known_anthropic_model_is_priced_from_the_table() -> None:
    cost = call_cost(AnthropicModel("claude-3-5-haiku-latest"), reply(1000, 500))
    assert cost is not None
    assert cost > 0


@pytest.mark.parametrize(
    "model",
    [
        OpenAIModel("tiny", base_url="http://127.0.0.1:9/v1"),
        # A local server that names its model after a paid one is not billed like it.
        OpenAIModel("gpt-4o-mini", base_url="http://127.0.0.1:9/v1"),
        OpenAIModel("no-such-model-anywhere", api_key="sk-test"),
        ScriptedModel([PICK]),
        SimulatedModel(seed=1),
        Canned(),
    ],
    ids=["local-server", "local-server-paid-name", "unknown-name", "scripted", "simulated", "own"],
)
@pytest.mark.usefixtures("offline")
def test_an_unknown_model_costs_none_not_zero(model: Any) -> None:
    assert call_cost(model, reply(1000, 500)) is None


def test_a_price_given_wins_over_the_table_and_the_models_own_over_the_engines() -> None:
    paid = OpenAIModel("gpt-4o-mini", api_key="sk-test")
    assert call_cost(paid, reply(1000, 0), {"gpt-4o-mini": ONE_TWO}) == pytest.approx(0.001)
    own = Canned(price=Price(input_per_mtok=10, output_per_mtok=0))
    assert call_cost(own, reply(1000, 0), {"canned": ONE_TWO}) == pytest.approx(0.01)
    # Prices by name also match the model the reply names.
    assert call_cost(Canned("alias"), reply(1000, 0, "served"), {"served": ONE_TWO}) == 0.001


@pytest.mark.parametrize(
    "model",
    [
        OpenAIModel("tiny", base_url="http://127.0.0.1:9/v1", price=ONE_TWO),
        OpenAIModel("gpt-4o-mini", api_key="sk-test", price=ONE_TWO),  # over the table's
        AnthropicModel("claude-3-5-haiku-latest", price=ONE_TWO),
        ScriptedModel([PICK], price=ONE_TWO),
        SimulatedModel(seed=1, price=ONE_TWO),
    ],
    ids=["local-server", "openai", "anthropic", "scripted", "simulated"],
)
def test_every_model_takes_a_price_of_its_own(model: Any) -> None:
    assert model.price == ONE_TWO
    assert call_cost(model, reply(1000, 500)) == pytest.approx(0.002)


@pytest.mark.parametrize(
    "make",
    [
        lambda: OpenAIModel("tiny", price=0.15),
        lambda: AnthropicModel("claude-3-5-haiku-latest", price={"in": 1}),
        lambda: ScriptedModel([PICK], price="in=1,out=2"),
        lambda: SimulatedModel(price=(1, 2)),
    ],
    ids=["openai", "anthropic", "scripted", "simulated"],
)
def test_a_price_that_is_not_a_price_is_refused_at_once(make: Any) -> None:
    with pytest.raises(TypeError, match=r"price must be a Price, as in Price\(input_per_mtok="):
        make()


def test_without_the_price_table_a_known_model_costs_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as if it were not installed
    costs_module._known.cache_clear()
    try:
        assert call_cost(OpenAIModel("gpt-4o", api_key="sk-test"), reply(1000, 500)) is None
        # A price the user gives needs no table.
        assert call_cost(Canned(price=ONE_TWO), reply(1000, 500)) == pytest.approx(0.002)
    finally:
        costs_module._known.cache_clear()


# -- per call, per run, across resumes -----------------------------------------------------------


async def test_the_run_cost_is_the_sum_of_its_calls_in_trace_and_journal(store: Store) -> None:
    engine = Engine(model=Canned(), store=store, prices={"canned": ONE_TWO})

    run = await engine.run(two_routes, "t1", run_id="r1")

    assert run.status == "completed"
    journal = await store.load_journal("r1")
    journaled = [r.data["cost_usd"] for r in journal if r.kind == "model"]
    assert journaled == [pytest.approx(0.00012)] * 2
    trace = await store.load_trace("r1")
    assert trace is not None
    traced = [n["data"]["cost_usd"] for n in trace["nodes"] if "cost_usd" in n.get("data", {})]
    assert traced == journaled
    assert run.cost_usd == pytest.approx(sum(journaled))
    assert (await store.get_run("r1")) == run


async def test_a_scripted_model_with_a_price_gives_its_run_a_cost(store: Store) -> None:
    model = ScriptedModel([PICK, PICK], price=ONE_TWO)

    run = await Engine(model=model, store=store).run(two_routes, "t1", run_id="r1")

    assert run.status == "completed"
    assert run.usage.total_tokens > 0
    # A price is linear: the run's calls together cost what their tokens together cost.
    expected = ONE_TWO.cost(run.usage.input_tokens, run.usage.output_tokens)
    assert run.cost_usd == pytest.approx(expected, abs=1e-9)


async def test_an_unpriced_run_has_an_unknown_cost(store: Store) -> None:
    run = await Engine(model=Canned(), store=store).run(two_routes, "t1", run_id="r1")

    assert run.status == "completed"
    assert run.cost_usd is None
    journal = await store.load_journal("r1")
    assert all("cost_usd" not in r.data for r in journal if r.kind == "model")


async def test_a_model_with_a_table_price_is_costed_in_a_run(store: Store) -> None:
    class Mini(OpenAIModel):
        """gpt-4o-mini on OpenAI's API, answered here instead of over the network."""

        async def complete(self, request: Request) -> Response:
            return reply(1000, 500, "gpt-4o-mini-2024-07-18")

    engine = Engine(model=Mini("gpt-4o-mini", api_key="sk-test"), store=store)

    run = await engine.run(two_routes, "t1", run_id="r1")

    assert run.cost_usd == pytest.approx(2 * 0.00045)


async def test_a_resumed_run_adds_the_cost_of_each_execution(store: Store) -> None:
    bad = ScriptedModel([PICK, "no pick here", "still none"])
    engine = Engine(model=bad, store=store, prices={"scripted": ONE_TWO})
    first = await engine.run(two_routes, "t1", run_id="r1")
    assert first.status == "suspended"
    assert first.cost_usd is not None

    good = Canned(price=Price(input_per_mtok=1000, output_per_mtok=0))
    resumed = await engine.resume("r1", model=good)

    assert resumed.status == "completed"
    assert good.calls == 1  # the first decision replays from the journal: not paid again
    assert resumed.cost_usd == pytest.approx(first.cost_usd + 0.1)


async def test_a_money_budget_suspends_the_run_and_a_bigger_one_resumes_it(store: Store) -> None:
    model = Canned(price=ONE_TWO)  # $0.00012 a call
    engine = Engine(model=model, store=store, budget=RunBudget(cost_usd=0.0001))

    run = await engine.run(two_routes, "t1", run_id="r1")

    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "budget_exceeded"
    assert "cost_usd budget ran out (0.00012 spent of 0.0001)" in run.error.message
    assert model.calls == 1
    # Still over budget: stopped before the next live call, which is not made.
    again = await engine.resume("r1")
    assert again.status == "suspended"
    assert model.calls == 1
    # The reply that crossed the budget was journaled: the resume does not pay for it again.
    richer = Engine(model=model, store=store, budget=RunBudget(cost_usd=1.0))
    done = await richer.resume("r1")
    assert done.status == "completed"
    assert model.calls == 2
    assert done.cost_usd == pytest.approx(0.00024)


async def test_a_money_budget_ignores_calls_of_unknown_price(store: Store) -> None:
    engine = Engine(model=Canned(), store=store, budget=RunBudget(cost_usd=0.0))

    run = await engine.run(two_routes, "t1", run_id="r1")

    assert run.status == "completed"
    assert run.cost_usd is None


def test_a_money_budget_is_not_negative() -> None:
    with pytest.raises(ValueError, match="cost_usd"):
        RunBudget(cost_usd=-0.5)


async def test_a_batch_reports_what_its_finished_runs_cost(store: Store) -> None:
    seen: list[Any] = []
    engine = Engine(model=Canned(price=ONE_TWO), store=store)

    runs = await engine.run_many(two_routes, ["t1", "t2", "t3"], progress=seen.append)

    assert [r.status for r in runs] == ["completed"] * 3
    assert seen[-1].cost_usd == pytest.approx(sum(r.cost_usd or 0 for r in runs))
    assert seen[-1].cost_usd == pytest.approx(3 * 2 * 0.00012)
    assert seen[0].cost_usd is None  # nothing had finished yet
