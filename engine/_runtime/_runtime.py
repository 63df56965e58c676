"""The runtime: model turns, decisions with re-picks, and the resolution of a pick.

:meth:`Runtime.exec` and :func:`engine.decision.make` share everything below the request:
the menu is built before any call, every model call goes through the ambient hooks (and the
transport retries inside them) as :mod:`._calls` makes it, a failed pick is asked again in the
same conversation (:mod:`._repick`), and the pick resolves into the result of the next step
(:mod:`._resolve`). With ``tools``, a turn is the native tool loop of :mod:`._tools`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from engine._base import Node, NodeKind, Trace, current_node
from engine._decision import DECISION_FINISH_INSTRUCTION, Menu, Pick, build_menu
from engine._retries import DecisionRetry, OnRetry
from engine._runtime._calls import ModelCalls, model_of
from engine._runtime._checks import check_retries, check_settings, decision_name
from engine._runtime._deadline import check_timeout, deadline
from engine._runtime._enforcement import Enforce, check_runtime_enforce, enforcement
from engine._runtime._hooks import current_hooks
from engine._runtime._human import approval_of, approved, needs_approval, question
from engine._runtime._questions import HumanAsk
from engine._runtime._repick import Asker, PlainAsk, plain_pick, usual_pick
from engine._runtime._requests import Content, blocks_of, build_request
from engine._runtime._resolve import resolve
from engine._runtime._tools import ToolLoop, Toolset, build_toolset, check_iterations
from engine.models import Model, ModelSettings, Request, TextBlock

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from tenacity import AsyncRetrying

    from engine._retries import DecisionPolicy

__all__ = ["Runtime", "check_timeout"]


class Runtime:
    """Run model turns and decisions against one model.

    Args:
        model: The model every call uses unless a call names another: a
            :class:`~engine.models.Model`, or a string such as ``"openai:gpt-4o-mini"``
            (see :func:`~engine.models.model_from_string`).
        system: An optional system prompt put before every request.
        trace: Where nodes go when no run or agentic function is active (a new
            :class:`~engine.Trace` by default, kept as :attr:`trace`).
        transport: The transport retry policy (layer 0), a tenacity ``AsyncRetrying``;
            :func:`engine.transport_policy` by default.
        enforce: Whether decisions ask the model to constrain the pick to the menu:
            ``"auto"`` where the model that answers says it can (its ``enforcement``
            attribute), ``"off"`` never (text parsing only), ``"on"`` always (a model that
            cannot is a ``ValueError`` at the decision). The form is the answering model's
            own (``OpenAIModel(enforce="json_schema" | "json_object" | "tool" | "auto")``),
            so a resume on another model asks it in its mode; a turn with tools is enforced
            only on its closing pick (a re-pick), so the model can call its tools first.
            Picks are parsed and validated the same way in every mode.
        decision: The decision policy (layer 2): after a ``DecisionError``, ask the whole
            decision again from scratch, optionally down a chain of fallback models (see
            :func:`engine.decision_policy`); ``None``: a failed decision raises at once.
        settings: :class:`~engine.models.ModelSettings` for every call (temperature,
            max_tokens, ...), laid over the model's own; a call's ``settings=`` is laid
            over these. Decisions are bounded to
            :data:`~engine.models.DECISION_MAX_TOKENS` reply tokens unless a level sets
            ``max_tokens``; text turns get the model's default.

    Raises:
        TypeError: ``system`` is neither a string nor ``None``.
    """

    def __init__(
        self,
        model: Model | str,
        *,
        system: str | None = None,
        trace: Trace | None = None,
        transport: AsyncRetrying | None = None,
        enforce: Enforce = "auto",
        decision: DecisionPolicy | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        check_settings(settings)
        check_runtime_enforce(enforce)
        if system is not None and not isinstance(system, str):
            raise TypeError(f"system must be a string (the system prompt) or None, got {system!r}")
        self.model = model_of(model)
        self.system = system
        self.trace = trace if trace is not None else Trace()
        self.transport = transport
        self.enforce = enforce
        self.decision = decision
        self.settings = settings

    def call_settings(self, settings: ModelSettings | None) -> ModelSettings | None:
        """Return this runtime's settings with a call's ``settings`` laid over them."""
        if settings is None:
            return self.settings
        check_settings(settings)
        return settings if self.settings is None else self.settings.merge(settings)

    def __repr__(self) -> str:
        return f"Runtime(model={getattr(self.model, 'name', self.model)!r})"

    async def aclose(self) -> None:
        """Close the model's connections (a provider model opens an HTTP client)."""
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def exec(
        self,
        content: Content,
        *,
        choices: object = None,
        tools: Sequence[object] | None = None,
        response_format: dict[str, Any] | None = None,
        model: Model | str | None = None,
        timeout_s: float | None = None,
        max_iterations: int = 20,
        max_retries: int = 1,
        context: Mapping[str, Any] | None = None,
        on_retry: OnRetry | None = None,
        name: str | None = None,
        settings: ModelSettings | None = None,
    ) -> Any:
        """Run one model turn; with ``choices``, close it with a pick and resolve it.

        With ``tools`` (functions, sync or async), the model may call them: each call is
        validated and run (several of one reply concurrently), and results and errors go
        back to it until it answers without a tool call; ``max_iterations`` caps the model
        calls of the turn. A function that is also one of ``choices`` is offered only as
        the option, never as a tool of the same turn. ``settings``
        (:class:`~engine.models.ModelSettings`) are laid over the runtime's for every call
        of this turn.

        Returns:
            The reply text without ``choices``; the resolved decision with them.

        Raises:
            TypeError: ``choices`` is not a dict or list, an option is malformed, or a tool
                is not a function.
            ValueError: ``choices`` is empty, names an option twice, ``max_retries`` < 0, or
                ``timeout_s`` is not a number > 0.
            DecisionError: No valid pick after every re-pick.
            MaxIterationsError: The model still called tools after ``max_iterations`` calls.
            DeadlineExceeded: ``timeout_s`` ran out.
        """
        check_retries(max_retries)
        check_iterations(max_iterations)
        if timeout_s is not None:
            check_timeout(timeout_s)
        if model is not None:
            model = model_of(model)
        blocks = blocks_of(content)
        asked = self.call_settings(settings)
        menu = build_menu(choices) if choices is not None else None
        toolset = build_toolset(tools, menu) if tools else None
        specs = toolset.specs if toolset is not None else None
        if menu is None:
            request = build_request(
                self.system, blocks, response_format=response_format, tools=specs, settings=asked
            )
            return await self._text_turn(
                request, model, timeout_s, on_retry, toolset, max_iterations, context
            )
        blocks.append(TextBlock.trusted(f"{DECISION_FINISH_INSTRUCTION}\n\n{menu.text}"))
        request = build_request(
            self.system,
            blocks,
            response_format=response_format,
            menu=menu,
            tools=specs,
            settings=asked,
        )
        return await self.decide(
            request,
            menu,
            model=model,
            timeout_s=timeout_s,
            max_retries=max_retries,
            context=context,
            on_retry=on_retry,
            tools=toolset,
            max_iterations=max_iterations,
            name=name,
        )

    async def decide(
        self,
        request: Request,
        menu: Menu,
        *,
        model: Model | str | None = None,
        timeout_s: float | None = None,
        max_retries: int = 1,
        context: Mapping[str, Any] | None = None,
        on_retry: OnRetry | None = None,
        tools: Toolset | None = None,
        max_iterations: int = 20,
        name: str | None = None,
        human: HumanAsk | None = None,
        on_reject: str | None = None,
    ) -> Any:
        """Ask ``request`` as a decision over ``menu`` and resolve the pick.

        ``model`` (a model or a model string) overrides the runtime's model for this call;
        ``name`` names the decision's trace node (``"decision"`` by default). With ``human``
        a person picks instead of the model (:mod:`._human`). A model's pick of an option
        declared with ``approve=`` waits for a person's approval; a rejected pick is asked
        again with the reason, or settles on the option ``on_reject`` names.
        """
        if max_retries != 1 or type(max_retries) is not int:  # True and 1.0 are not counts
            check_retries(max_retries)
        if timeout_s is not None:
            check_timeout(timeout_s)
        hooks = current_hooks.get()
        model = self.model if model is None else model_of(model)
        # How the pick is constrained is the answering model's (a resume's own): see
        # ._enforcement. The node says it; each attempt records what was sent.
        mode = enforcement(self.enforce, hooks.live_model(model), request)
        data: dict[str, Any] = {"options": menu.names, "enforcement": mode or "text"}
        if human is not None:
            data = {"options": menu.names, "by": "human"}
        node = self._open_decision(decision_name(name), data)
        # This is the hot path of every decision: tokens instead of context managers, and
        # hooks that only pass through are skipped.
        token = current_node.set(node)
        plain = human is None and mode is None and tools is None and self.decision is None
        try:
            try:
                if plain and timeout_s is None:
                    if hooks.passes_decision and hooks.passes_model_call:
                        pick = await usual_pick(
                            self, node, menu, model, request, max_retries, on_retry
                        )
                    else:
                        # Through ModelCalls; hooks that settle decisions (a durable run's
                        # journal them) get an ask that makes its first attempt without an
                        # asker too.
                        calls = ModelCalls(self.transport, hooks, on_retry)
                        ask = PlainAsk(self, calls, node, menu, model, max_retries)
                        pick = await (
                            ask(request)
                            if hooks.passes_decision
                            else hooks.decision(node, menu, request, ask)
                        )
                elif plain and hooks.passes_decision:  # the same under the one deadline
                    calls = ModelCalls(self.transport, hooks, on_retry)
                    with deadline(timeout_s, "decision"):
                        pick = await plain_pick(
                            self, calls, node, menu, model, max_retries, request
                        )
                else:
                    calls = ModelCalls(self.transport, hooks, on_retry)
                    pick = await self._pick(
                        _Asking(node, menu, request, calls, model, max_retries, on_retry),
                        human,
                        timeout_s,
                        tools,
                        max_iterations,
                        context,
                    )
                # Only a model's pick of a function option can need a person's approval.
                answer = (
                    await approval_of(hooks, node, menu, pick, request)
                    if human is None and needs_approval(pick)
                    else None
                )
            except BaseException as exc:
                node.fail(exc)
                raise
            if answer is None:
                node.close("ok", pick=pick.option.name, args=pick.args)
            else:
                pick, again = approved(node, menu, pick, answer, request, on_reject)
                if again is not None:  # rejected: the model is asked again, with the reason
                    return await self.decide(
                        again,
                        menu,
                        model=model,
                        timeout_s=timeout_s,
                        max_retries=max_retries,
                        context=context,
                        on_retry=on_retry,
                        tools=tools,
                        max_iterations=max_iterations,
                        name=name,
                        on_reject=on_reject,
                    )
            return await resolve(pick, self, context, hooks, node, on_retry)
        finally:
            current_node.reset(token)

    async def _pick(
        self,
        at: _Asking,
        human: HumanAsk | None,
        timeout_s: float | None,
        tools: Toolset | None,
        max_iterations: int,
        context: Mapping[str, Any] | None,
    ) -> Pick:
        """Ask for a pick through the hooks: a person's, or a model's by an asker."""
        calls, node, menu, request = at.calls, at.node, at.menu, at.request

        def asker(on_node: Node, on: Model, retries: int) -> Asker:
            ask = Asker(self, calls, on_node, menu, on, retries)
            if tools is not None:
                ask.use_tools(tools, max_iterations, context)
            return ask

        ask: Callable[[Request], Awaitable[Pick]] = (
            asker(node, at.model, at.max_retries)
            if self.decision is None
            else DecisionRetry(self.decision, node, at.model, asker, at.max_retries, at.on_retry)
        )
        hooks = calls.hooks
        if human is not None:
            asked = question(node, menu, "decision", human.prompt, deadline_s=human.deadline_s)
            return await hooks.human(node, menu, request, human, asked, ask)
        if timeout_s is None and hooks.passes_decision:
            return await ask(request)
        with deadline(timeout_s, "decision"):
            return await hooks.decision(node, menu, request, ask)

    def _open_decision(self, name: str, data: dict[str, Any]) -> Node:
        parent = current_node.get()
        if parent is not None:
            return parent.open_child("decision", name, data)
        return self.trace.open_root("decision", name, data)

    def open_node(self, kind: NodeKind, name: str, **data: Any) -> Node:
        """Open a trace node under the current node, or as a root of :attr:`trace`."""
        parent = current_node.get()
        if parent is not None:
            return parent.child(kind, name, **data)
        return self.trace.open(kind, name, parent=None, **data)

    async def _text_turn(
        self,
        request: Request,
        model: Model | None,
        timeout_s: float | None,
        on_retry: OnRetry | None = None,
        tools: Toolset | None = None,
        max_iterations: int = 20,
        context: Mapping[str, Any] | None = None,
    ) -> str:
        calls = ModelCalls(self.transport, current_hooks.get(), on_retry)
        model = model or self.model
        node = self.open_node("model_call", "turn")
        with deadline(timeout_s, "exec"):
            if tools is None:
                response = await calls(node, model, request)
            else:
                loop = ToolLoop(
                    self, tools, calls, model=model, max_iterations=max_iterations, context=context
                )
                response, _ = await loop.run(
                    node, request, lambda: self.open_node("model_call", "turn")
                )
        return response.text


class _Asking(NamedTuple):
    """What a decision asks with: its node, menu, request, calls, model and re-pick budget."""

    node: Node
    menu: Menu
    request: Request
    calls: ModelCalls
    model: Model
    max_retries: int
    on_retry: OnRetry | None
