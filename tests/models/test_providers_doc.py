"""The snippets of docs/providers.md run as written: offline ones as they are, provider ones
against the local server, through the environment variables a user would set."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_server import ProviderServer, Reply

DOC = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
_SNIPPET = re.compile(r"<!-- snippet: (\w+) -->\n```python\n(.*?)```", re.DOTALL)
SNIPPETS = dict(_SNIPPET.findall(DOC.read_text(encoding="utf-8")))


def run_snippet(name: str, capsys: pytest.CaptureFixture[str], code: str | None = None) -> str:
    source = code if code is not None else SNIPPETS[name]
    exec(compile(source, f"{DOC}:{name}", "exec"), {"__name__": f"snippet_{name}"})
    return capsys.readouterr().out


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    srv = ProviderServer().start()
    yield srv
    srv.close()


def openai_reply(content: str) -> Reply:
    return Reply(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def test_providers_doc_has_every_snippet() -> None:
    assert set(SNIPPETS) == {"openai", "local", "anthropic", "tools", "simulated"}


def test_providers_doc_openai_snippet(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-doc")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    pick = {"call": "refund", "args": {"amount": 40, "reason": "broken on arrival"}}
    server.queue(openai_reply(f"A refund fits.\n\n{json.dumps(pick)}"))

    out = run_snippet("openai", capsys)

    assert out.strip() == "refunded 40.0: broken on arrival"
    assert server.requests[0].body["model"] == "gpt-4o-mini"


def test_providers_doc_local_server_snippet(
    server: ProviderServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.queue(openai_reply(json.dumps({"pick": {"call": "delivery", "args": {}}})))
    code = SNIPPETS["local"].replace("http://localhost:11434/v1", f"{server.url}/v1")

    out = run_snippet("local", capsys, code)

    assert out.strip() == "delivery"
    body = server.requests[0].body
    assert body["model"] == "llama3.1:8b"
    assert body["response_format"]["json_schema"]["strict"] is True


def test_providers_doc_anthropic_snippet(
    server: ProviderServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ak-doc")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    pick = {"pick": {"call": "billing", "args": {}}}
    server.queue(
        Reply(
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "tool_use", "id": "t", "name": "pick", "input": pick}],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )
    )

    out = run_snippet("anthropic", capsys)

    assert out.strip() == "billing"
    assert server.requests[0].body["tool_choice"] == {"type": "tool", "name": "pick"}


def test_providers_doc_tools_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_snippet("tools", capsys)

    assert "tool order_status(" in out or "tool customer_tier(" in out
    assert "decision [refund, wait] → " in out


def test_providers_doc_simulated_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    first = run_snippet("simulated", capsys)
    second = run_snippet("simulated", capsys)

    assert first == second  # same seed, same requests, same outcomes
    assert "refund" in first
