"""How the decision, step and run layers carry out their policies.

The decision and step layers keep the first try out of tenacity (nearly every decision and
step succeeds at once, and pays only a ``try``), and enter the policy on a failure, counting
that failure as the policy's first attempt. Every further attempt is a ``retry`` node (with
its ``layer``) in the trace, under which everything the attempt does gets keys of its own,
so a replay finds each attempt's journal records again; and every attempt is reported to
the run's retry ledger and to ``on_retry`` before it is made. The run layer resumes a
stopped run while its policy says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from engine._base import DecisionError, log, using_node
from engine._retries._events import OnRetry, RetryEvent
from engine._retries._ledger import note_retry

if TYPE_CHECKING:
    from tenacity import AsyncRetrying

    from engine._base import Node
    from engine._decision import Pick
    from engine._retries._policies import DecisionPolicy
    from engine.models import Model, Request
    from engine.store import Run

__all__ = ["DecisionRetry", "retry_run", "retry_step"]

Asker = Callable[["Request"], Awaitable["Pick"]]
Resume = Callable[["Run", RetryEvent], Awaitable["Run"]]
MakeAsker = Callable[["Node", "Model", int], Asker]

_MESSAGE_HEAD = 300


class DecisionRetry:
    """Layer 2: ask a decision again from scratch after a ``DecisionError``.

    Each attempt sends the original request with a fresh re-pick budget of ``max_retries``,
    on the policy's model for that attempt (the fallback chain).
    """

    __slots__ = ("make", "max_retries", "model", "node", "on_retry", "policy")

    def __init__(
        self,
        policy: DecisionPolicy,
        node: Node,
        model: Model,
        make: MakeAsker,
        max_retries: int,
        on_retry: OnRetry | None,
    ) -> None:
        self.policy = policy
        self.node = node
        self.model = model
        self.make = make
        self.max_retries = max_retries
        self.on_retry = on_retry

    async def __call__(self, request: Request) -> Pick:
        """Return a valid pick, asking again under the policy after each failed ask."""
        try:
            return await self.make(self.node, self.model, self.max_retries)(request)
        except DecisionError as exc:
            first = exc
        last = first
        async for attempt in self.policy.retrying.copy():
            with attempt:
                number = attempt.retry_state.attempt_number
                if number == 1:
                    raise first  # the policy counts the first ask as its first attempt
                try:
                    return await self._attempt(request, number, last)
                except DecisionError as exc:
                    last = exc
                    raise
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True

    async def _attempt(self, request: Request, number: int, last: DecisionError) -> Pick:
        model = self.policy.model_for(number, self.model)
        message = last.message[:_MESSAGE_HEAD]
        await note_retry(
            RetryEvent("decision", number, last.kind, message, self.node.key), self.on_retry
        )
        node = self.node.child(
            "retry",
            "decision",
            layer="decision",
            attempt=number,
            after=last.kind,
            model=getattr(model, "name", None),
        )
        try:
            pick = await self.make(node, model, self.max_retries)(request)
        except BaseException as exc:
            node.fail(exc)
            raise
        node.close("ok", pick=pick.option.name)
        self.node.data["retried"] = number
        return pick


async def retry_step(
    policy: AsyncRetrying,
    node: Node,
    run: Callable[[], Awaitable[Any]],
    on_retry: OnRetry | None = None,
) -> Any:
    """Layer 3: run a retryable step, again under ``policy`` after it raised.

    Each further run happens under a ``retry`` node, so what the step opens (frames,
    decisions, model calls) gets keys of its own per attempt.
    """
    try:
        return await run()
    except Exception as exc:
        first = exc
    last: BaseException = first
    async for attempt in policy.copy():
        with attempt:
            number = attempt.retry_state.attempt_number
            if number == 1:
                raise first
            kind = type(last).__name__
            await note_retry(
                RetryEvent("step", number, kind, str(last)[:_MESSAGE_HEAD], node.key), on_retry
            )
            child = node.child("retry", "step", layer="step", attempt=number, after=kind)
            try:
                with using_node(child):
                    result = await run()
            except BaseException as exc:
                last = exc
                child.fail(exc)
                raise
            child.close("ok")
            return result
    raise AssertionError("unreachable")  # pragma: no cover - reraise=True


async def retry_run(policy: AsyncRetrying, run: Run, resume: Resume) -> Run:
    """Layer 4: resume a stopped run while ``policy`` says its outcome is worth another try.

    ``resume(run, event)`` resumes the run as the attempt ``event`` describes; the
    executor counts the attempt in the run's ledger and trace. Returns the last run.
    """
    async for attempt in policy.copy():
        with attempt:
            number = attempt.retry_state.attempt_number
            if number > 1:
                error = run.error
                kind = error.kind if error is not None else run.status
                message = error.message[:_MESSAGE_HEAD] if error is not None else ""
                log.info("run_auto_resumed", run_id=run.run_id, attempt=number, after=kind)
                run = await resume(run, RetryEvent("run", number, kind, message, run.run_id))
        if not attempt.retry_state.outcome or not attempt.retry_state.outcome.failed:
            attempt.retry_state.set_result(run)
    return run
