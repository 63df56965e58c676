"""Logging set up in one place: console or JSON, context per task, secrets masked."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
import support_flows as sf

from engine import AuthenticationError, Engine, RateLimitError, Runtime, transport_policy
from engine._base._context import current_node, current_run_id
from engine._base._log import configure_logging
from engine._base._secrets import MASK, env_secrets, mask_secrets
from engine._base._trace import Trace
from engine.models import Request, Response
from engine.store import SQLiteStore

SECRET = "sk-test-0123456789abcdefghijklmnop"


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    logging.getLogger("engine").setLevel(logging.NOTSET)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == "engine-structlog"]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)


def json_lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_lines_off_a_terminal_with_the_task_context() -> None:
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    trace = Trace()
    node = trace.open("model_call", "model_call", parent=None, attempt=1)
    run_token = current_run_id.set("run-7")
    node_token = current_node.set(node)
    try:
        structlog.get_logger("engine").info("model_called", tokens=12)
    finally:
        current_node.reset(node_token)
        current_run_id.reset(run_token)
    [event] = json_lines(stream)
    assert event["event"] == "model_called"
    assert event["run_id"] == "run-7"
    assert event["node"] == node.key
    assert event["attempt"] == 1
    assert event["level"] == "info"
    assert event["tokens"] == 12


def test_console_format_when_asked() -> None:
    stream = io.StringIO()
    configure_logging("info", json=False, stream=stream)
    structlog.get_logger("engine").info("run_completed", run_id="r1")
    text = stream.getvalue()
    assert "run_completed" in text
    assert "run_id=r1" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_level_filters_and_opens_the_engine_gate() -> None:
    stream = io.StringIO()
    configure_logging("warning", stream=stream)
    log = structlog.get_logger("engine")
    log.info("quiet")
    log.warning("loud")
    assert [e["event"] for e in json_lines(stream)] == ["loud"]
    assert logging.getLogger("engine").level == logging.WARNING
    with pytest.raises(ValueError, match="log level 'verbose'"):
        configure_logging("verbose")


def test_secrets_never_reach_the_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdefgh-1234")
    stream = io.StringIO()
    configure_logging("debug", stream=stream)
    log = structlog.get_logger("engine")
    log.info("call", api_key="plain-key-value", headers={"Authorization": "Bearer xyz"})
    log.info("oops", message=f"request failed with key {SECRET}", items=[SECRET])
    log.info("token", detail="used tok-abcdefgh-1234 here", other="sk-proj-ABCDEFGHIJKLMNOPQRST")
    try:
        raise RuntimeError(f"bad key {SECRET}")
    except RuntimeError:
        log.exception("failed")
    text = stream.getvalue()
    for secret in (SECRET, "plain-key-value", "Bearer xyz", "tok-abcdefgh-1234", "ABCDEFGHIJKLMN"):
        assert secret not in text
    assert MASK in text
    events = json_lines(stream)
    assert events[0]["api_key"] == MASK
    assert events[0]["headers"] == {"Authorization": MASK}


def test_token_counts_are_not_masked() -> None:
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    structlog.get_logger("engine").info("usage", input_tokens=5, output_tokens=7, tokens=12)
    [event] = json_lines(stream)
    assert (event["input_tokens"], event["output_tokens"], event["tokens"]) == (5, 7, 12)


def test_env_secrets_picks_secret_looking_names_only() -> None:
    env = {"OPENAI_API_KEY": SECRET, "HOME": "/home/someone", "DB_PASSWORD": "hunter2hunter2"}
    assert env_secrets(env) == [SECRET, "hunter2hunter2"]
    assert env_secrets({"SHORT_TOKEN": "abc"}) == []


def test_standard_library_logs_share_the_format_and_the_masking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    logging.getLogger("some.driver").warning("connecting with %s to %s", SECRET, "db")
    logging.getLogger("some.driver").debug("too detailed")
    [event] = json_lines(stream)
    assert event["event"] == f"connecting with {MASK} to db"
    assert event["level"] == "warning"
    assert event["logger"] == "some.driver"
    configure_logging("info", stream=stream)  # configuring again replaces, never doubles
    assert sum(h.get_name() == "engine-structlog" for h in logging.getLogger().handlers) == 1


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://bob:s3cret@db:5432/runs", "postgresql://bob:***@db:5432/runs"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz", "Authorization: ***"),
        ("key sk-ant-abcdefghijklmnopqrstu", "key ***"),
        ("sqlite:///engine.db", "sqlite:///engine.db"),
    ],
    ids=["url-password", "bearer", "anthropic-key", "nothing-secret"],
)
def test_mask_secrets(text: str, shown: str) -> None:
    assert mask_secrets(text) == shown


class _EchoingProvider:
    """A provider whose errors quote the credentials they were sent (some gateways do)."""

    name = "echo"

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.calls = 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        if self.calls == 1:
            raise RateLimitError(f"rate limited for key Bearer {self.secret}", retry_after=0)
        raise AuthenticationError(f"invalid key {self.secret}")


async def test_secrets_in_provider_errors_never_reach_the_stored_run_or_journal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret = "plain-SECRET-value-987654321"
    monkeypatch.setenv("PROVIDER_API_KEY", secret)
    store = SQLiteStore(tmp_path / "runs.db")
    runtime = Runtime(_EchoingProvider(secret), transport=transport_policy(sleep=_no_sleep))
    async with Engine(runtime=runtime, store=store) as engine:
        run = await engine.run(sf.three_decisions, "t", run_id="s1")
        assert run.status == "failed"
        stored = await engine.get("s1")
        journal = await store.load_journal("s1")
        trace = await engine.trace("s1")
    assert stored is not None
    assert stored.error is not None
    assert "invalid key" in stored.error.message
    written = stored.model_dump_json() + json.dumps([r.data for r in journal]) + json.dumps(trace)
    assert secret not in written
    assert MASK in stored.error.message
    assert any(r.kind == "retry" and MASK in r.data["message"] for r in journal)


async def _no_sleep(seconds: float) -> None:
    return None


def test_a_key_given_to_a_model_is_masked_like_an_environment_key() -> None:
    from engine.models import AnthropicModel, OpenAIModel

    OpenAIModel("gpt-4o-mini", api_key="plain-openai-value-4242")
    AnthropicModel("claude-sonnet-4-6", api_key="plain-anthropic-value-4242")

    text = mask_secrets("401: key plain-openai-value-4242 / plain-anthropic-value-4242 refused")

    assert "plain-" not in text
    assert text == f"401: key {MASK} / {MASK} refused"


def test_a_process_that_logs_nothing_never_loads_structlog() -> None:
    import subprocess
    import sys

    code = (
        "import sys, engine, engine.store, engine.models\n"
        "from engine import Engine\n"
        "print('structlog' in sys.modules, 'rich' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
