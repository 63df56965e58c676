"""Layer 0: transport retries with backoff, Retry-After, the deadline, and an injected sleep."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from tenacity import AsyncRetrying

from engine import (
    AuthenticationError,
    BadRequestError,
    ModelTimeoutError,
    Node,
    ProviderUnavailableError,
    RateLimitError,
    RetryEvent,
    Runtime,
    Trace,
    decision,
    transport_policy,
)
from engine._retries import OnRetry, Transport
from engine.models import Message, Model, Request, Response, ScriptedModel


async def complete(
    model: Model,
    request: Request,
    *,
    policy: AsyncRetrying | None = None,
    node: Node | None = None,
    on_retry: OnRetry | None = None,
) -> Response:
    """Answer ``request`` with ``model`` through layer 0 alone, retrying under ``policy``."""
    return await Transport(policy, node, on_retry)(model, request)


class Flaky:
    """A model that raises the given errors in order, then answers ``ok``."""

    name = "flaky"

    def __init__(self, errors: Sequence[Exception], reply: str = "ok") -> None:
        self.errors = list(errors)
        self.reply = reply
        self.calls = 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return Response(text=self.reply, finish_reason="stop")


class Sleeps:
    """An injected sleep that records each wait and never waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await anyio.lowlevel.checkpoint()


REQUEST = Request(messages=[Message.of("user", "hi")])


def unavailable() -> ProviderUnavailableError:
    return ProviderUnavailableError("503", provider="test")


async def test_transport_success_first_time_never_sleeps() -> None:
    sleeps = Sleeps()
    model = Flaky([])

    response = await complete(model, REQUEST, policy=transport_policy(sleep=sleeps))

    assert response.text == "ok"
    assert sleeps.waits == []


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(RateLimitError("429", provider="t"), id="rate-limit"),
        pytest.param(ProviderUnavailableError("500", provider="t"), id="server-error"),
        pytest.param(ModelTimeoutError("timeout", provider="t"), id="timeout"),
    ],
)
async def test_transport_retries_retryable_errors(error: Exception) -> None:
    sleeps = Sleeps()
    model = Flaky([error, error])

    response = await complete(model, REQUEST, policy=transport_policy(sleep=sleeps))

    assert response.text == "ok"
    assert model.calls == 3
    assert len(sleeps.waits) == 2


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(BadRequestError("400", provider="t"), id="bad-request"),
        pytest.param(AuthenticationError("401", provider="t"), id="auth"),
    ],
)
async def test_transport_never_retries_other_errors(error: Exception) -> None:
    sleeps = Sleeps()
    model = Flaky([error])

    with pytest.raises(type(error)):
        await complete(model, REQUEST, policy=transport_policy(sleep=sleeps))

    assert model.calls == 1
    assert sleeps.waits == []


async def test_transport_honours_retry_after() -> None:
    sleeps = Sleeps()
    model = Flaky([RateLimitError("429", retry_after=7.5, provider="t")])

    await complete(model, REQUEST, policy=transport_policy(sleep=sleeps, initial=0.1))

    assert sleeps.waits == [7.5]


async def test_transport_backoff_grows_with_jitter_and_is_capped() -> None:
    sleeps = Sleeps()
    model = Flaky([unavailable() for _ in range(6)])
    policy = transport_policy(attempts=7, sleep=sleeps, initial=1.0, max_wait=5.0)

    await complete(model, REQUEST, policy=policy)

    assert len(sleeps.waits) == 6
    assert 1.0 <= sleeps.waits[0] <= 2.0
    assert 2.0 <= sleeps.waits[1] <= 3.0
    assert all(w <= 5.0 for w in sleeps.waits)


async def test_transport_gives_up_after_its_attempts_with_the_last_error() -> None:
    sleeps = Sleeps()
    errors = [ProviderUnavailableError(f"503 #{i}", provider="t") for i in range(5)]
    model = Flaky(errors)

    with pytest.raises(ProviderUnavailableError, match="503 #2"):
        await complete(model, REQUEST, policy=transport_policy(attempts=3, sleep=sleeps))

    assert model.calls == 3
    assert len(sleeps.waits) == 2


async def test_transport_never_sleeps_past_the_deadline() -> None:
    sleeps = Sleeps()
    model = Flaky([RateLimitError("429", retry_after=30.0, provider="t")])

    with anyio.CancelScope(deadline=anyio.current_time() + 5.0):
        with pytest.raises(RateLimitError):
            await complete(model, REQUEST, policy=transport_policy(sleep=sleeps))

    assert sleeps.waits == []
    assert model.calls == 1


