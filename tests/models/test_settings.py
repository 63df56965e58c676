"""Model settings: one typed object, merged model < Runtime < call, sent by each provider."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st
from provider_server import ProviderServer, Reply
from typer.testing import CliRunner

import engine
from engine import Engine, Runtime, agentic_function, decision
from engine.cli import app
from engine.models import (
    DECISION_MAX_TOKENS,
    AnthropicModel,
    Message,
    ModelSettings,
    OpenAIModel,
    Request,
    ScriptedModel,
    SimulatedModel,
    effective_settings,
    model_from_string,
)
from engine.store import MemoryStore


def completion(content: str | None = "hello", **message: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "tiny",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def anthropic_message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer().start()
    yield srv
    srv.close()


@pytest.fixture
def openai_at(server: ProviderServer) -> str:
    return f"{server.url}/v1"


PICK = '{"call": "close", "args": {}}'
OPTIONS = {"close": "CLOSED", "escalate": "HUMAN"}


# -- the object ------------------------------------------------------------------------------


def test_settings_are_exported_where_users_look() -> None:
    assert engine.ModelSettings is ModelSettings
    assert "ModelSettings" in engine.__all__
    assert DECISION_MAX_TOKENS == 1024


def test_settings_keep_only_what_is_set() -> None:
    settings = ModelSettings(temperature=0, stop="END", extra={"top_k": 40})

    assert settings.set_fields() == {"temperature": 0.0, "stop": ["END"], "extra": {"top_k": 40}}
    assert settings.stop == ("END",)
    assert bool(settings)
    assert not ModelSettings()
    with pytest.raises(ValueError, match="frozen"):
        settings.temperature = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("values", "field", "says"),
    [
        ({"temperature": 2.5}, "temperature", "from 0 to 2"),
        ({"temperature": float("nan")}, "temperature", "from 0 to 2"),
        ({"temperature": "0.2"}, "temperature", "a number"),
        ({"top_p": 1.5}, "top_p", "from 0 to 1"),
        ({"max_tokens": 0}, "max_tokens", "from 1"),
        ({"max_tokens": 64.0}, "max_tokens", "an integer"),
        ({"max_tokens": True}, "max_tokens", "an integer"),
        ({"seed": 2**64}, "seed", "2\\*\\*63"),
        ({"stop": ""}, "stop", "no empty one"),
        ({"stop": [1]}, "stop", "list of strings"),
        ({"extra": {"temperature": 1}}, "extra", "set it as its own field"),
        ({"extra": {"x": float("inf")}}, "extra", "JSON values"),
        ({"top_k": 40}, "top_k", "Extra inputs"),
    ],
    ids=lambda v: str(v) if not isinstance(v, dict) else next(iter(v)),
)
def test_settings_refuse_bad_values_naming_the_field(
    values: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(ValueError, match=says) as caught:
        ModelSettings(**values)
    assert field in str(caught.value)


def test_merge_lays_later_levels_over_earlier_ones() -> None:
    model = ModelSettings(temperature=0.1, max_tokens=100, stop="M", extra={"a": 1, "b": 1})
    runtime = ModelSettings(temperature=0.5, seed=7, extra={"b": 2})
    call = ModelSettings(temperature=0.9, extra={"c": 3})

    merged = model.merge(runtime, None, call)

    assert merged.set_fields() == {
        "temperature": 0.9,  # the call's
        "max_tokens": 100,  # only the model set it
        "seed": 7,  # the runtime's
        "stop": ["M"],
        "extra": {"a": 1, "b": 2, "c": 3},  # merged key by key, later keys winning
    }
    assert ModelSettings().merge() == ModelSettings()


def test_effective_settings_put_a_requests_bound_under_every_level() -> None:
    request = Request(messages=[Message.of("user", "x")], max_tokens=DECISION_MAX_TOKENS)

    assert effective_settings(None, request).max_tokens == DECISION_MAX_TOKENS
    model = ModelSettings(max_tokens=64)
    assert effective_settings(model, request).max_tokens == 64
    asked = request.model_copy(update={"settings": ModelSettings(max_tokens=4096)})
    assert effective_settings(model, asked).max_tokens == 4096


# -- strings ---------------------------------------------------------------------------------


def test_parse_types_each_value_by_its_key() -> None:
    settings = ModelSettings.parse(
        [
            *("max_tokens=64", "temperature=0.2", "seed=-3", "stop=END", "stop=%26"),
            *("extra.top_k=40", "extra.mode=fast", "extra.a.b=[1]", 'extra={"z": null}'),
        ]
    )

    assert settings == ModelSettings(
        max_tokens=64,
        temperature=0.2,
        seed=-3,
        stop=("END", "&"),
        extra={"top_k": 40, "mode": "fast", "a": {"b": [1]}, "z": None},
    )
    assert ModelSettings.parse("max_tokens=8&top_p=1") == ModelSettings(max_tokens=8, top_p=1.0)
    assert ModelSettings.parse([]) == ModelSettings()


@pytest.mark.parametrize(
    ("item", "says"),
    [
        ("max_tokens=lots", "max_tokens: expected an integer >= 1, got 'lots'"),
        ("max_tokens=0", "max_tokens: must be an integer from 1"),
        ("temperature=hot", "temperature: expected a number from 0 to 2"),
        ("temperature=9", "temperature: must be from 0 to 2"),
        ("temprature=0", "unknown model setting 'temprature'; valid keys: temperature"),
        ("max_tokens", "'max_tokens' is not key=value"),
        ("extra.=1", "names no field"),
        ("extra=[1]", "must be a JSON object"),
        ("extra.seed=1", "extra: must not hold seed"),
    ],
)
def test_parse_errors_name_the_key_and_what_is_valid(item: str, says: str) -> None:
    with pytest.raises(ValueError, match="model setting") as caught:
        ModelSettings.parse([item])
    assert says in str(caught.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
settings_values = st.builds(
    ModelSettings,
    temperature=st.none() | st.floats(0, 2),
    top_p=st.none() | st.floats(0, 1),
    max_tokens=st.none() | st.integers(1, 2**40),
    seed=st.none() | st.integers(-(2**63), 2**63 - 1),
    stop=st.none() | st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=4),
    extra=st.none()
    | st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k not in ModelSettings.model_fields),
        json_values,
        min_size=1,
        max_size=3,
    ),
)


@given(settings_values)
def test_parse_reads_back_what_to_pairs_writes(settings: ModelSettings) -> None:
    assert ModelSettings.parse(settings.to_pairs()) == settings
    assert ModelSettings.parse("&".join(settings.to_pairs())) == settings


@given(st.lists(st.text(max_size=30), max_size=4))
def test_parse_of_any_text_is_settings_or_a_value_error(items: list[str]) -> None:
    error: ValueError | None = None
    try:
        parsed: ModelSettings | None = ModelSettings.parse(items)
    except ValueError as exc:
        error, parsed = exc, None
    if error is not None:
        assert "model setting" in str(error)
    else:
        assert isinstance(parsed, ModelSettings)


def test_a_model_string_carries_settings_after_a_question_mark() -> None:
    model = model_from_string("openai:tiny@http://127.0.0.1:8080/v1?max_tokens=64&temperature=0")

    assert isinstance(model, OpenAIModel)
    assert model.base_url == "http://127.0.0.1:8080/v1"
    assert model.settings == ModelSettings(max_tokens=64, temperature=0)
    claude = model_from_string("anthropic:claude-test?stop=END")
    assert claude.settings == ModelSettings(stop="END")  # type: ignore[attr-defined]
    simulated = model_from_string("simulated:seed=3?seed=9")
    assert isinstance(simulated, SimulatedModel)
    assert (simulated.seed, simulated.settings.seed) == (3, 9)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("openai:tiny?max_tokens=-1", "max_tokens: must be an integer from 1"),
        ("openai:tiny@http://h:1/v1?top_k=5", "unknown model setting 'top_k'"),
        ("simulated?temperature", "'temperature' is not key=value"),
    ],
)
def test_a_model_string_with_a_bad_setting_names_it(spec: str, says: str) -> None:
    with pytest.raises(ValueError, match="model setting") as caught:
        model_from_string(spec)
    assert spec in str(caught.value)
    assert says in str(caught.value)


def test_models_refuse_settings_of_another_type() -> None:
    with pytest.raises(TypeError, match="ModelSettings"):
        OpenAIModel("tiny", settings={"temperature": 0})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ModelSettings"):
        Runtime(ScriptedModel([]), settings={"temperature": 0})  # type: ignore[arg-type]


# -- each level reaches the provider ---------------------------------------------------------


async def test_every_level_reaches_an_openai_compatible_server(
    server: ProviderServer, openai_at: str
) -> None:
    model = OpenAIModel(
        "tiny",
        base_url=openai_at,
        settings=ModelSettings(temperature=0.1, stop=["END"], extra={"top_k": 40, "min_p": 0}),
    )
    runtime = Runtime(model, settings=ModelSettings(temperature=0.5, seed=7, extra={"min_p": 0.05}))
    server.queue(Reply(completion(PICK)), Reply(completion("fine")))

    async with model:
        picked = await decision.make(
            "Pick.", OPTIONS, runtime=runtime, settings=ModelSettings(top_p=0.9, max_tokens=64)
        )
        text = await runtime.exec("Say hi.", settings=ModelSettings(temperature=1.0))

    assert (picked, text) == ("CLOSED", "fine")
    pick, turn = (r.body for r in server.requests)
    assert {k: pick[k] for k in ("temperature", "top_p", "max_tokens", "seed", "stop")} == {
        "temperature": 0.5,
        "top_p": 0.9,
        "max_tokens": 64,
        "seed": 7,
        "stop": ["END"],
    }
    assert (pick["top_k"], pick["min_p"]) == (40, 0.05)  # extra: fields of the body itself
    assert turn["temperature"] == 1.0
    assert "max_tokens" not in turn  # a text turn gets the model's default length
    assert "top_p" not in turn


async def test_a_decision_is_bounded_by_default_and_any_level_lifts_the_bound(
    server: ProviderServer, openai_at: str
) -> None:
    plain = OpenAIModel("tiny", base_url=openai_at)
    roomy = OpenAIModel("tiny", base_url=openai_at, settings=ModelSettings(max_tokens=2000))
    server.queue(*[Reply(completion(PICK)) for _ in range(4)])

    async with plain, roomy:
        await decision.make("Pick.", OPTIONS, runtime=Runtime(plain))
        await decision.make("Pick.", OPTIONS, runtime=Runtime(roomy))
        lifted = Runtime(roomy, settings=ModelSettings(max_tokens=3000))
        await decision.make("Pick.", OPTIONS, runtime=lifted)
        await lifted.exec("Pick.", choices=OPTIONS, settings=ModelSettings(max_tokens=4000))

    assert [r.body["max_tokens"] for r in server.requests] == [
        DECISION_MAX_TOKENS,
        2000,
        3000,
        4000,
    ]


async def test_anthropic_sends_its_own_names_and_no_seed(server: ProviderServer) -> None:
    settings = ModelSettings(
        temperature=0.3, top_p=0.8, seed=5, stop=["END", "STOP"], extra={"top_k": 20}
    )
    model = AnthropicModel("claude-test", api_key="ak", base_url=server.url, settings=settings)
    server.queue(Reply(anthropic_message(PICK)), Reply(anthropic_message("hi")))

    async with model:
        runtime = Runtime(model, enforce="off")
        await decision.make("Pick.", OPTIONS, runtime=runtime)
        await runtime.exec("Say hi.", settings=ModelSettings(max_tokens=300))

    pick, turn = (r.body for r in server.requests)
    assert pick["temperature"] == 0.3
    assert pick["top_p"] == 0.8
    assert pick["stop_sequences"] == ["END", "STOP"]
    assert pick["top_k"] == 20
    assert pick["max_tokens"] == DECISION_MAX_TOKENS
    assert "seed" not in pick
    assert "stop" not in pick
    assert turn["max_tokens"] == 300


async def test_anthropic_max_tokens_argument_is_the_models_own_setting(
    server: ProviderServer,
) -> None:
    model = AnthropicModel("claude-test", api_key="ak", base_url=server.url, max_tokens=4096)
    server.queue(Reply(anthropic_message(PICK)), Reply(anthropic_message("hi")))

    async with model:
        runtime = Runtime(model, enforce="off")
        await decision.make("Pick.", OPTIONS, runtime=runtime)
        await runtime.exec("Say hi.")

    assert [r.body["max_tokens"] for r in server.requests] == [4096, 4096]
    assert AnthropicModel("claude-test").max_tokens == 1024  # unset: the API still needs one


async def test_an_assistant_turn_with_tool_calls_is_sent_with_empty_content(
    server: ProviderServer, openai_at: str
) -> None:
    async def lookup(order_id: int) -> str:
        """Look an order up."""
        return "shipped"

    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    call["function"]["arguments"] = json.dumps({"order_id": 7})
    server.queue(Reply(completion(None, tool_calls=[call])), Reply(completion("done")))

    async with OpenAIModel("tiny", base_url=openai_at) as model:
        assert await Runtime(model).exec("Check order 7.", tools=[lookup]) == "done"

    assistant = server.requests[1].body["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"][0]["function"]["name"] == "lookup"
    assert assistant["content"] == ""  # llama-cpp-python's server refuses null here


def test_scripted_and_simulated_models_accept_and_record_settings() -> None:
    scripted = ScriptedModel([PICK], settings=ModelSettings(seed=1))
    simulated = SimulatedModel(settings=ModelSettings(temperature=0))

    assert simulated.settings == ModelSettings(temperature=0)
    runtime = Runtime(scripted, settings=ModelSettings(temperature=0.4))

    import anyio

    anyio.run(lambda: decision.make("Pick.", OPTIONS, runtime=runtime))

    assert scripted.requests[0].settings == ModelSettings(temperature=0.4)
    assert scripted.settings_seen == [
        ModelSettings(seed=1, temperature=0.4, max_tokens=DECISION_MAX_TOKENS)
    ]


# -- journal and trace -----------------------------------------------------------------------


@agentic_function
async def two_steps(ticket: str, runtime: Any = None) -> Any:
    first = await decision.make(f"{ticket}: first.", OPTIONS, settings=ModelSettings(seed=3))
    second = await decision.make(f"{ticket}: second.", {"done": "DONE", "again": "AGAIN"})
    return [first, second]


def model_nodes(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in trace["nodes"] if n["kind"] in ("model_call", "repick")]


async def test_settings_are_journaled_and_traced_with_each_call() -> None:
    store = MemoryStore()
    model = ScriptedModel([PICK, '{"call": "done"}'], settings=ModelSettings(temperature=0))
    runtime = Runtime(model, settings=ModelSettings(max_tokens=256))
    run = await Engine(runtime=runtime, store=store).run(two_steps, "t", run_id="r")

    assert run.status == "completed", run.error
    trace = await store.load_trace("r")
    assert trace is not None
    traced = [n["data"]["settings"] for n in model_nodes(trace)]
    assert traced == [
        {"temperature": 0.0, "max_tokens": 256, "seed": 3},
        {"temperature": 0.0, "max_tokens": 256},
    ]
    journal = await store.load_journal("r")
    assert [r.data["settings"] for r in journal if r.kind == "model"] == traced


async def test_a_decision_without_settings_traces_its_default_bound() -> None:
    trace = Runtime(ScriptedModel([PICK, "hi"]))
    await decision.make("Pick.", OPTIONS, runtime=trace)
    await trace.exec("Say hi.")

    nodes = [n for n in trace.trace.to_dict()["nodes"] if n["kind"] == "model_call"]
    assert nodes[0]["data"]["settings"] == {"max_tokens": DECISION_MAX_TOKENS}
    assert "settings" not in nodes[1]["data"]  # a text turn with nothing set sends nothing


async def test_settings_are_not_part_of_the_fingerprint_a_resume_checks() -> None:
    # The first decision is journaled under max_tokens=64; the resume asks with other
    # settings, and the journaled pick still replays (a changed bound is no divergence).
    store = MemoryStore()
    first = Runtime(
        ScriptedModel([PICK, "no pick", "still none"]), settings=ModelSettings(max_tokens=64)
    )
    run = await Engine(runtime=first, store=store).run(two_steps, "t", run_id="r")
    assert run.status == "suspended"

    other = ScriptedModel(['{"call": "done"}'])
    later = Runtime(other, settings=ModelSettings(max_tokens=512, temperature=1))
    resumed = await Engine(runtime=later, store=store).resume("r")

    assert resumed.status == "completed", resumed.error
    assert resumed.result == ["CLOSED", "DONE"]
    assert len(other.requests) == 1  # only the failed decision was asked again
    assert other.settings_seen[0].max_tokens == 512


# -- the re-pick sends a long bad reply back cut ----------------------------------------------


async def test_a_repick_sends_a_long_bad_reply_back_as_its_head_and_tail() -> None:
    bad = "H" * 1_000 + "x" * 98_500 + "T" * 500
    model = ScriptedModel([bad, PICK])

    assert await decision.make("Pick.", OPTIONS, runtime=Runtime(model)) == "CLOSED"

    resent = model.requests[1].messages[-2]
    assert resent.role == "assistant"
    assert resent.text == "H" * 1_000 + "\n[... 98,500 characters cut ...]\n" + "T" * 500
    assert len(model.requests[1].messages[-2].text) < 1_600


async def test_a_repick_sends_a_short_bad_reply_back_whole() -> None:
    bad = "no pick here " * 100  # 1,300 characters: under the cut
    model = ScriptedModel([bad, PICK])

    await decision.make("Pick.", OPTIONS, runtime=Runtime(model))

    assert model.requests[1].messages[-2].text == bad


# -- the command line, through the official SDK -----------------------------------------------


@pytest.fixture
def clean_logging() -> Iterator[None]:
    """The CLI configures logging for the process; leave the next test the defaults."""
    yield
    structlog.reset_defaults()
    logging.getLogger("engine").setLevel(logging.NOTSET)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == "engine-structlog"]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)


@pytest.mark.usefixtures("clean_logging")
def test_cli_model_settings_reach_an_openai_compatible_server(
    server: ProviderServer, openai_at: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tickets = tmp_path / "tickets.jsonl"
    line = {"id": "T-1", "customer_id": "C-1", "subject": "Mug", "body": "It broke."}
    tickets.write_text(json.dumps({**line, "order_id": "A-1", "line_items": []}) + "\n")
    server.queue(*[Reply(completion("I am not sure.")) for _ in range(4)])

    result = CliRunner().invoke(
        app,
        [
            *("run", "ticket_routing", "--input", str(tickets), "--store", "memory://"),
            *("--model", f"openai:tiny@{openai_at}?temperature=0"),
            *("--model-setting", "max_tokens=64", "--model-setting", "extra.top_k=1"),
        ],
        env={"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None, "ENGINE_STORE": None},
    )

    assert result.exit_code == 1, result.output  # the ticket suspends: no pick came
    assert "suspended │    1" in result.stdout
    bodies = [r.body for r in server.requests]
    assert len(bodies) == 2  # the decision and its re-pick
    assert {(b["max_tokens"], b["temperature"], b["top_k"]) for b in bodies} == {(64, 0.0, 1)}


async def test_a_failed_decision_keeps_every_reply_whole() -> None:
    bad = "x" * 5_000
    model = ScriptedModel([bad, bad])

    with pytest.raises(decision.DecisionError) as caught:
        await decision.make("Pick.", OPTIONS, runtime=Runtime(model))

    assert caught.value.replies == [bad, bad]
    assert "characters cut" in model.requests[1].messages[-2].text


async def test_a_resume_on_another_model_traces_and_journals_that_models_settings() -> None:
    store = MemoryStore()
    first = ScriptedModel([PICK, "no pick", "none"], settings=ModelSettings(temperature=0.1))
    run = await Engine(model=first, store=store).run(two_steps, "t", run_id="r")
    assert run.status == "suspended"

    other = ScriptedModel(['{"call": "done"}'], settings=ModelSettings(seed=9))
    resumed = await Engine(model=first, store=store).resume("r", model=other)

    assert resumed.status == "completed", resumed.error
    trace = await store.load_trace("r")
    assert trace is not None
    live = model_nodes(trace)[-1]["data"]["settings"]
    assert live == {"seed": 9, "max_tokens": DECISION_MAX_TOKENS}  # the other model's own
    journal = await store.load_journal("r")
    assert [r.data["settings"] for r in journal if r.kind == "model"][-1] == live
