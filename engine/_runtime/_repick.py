"""The conversational re-pick: ask for a pick until one validates (docs/decisions.md §8).

A failed pick is asked again in the same conversation: the original request, the failed
reply as the assistant's turn, then a user turn with the problem, the menu and the
instruction to answer with JSON only. A long failed reply goes back cut to its head and its
tail (:func:`cut_reply`): enough for the model to see what it wrote, never enough to overflow
its context. Every attempt is a model call through the decision's
:class:`~engine._runtime._calls.ModelCalls` (hooks, transport retries) and a trace node;
each re-pick fires ``on_retry``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine._base import REPLY_HEAD, BadRequestError, DecisionError, Node, RetryableModelError
from engine._decision import Failure, Menu, Pick, repick_text
from engine._retries import OnRetry, RetryEvent, note_retry
from engine._runtime._calls import ModelCalls
from engine._runtime._enforcement import enforcement, sent_mode
from engine._runtime._hooks import current_hooks
from engine._runtime._replies import (
    answered,
    checked_pick,
    first_call,
    first_pick,
    note_settings,
)
from engine._runtime._requests import message, pick_schema
from engine._runtime._tools import ToolLoop, Toolset
from engine.models import Message, Model, Request, Response

__all__ = [
    "REPLY_KEPT_HEAD",
    "REPLY_KEPT_TAIL",
    "Asker",
    "Attempt",
    "PlainAsk",
    "checked_pick",
    "cut_reply",
    "first_call",
    "first_pick",
    "plain_pick",
    "usual_pick",
]

#: Characters of a failed reply a re-pick sends back: its head and its tail (where a pick
#: would stand); what lies between is cut, and a marker says how much.
REPLY_KEPT_HEAD = 1_000
REPLY_KEPT_TAIL = 500


class Asker:
    """Ask for a pick, re-picking in the same conversation until one validates."""

    __slots__ = ("calls", "loop", "max_retries", "menu", "model", "node", "runtime")

    def __init__(
        self,
        runtime: object,
        calls: ModelCalls,
        node: Node,
        menu: Menu,
        model: Model,
        max_retries: int,
    ) -> None:
        self.runtime = runtime  # the runtime the decision runs on, ambient for tools it runs
        self.calls = calls
        self.node = node
        self.menu = menu
        self.model = model
        self.max_retries = max_retries
        self.loop: ToolLoop | None = None

    def use_tools(
        self, tools: Toolset, max_iterations: int, context: Mapping[str, Any] | None
    ) -> None:
        """Work each attempt as a tool loop: the model may call ``tools`` before it picks."""
        self.loop = ToolLoop(
            self.runtime,
            tools,
            self.calls,
            model=self.model,
            max_iterations=max_iterations,
            context=context,
        )

    async def __call__(self, request: Request, first: Attempt | None = None) -> Pick:
        """Ask until a pick validates; ``first``: the failed first attempt, already made."""
        node = self.node
        replies: list[str] = []
        heads: list[str] = []
        failures: list[str] = []
        data = node.data
        data["failures"] = failures
        data["replies"] = heads
        messages: list[Message] | None = None
        # Asked of the model that answers (a resume's own), in its own mode (._enforcement).
        live = self.calls.hooks.live_model(self.model)
        mode = enforcement(getattr(self.runtime, "enforce", "auto"), live, request)
        schema = pick_schema(self.menu) if mode is not None else None
        attempt = 0
        last = ""  # the last failure's message
        while True:
            # A turn with tools is enforced on its closing pick only: its first ask leaves
            # the model free to call its tools.
            asked = request
            if schema is not None and (attempt or self.loop is None):
                asked = request.model_copy(update={"enforce": schema})
            if first is not None:
                mnode, response, failed = first
                first = None
            else:
                failed = None
                try:
                    mnode, response, messages = await self._attempt(attempt, asked, messages)
                except BadRequestError as exc:
                    if not attempt:
                        raise
                    # The provider refused the re-pick (its context cannot hold the
                    # conversation, say): the decision failed as its last reply did, and the
                    # run is suspended, where a resume asks afresh with the original request.
                    data["attempts"] = attempt
                    raise DecisionError(
                        failures[-1],
                        f"{last}; asking again was refused by the provider ({exc})",
                        replies=replies,
                        attempts=attempt,
                        options=self.menu.names,
                    ) from None
            data["enforcement"] = sent_mode(response, mode if asked is not request else None)
            text = response.text
            replies.append(text)
            heads.append(text[:REPLY_HEAD])
            try:
                if failed is not None:
                    raise failed
                pick = checked_pick(response, self.menu)
            except Failure as failure:
                failures.append(failure.kind)
                last = failure.message
                mnode.data["failure"] = failure.kind
                if attempt == self.max_retries:
                    data["attempts"] = attempt + 1
                    raise DecisionError(
                        failure.kind,
                        failure.message,
                        replies=replies,
                        attempts=attempt + 1,
                        options=self.menu.names,
                    ) from None
                attempt += 1
                await self._retry_event(attempt, failure.kind, failure.message)
                if messages is None:
                    messages = list(request.messages)
                messages.append(message("assistant", cut_reply(text)))
                messages.append(
                    message("user", repick_text(failure.kind, failure.message, self.menu.text))
                )
                request = request.model_copy(update={"messages": list(messages)})
                continue
            data["attempts"] = attempt + 1
            return pick

    async def _attempt(
        self, attempt: int, asked: Request, messages: list[Message] | None
    ) -> tuple[Node, Response, list[Message] | None]:
        """Make one attempt's model call (or tool loop) under its own node."""
        if attempt:  # a re-pick is the parse layer's retry (layer 1)
            mnode = self.node.child("repick", "repick", attempt=attempt, layer="parse")
        else:
            mnode = self.node.open_child("model_call", "model_call", {"attempt": 0})
        if self.loop is None:
            return mnode, await self.calls(mnode, self.model, asked), messages
        # The turn's tool calls become part of the conversation a re-pick continues.
        response, messages = await self.loop.run(mnode, asked, self._loop_node)
        return mnode, response, messages

    def _loop_node(self) -> Node:
        return self.node.child("model_call", "model_call")

    async def _retry_event(self, attempt: int, kind: str, message: str) -> None:
        await note_retry(
            RetryEvent("parse", attempt, kind, message, self.node.key), self.calls.on_retry
        )