async def test_transport_retries_while_the_deadline_leaves_room() -> None:
    sleeps = Sleeps()
    model = Flaky([RateLimitError("429", retry_after=1.0, provider="t")])

    with anyio.CancelScope(deadline=anyio.current_time() + 5.0):
        response = await complete(model, REQUEST, policy=transport_policy(sleep=sleeps))

    assert response.text == "ok"
    assert sleeps.waits == [pytest.approx(1.0, abs=0.6)]


async def test_transport_max_delay_bounds_the_total_wait() -> None:
    sleeps = Sleeps()
    model = Flaky([RateLimitError("429", retry_after=50.0, provider="t")])

    with pytest.raises(RateLimitError):
        await complete(model, REQUEST, policy=transport_policy(sleep=sleeps, max_delay_s=10.0))

    assert sleeps.waits == []


async def test_transport_each_retry_is_a_trace_node_and_an_event() -> None:
    sleeps = Sleeps()
    trace = Trace()
    node = trace.open("model_call", "turn", parent=None)
    events: list[RetryEvent] = []
    model = Flaky([RateLimitError("429", retry_after=1.0, provider="t"), unavailable()])

    await complete(
        model, REQUEST, policy=transport_policy(sleep=sleeps), node=node, on_retry=events.append
    )

    retries = trace.find("retry")
    assert [(r.data["layer"], r.data["attempt"], r.status) for r in retries] == [
        ("transport", 2, "error"),
        ("transport", 3, "ok"),
    ]
    assert [r.data["after"] for r in retries] == ["RateLimitError", "ProviderUnavailableError"]
    assert [(e.layer, e.attempt, e.kind) for e in events] == [
        ("transport", 2, "RateLimitError"),
        ("transport", 3, "ProviderUnavailableError"),
    ]
    assert all(e.key == node.key for e in events)


async def test_transport_async_on_retry_is_awaited() -> None:
    seen: list[int] = []

    async def on_retry(event: RetryEvent) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(event.attempt)

    model = Flaky([unavailable()])
    await complete(model, REQUEST, policy=transport_policy(sleep=Sleeps()), on_retry=on_retry)

    assert seen == [2]


def test_transport_policy_needs_one_attempt() -> None:
    with pytest.raises(ValueError, match="attempts"):
        transport_policy(attempts=0)


# -- through the runtime ----------------------------------------------------------------------


async def test_transport_runtime_retries_a_decision_call_under_its_policy() -> None:
    sleeps = Sleeps()
    inner = ScriptedModel(['{"call": "yes"}'])
    model = _FailFirst(inner, [RateLimitError("429", retry_after=2.0, provider="t")])
    events: list[RetryEvent] = []
    runtime = Runtime(model=model, transport=transport_policy(sleep=sleeps))

    result = await decision.make("Pick.", ["yes", "no"], runtime=runtime, on_retry=events.append)

    assert result == "yes"
    assert sleeps.waits == [pytest.approx(2.0, abs=0.6)]
    assert [(e.layer, e.attempt) for e in events] == [("transport", 2)]
    [call] = runtime.trace.find("model_call")
    assert [n.data["layer"] for n in runtime.trace.children(call)] == ["transport"]


async def test_transport_runtime_exec_text_turn_retries() -> None:
    sleeps = Sleeps()
    model = _FailFirst(ScriptedModel(["done"]), [unavailable(), unavailable()])
    runtime = Runtime(model=model, transport=transport_policy(sleep=sleeps))

    assert await runtime.exec("Work.") == "done"
    assert len(sleeps.waits) == 2


async def test_transport_runtime_deadline_cuts_retries_short() -> None:
    sleeps = Sleeps()
    model = _FailFirst(
        ScriptedModel(["done"]), [RateLimitError("429", retry_after=60.0, provider="t")]
    )
    runtime = Runtime(model=model, transport=transport_policy(sleep=sleeps))

    with pytest.raises(RateLimitError):
        await runtime.exec("Work.", timeout_s=5.0)

    assert sleeps.waits == []


class _FailFirst:
    """Raise ``errors`` on the first calls, then defer to ``inner``."""

    def __init__(self, inner: ScriptedModel, errors: list[Exception]) -> None:
        self.inner = inner
        self.errors = errors
        self.name = "fail-first"

    async def complete(self, request: Request) -> Response:
        if self.errors:
            raise self.errors.pop(0)
        return await self.inner.complete(request)
