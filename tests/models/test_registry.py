"""model_from_string: provider strings, local servers, the simulated model, and pass-through."""

from __future__ import annotations

import pytest

from engine import Engine, Runtime
from engine.models import (
    AnthropicModel,
    OpenAIModel,
    ScriptedModel,
    SimulatedModel,
    model_from_string,
)
from engine.store import MemoryStore


def test_registry_openai_model() -> None:
    model = model_from_string("openai:gpt-4o-mini")

    assert isinstance(model, OpenAIModel)
    assert model.model == "gpt-4o-mini"
    assert model.base_url is None


@pytest.mark.parametrize(
    ("spec", "name", "url"),
    [
        pytest.param(
            "openai:llama3.1:8b@http://localhost:11434/v1",
            "llama3.1:8b",
            "http://localhost:11434/v1",
            id="ollama-tag-with-colon",
        ),
        pytest.param(
            "openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1",
            "Qwen/Qwen2.5-7B-Instruct",
            "http://127.0.0.1:8000/v1",
            id="vllm",
        ),
    ],
)
def test_registry_openai_compatible_local_server(spec: str, name: str, url: str) -> None:
    model = model_from_string(spec)

    assert isinstance(model, OpenAIModel)
    assert model.model == name
    assert model.base_url == url
    assert model.enforcement is None  # support unknown on other servers: text picks


def test_registry_anthropic_model() -> None:
    model = model_from_string("anthropic:claude-sonnet-4-6")

    assert isinstance(model, AnthropicModel)
    assert model.model == "claude-sonnet-4-6"


@pytest.mark.parametrize(
    ("spec", "seed"),
    [
        pytest.param("simulated", 0, id="default"),
        pytest.param("simulated:42", 42, id="seeded"),
        pytest.param("simulated:seed=7,faults=0.3,latency=0.01-0.02", 7, id="options"),
    ],
)
def test_registry_simulated_model(spec: str, seed: int) -> None:
    model = model_from_string(spec)

    assert isinstance(model, SimulatedModel)
    assert model.seed == seed


def test_registry_model_object_passes_through() -> None:
    model = ScriptedModel(["x"])

    assert model_from_string(model) is model


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        pytest.param("gemini:pro", "unknown model 'gemini:pro'; valid forms: openai:", id="prefix"),
        pytest.param("gpt-4o", "unknown model", id="no-prefix"),
        pytest.param("openai:", "names no model", id="empty"),
        pytest.param("openai:llama@", "malformed", id="empty-url"),
        pytest.param("simulated:abc", "seed must be an integer", id="seed"),
    ],
)
def test_registry_bad_strings_raise_value_error(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        model_from_string(spec)


def test_registry_runtime_and_engine_take_strings() -> None:
    runtime = Runtime(model="openai:gpt-4o-mini")
    engine = Engine(model="simulated:3", store=MemoryStore())

    assert isinstance(runtime.model, OpenAIModel)
    assert isinstance(engine.runtime.model, SimulatedModel)


def test_registry_imports_need_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    assert model_from_string("openai:gpt-4o-mini").name == "gpt-4o-mini"
    assert model_from_string("anthropic:claude-haiku-4-5").name == "claude-haiku-4-5"