#: A first attempt already made and failed: its node, its reply and the failure.
Attempt = tuple[Node, Response, Failure]


async def plain_pick(
    runtime: object,
    calls: ModelCalls,
    node: Node,
    menu: Menu,
    model: Model,
    max_retries: int,
    request: Request,
) -> Pick:
    """Ask for a pick as :class:`Asker` does, for a text-mode decision with no tools.

    The first attempt is made here, without an asker; only a failed one builds the asker,
    which re-picks from it. The node holds what an asker leaves on it.
    """
    mnode = first_call(node)
    response = await calls(mnode, model, request)
    pick = first_pick(node, response, menu)
    if isinstance(pick, Failure):
        return await Asker(runtime, calls, node, menu, model, max_retries)(
            request, (mnode, response, pick)
        )
    return pick


async def usual_pick(
    runtime: Any,
    node: Node,
    menu: Menu,
    model: Model,
    request: Request,
    max_retries: int,
    on_retry: OnRetry | None,
) -> Pick:
    """The pick of the usual decision (hooks that pass decisions and model calls through).

    Its first attempt is made here, as :func:`plain_pick` and ``ModelCalls`` make it; its
    ``ModelCalls`` and an asker are made only when a failed call or pick needs them.
    """
    mnode = first_call(node)
    note_settings(mnode, model, request)
    try:
        response = await model.complete(request)
    except RetryableModelError as exc:
        calls = ModelCalls(runtime.transport, current_hooks.get(), on_retry)
        response = await calls.retried(mnode, model, request, exc)
    except BaseException as exc:
        mnode.fail(exc)
        raise
    answered(mnode, response)
    pick = first_pick(node, response, menu)
    if isinstance(pick, Failure):
        calls = ModelCalls(runtime.transport, current_hooks.get(), on_retry)
        pick = await Asker(runtime, calls, node, menu, model, max_retries)(
            request, (mnode, response, pick)
        )
    return pick


class PlainAsk(Asker):
    """A decision's live ask, for hooks that settle decisions (a durable run's): what
    :func:`plain_pick` asks, as a callable whose ``max_retries`` the hooks may change."""

    __slots__ = ()

    async def __call__(self, request: Request, first: Attempt | None = None) -> Pick:
        """Ask for a pick: the first attempt here, re-picks by an asker (``first`` unused)."""
        return await plain_pick(
            self.runtime, self.calls, self.node, self.menu, self.model, self.max_retries, request
        )


def cut_reply(text: str) -> str:
    """Return ``text`` as a re-pick sends it back: whole when short, else its head and tail.

    The marker between them says how many characters were cut.
    """
    kept = REPLY_KEPT_HEAD + REPLY_KEPT_TAIL
    # A marker costs about 40 characters: cutting fewer than that would only lengthen it.
    if len(text) <= kept + 64:
        return text
    cut = len(text) - kept
    return f"{text[:REPLY_KEPT_HEAD]}\n[... {cut:,} characters cut ...]\n{text[-REPLY_KEPT_TAIL:]}"
