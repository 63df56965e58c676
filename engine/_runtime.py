"""The runtime: model turns, decisions with re-picks, and the resolution of a pick.

:meth:`Runtime.exec` and :func:`engine.decision.make` share everything below the request:
the menu is built before any call, every model call goes through the ambient hooks, a
failed pick is asked again in the same conversation, and the pick resolves into the result
of the next step.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import anyio
import anyio.to_thread
from pydantic import TypeAdapter, ValidationError

from engine._context import current_node, current_runtime
from engine._decision._extract import find_pick
from engine._decision._menu import Menu, build_menu, choice_schema
from engine._decision._options import Option
from engine._decision._prompts import DECISION_FINISH_INSTRUCTION, repick_text
from engine._decision._validate import Failure, Pick, bind, validate
from engine._errors import REPLY_HEAD, DeadlineExceeded, DecisionError
from engine._hooks import Hooks, RetryEvent, current_hooks
from engine._trace import Node, NodeKind, Trace
from engine.models import ChoiceSpec, ImageBlock, Message, Model, Request, Response, TextBlock
from engine.models._types import ContentBlock, ToolSpec

__all__ = ["OnRetry", "Runtime", "build_request", "call_option", "choice_specs", "resolve"]

OnRetry = Callable[[RetryEvent], object]
Content = str | Sequence[ContentBlock]


class Runtime:
    """Run model turns and decisions against one model.

    Args:
        model: The model every call uses unless a call names another.
        system: An optional system prompt put before every request.
        trace: Where nodes go when no run or agentic function is active (a new
            :class:`~engine.Trace` by default, kept as :attr:`trace`).
    """

    def __init__(
        self,
        model: Model,
        *,
        system: str | None = None,
        trace: Trace | None = None,
    ) -> None:
        self.model = model
        self.system = system
        self.trace = trace if trace is not None else Trace()

    def __repr__(self) -> str:
        return f"Runtime(model={getattr(self.model, 'name', self.model)!r})"

    async def exec(
        self,
        content: Content,
        *,
        choices: object = None,
        tools: Sequence[object] | None = None,
        response_format: dict[str, Any] | None = None,
        model: Model | None = None,
        timeout_s: float | None = None,
        max_iterations: int = 20,
        max_retries: int = 1,
        context: Mapping[str, Any] | None = None,
        on_retry: OnRetry | None = None,
    ) -> Any:
        """Run one model turn; with ``choices``, close it with a pick and resolve it.

        Returns:
            The reply text without ``choices``; the resolved decision with them.

        Raises:
            TypeError: ``choices`` is not a dict or list, or an option is malformed.
            ValueError: ``choices`` is empty, names an option twice, or ``max_retries`` < 0.
            DecisionError: No valid pick after every re-pick.
            DeadlineExceeded: ``timeout_s`` ran out.
        """
        _check_retries(max_retries)
        if tools:
            raise NotImplementedError("native tools in exec are not available yet")
        blocks = _blocks(content)
        if choices is None:
            request = build_request(self.system, blocks, response_format=response_format)
            return await self._text_turn(request, model, timeout_s)
        menu = build_menu(choices)
        blocks.append(TextBlock(text=f"{DECISION_FINISH_INSTRUCTION}\n\n{menu.text}"))
        request = build_request(self.system, blocks, response_format=response_format, menu=menu)
        return await self.decide(
            request,
            menu,
            model=model,
            timeout_s=timeout_s,
            max_retries=max_retries,
            context=context,
            on_retry=on_retry,
        )

    async def decide(
        self,
        request: Request,
        menu: Menu,
        *,
        model: Model | None = None,
        timeout_s: float | None = None,
        max_retries: int = 1,
        context: Mapping[str, Any] | None = None,
        on_retry: OnRetry | None = None,
    ) -> Any:
        """Ask ``request`` as a decision over ``menu`` and resolve the pick."""
        if max_retries != 1:
            _check_retries(max_retries)
        hooks = current_hooks.get()
        node = self.open_node("decision", "decision", options=menu.names)
        # This is the hot path of every decision: tokens instead of context managers.
        token = current_node.set(node)
        try:
            ask = _Asker(self, hooks, node, menu, model or self.model, max_retries, on_retry)
            try:
                if timeout_s is None:
                    pick = await hooks.decision(node, menu, request, ask)
                else:
                    with _deadline(timeout_s, "decision"):
                        pick = await hooks.decision(node, menu, request, ask)
            except BaseException as exc:
                node.close("error", error=type(exc).__name__)
                raise
            node.close("ok", pick=pick.option.name, args=pick.args)
            return await resolve(pick, runtime=self, context=context, hooks=hooks, parent=node)
        finally:
            current_node.reset(token)

    def open_node(self, kind: NodeKind, name: str, **data: Any) -> Node:
        """Open a trace node under the current node, or as a root of :attr:`trace`."""
        parent = current_node.get()
        if parent is not None:
            return parent.child(kind, name, **data)
        return self.trace.open(kind, name, parent=None, **data)

    async def _text_turn(
        self, request: Request, model: Model | None, timeout_s: float | None
    ) -> str:
        hooks = current_hooks.get()
        node = self.open_node("model_call", "turn")
        with _deadline(timeout_s, "exec"):
            response = await self.call_model(node, model or self.model, request, hooks)
        return response.text

    async def call_model(
        self, node: Node, model: Model, request: Request, hooks: Hooks
    ) -> Response:
        """Make one model call through the hooks, recording usage and latency on ``node``."""
        try:
            response = await hooks.model_call(node, model, request, _complete)
        except BaseException as exc:
            node.close("error", error=type(exc).__name__)
            raise
        node.add_usage(response.usage.input_tokens, response.usage.output_tokens)
        node.close(
            "ok",
            model=response.model,
            finish_reason=response.finish_reason,
            reply=response.text[:REPLY_HEAD],
        )
        return response


async def _complete(model: Model, request: Request) -> Response:
    return await model.complete(request)


class _Asker:
    """Ask for a pick, re-picking in the same conversation until one validates."""

    __slots__ = ("hooks", "max_retries", "menu", "model", "node", "on_retry", "runtime")

    def __init__(
        self,
        runtime: Runtime,
        hooks: Hooks,
        node: Node,
        menu: Menu,
        model: Model,
        max_retries: int,
        on_retry: OnRetry | None,
    ) -> None:
        self.runtime = runtime
        self.hooks = hooks
        self.node = node
        self.menu = menu
        self.model = model
        self.max_retries = max_retries
        self.on_retry = on_retry

    async def __call__(self, request: Request) -> Pick:
        replies: list[str] = []
        heads: list[str] = []
        failures: list[str] = []
        self.node.data.update(failures=failures, replies=heads)
        messages = list(request.messages)
        for attempt in range(self.max_retries + 1):
            if attempt:
                request = request.model_copy(update={"messages": list(messages)})
            kind: NodeKind = "repick" if attempt else "model_call"
            mnode = self.node.child(kind, kind, attempt=attempt)
            response = await self.runtime.call_model(mnode, self.model, request, self.hooks)
            replies.append(response.text)
            heads.append(response.text[:REPLY_HEAD])
            try:
                pick = self._validate(response)
            except Failure as failure:
                failures.append(failure.kind)
                mnode.data["failure"] = failure.kind
                if attempt == self.max_retries:
                    self.node.data["attempts"] = attempt + 1
                    raise DecisionError(
                        failure.kind,
                        failure.message,
                        replies=replies,
                        attempts=attempt + 1,
                        options=self.menu.names,
                    ) from None
                await self._retry_event(attempt + 1, failure.kind, failure.message)
                messages.append(_message("assistant", response.text))
                messages.append(
                    _message("user", repick_text(failure.kind, failure.message, self.menu.text))
                )
                continue
            self.node.data["attempts"] = attempt + 1
            return pick
        raise AssertionError("unreachable")  # pragma: no cover

    def _validate(self, response: Response) -> Pick:
        if response.truncated:
            # The pick comes last, so a cut-off reply lost it: any pick still readable is one
            # the model only mentioned earlier, and must not run.
            raise Failure(
                "truncated",
                f"the reply was cut off (finish_reason={response.finish_reason!r}) before "
                "the pick was complete",
            )
        return validate(find_pick(response.text, self.menu.by_name), self.menu)

    async def _retry_event(self, attempt: int, kind: str, message: str) -> None:
        if self.on_retry is None:
            return
        result = self.on_retry(RetryEvent("parse", attempt, kind, message, self.node.key))
        if inspect.isawaitable(result):
            await result


async def resolve(
    pick: Pick,
    *,
    runtime: object = None,
    context: Mapping[str, Any] | None = None,
    hooks: Hooks | None = None,
    parent: Node | None = None,
) -> Any:
    """Resolve a validated pick into the result of the next step (DECISION-SPEC §9)."""
    option = pick.option
    if option.kind == "value":
        return option.handler
    if option.kind == "text" or (not option.fields and option.kind == "schema"):
        return option.name
    if option.kind == "schema":
        return {"decision": option.name, **pick.args}
    kwargs = bind(pick, runtime=runtime, context=context)
    fn = option.handler
    assert callable(fn)
    spec = option.function
    is_async = spec.is_async if spec is not None else False
    run = functools.partial(call_option, fn, kwargs, is_async)
    hooks = hooks or current_hooks.get()
    if parent is None:
        return await run()
    node = parent.child("step", option.name)
    node_token = current_node.set(node)
    runtime_token = current_runtime.set(runtime) if runtime is not None else None
    try:
        result = await hooks.step(node, fn, run, _returns(fn))
    except BaseException as exc:
        node.close("error", error=type(exc).__name__)
        raise
    finally:
        if runtime_token is not None:
            current_runtime.reset(runtime_token)
        current_node.reset(node_token)
    node.close("ok", result=result)
    return result


async def call_option(fn: Callable[..., Any], kwargs: dict[str, Any], is_async: bool) -> Any:
    """Call a picked function option with its bound arguments and return its result."""
    if is_async:
        return await fn(**kwargs)
    # A plain def may block; run it on a worker thread so other runs keep going.
    result = await anyio.to_thread.run_sync(functools.partial(fn, **kwargs))
    if inspect.isawaitable(result):
        result = await result
    return result


def build_request(
    system: str | None,
    blocks: list[ContentBlock],
    *,
    response_format: dict[str, Any] | None = None,
    menu: Menu | None = None,
    tools: list[ToolSpec] | None = None,
) -> Request:
    """Build the request of one turn: the system prompt, then one user message of ``blocks``.

    With a ``menu``, its options travel beside the text as the request's ``choices``.
    """
    # Validating constructors: in pydantic 2 they are faster than model_construct, and this
    # is the hot path of every decision.
    messages = [_message("system", system)] if system else []
    messages.append(Message(role="user", content=blocks))
    choices = choice_specs(menu) if menu is not None else None
    return Request(messages=messages, tools=tools, response_format=response_format, choices=choices)


def _message(role: Literal["system", "user", "assistant"], text: str) -> Message:
    return Message(role=role, content=[TextBlock(text=text)])


def choice_specs(menu: Menu) -> list[ChoiceSpec]:
    """Return the menu as the ``choices`` of a request (read-only: specs may be shared)."""
    specs: list[ChoiceSpec] | None = menu.memo.get("choices")
    if specs is None:
        specs = [_function_choice(o) if o.kind == "function" else _choice(o) for o in menu.options]
        menu.memo["choices"] = specs
    return specs


def _choice(option: Option) -> ChoiceSpec:
    # Not validated: validation would deep-copy the JSON Schema we just built.
    return ChoiceSpec.model_construct(**choice_schema(option))


# Function options are themselves cached by the option normaliser, so caching their specs
# retains nothing new; value options are rebuilt per call and would only churn a cache.
_function_choice = functools.lru_cache(maxsize=2048)(_choice)


def _returns(fn: object) -> object:
    try:
        return _cached_returns(fn)
    except TypeError:  # an unhashable callable
        return _return_annotation(fn)


def _return_annotation(fn: object) -> object:
    try:
        return inspect.signature(fn).return_annotation  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return inspect.Signature.empty


_cached_returns = functools.lru_cache(maxsize=2048)(_return_annotation)


def _blocks(content: Content) -> list[ContentBlock]:
    if isinstance(content, str):
        return [TextBlock(text=content)]
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        return [_block(b) for b in content]
    raise TypeError(f"content must be a string or a list of content blocks, got {content!r}")


_BLOCK: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)


def _block(block: object) -> ContentBlock:
    if isinstance(block, TextBlock | ImageBlock):
        return block
    if isinstance(block, str):
        return TextBlock(text=block)
    try:
        # The dict form ({"type": "text", "text": ...}) is validated, never passed on raw.
        return _BLOCK.validate_python(block)
    except ValidationError as exc:
        raise TypeError(
            "content blocks must be strings, TextBlock/ImageBlock or their dict form, "
            f"got {block!r}"
        ) from exc


def _check_retries(max_retries: int) -> None:
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ValueError(
            f"max_retries must be an integer >= 0 (0 disables re-picks), got {max_retries!r}"
        )


class _deadline:
    """One ``timeout_s`` budget over a block; the expiry becomes :class:`DeadlineExceeded`."""

    __slots__ = ("_scope", "timeout_s", "where")

    def __init__(self, timeout_s: float | None, where: str) -> None:
        self.timeout_s = timeout_s
        self.where = where
        self._scope: anyio.CancelScope | None = None

    def __enter__(self) -> None:
        if self.timeout_s is not None:
            self._scope = anyio.move_on_after(self.timeout_s)
            self._scope.__enter__()

    def __exit__(self, *exc: object) -> bool:
        if self._scope is None:
            return False
        swallowed = bool(self._scope.__exit__(*exc))  # type: ignore[arg-type]
        if self._scope.cancelled_caught:
            assert self.timeout_s is not None
            raise DeadlineExceeded(self.timeout_s, where=self.where) from None
        return swallowed
