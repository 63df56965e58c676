"""The native tool loop of ``runtime.exec(..., tools=[...])``.

Tools are agentic functions or plain functions (sync or async). Their JSON Schemas come
from the same parameter specs the menu uses, and the model's tool calls are validated by the
decision core's rules, then run (several calls of one reply run concurrently). Results, and
errors, go back to the model as tool messages until it answers without calling a tool, or
``max_iterations`` model calls are spent.

A function offered as a decision option is never also a tool of that turn: it is withheld
from the tools, so one function cannot run both as a tool call and as the pick.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from pydantic_core import to_json

from engine._base import MaxIterationsError, current_node, current_runtime
from engine._decision import (
    Failure,
    Menu,
    RawPick,
    bind,
    build_menu,
    plain_args,
    tool_parameters,
    validate,
)
from engine._runtime._calls import ModelCalls
from engine._runtime._resolve import call_option
from engine.models import Message, Request, Response, TextBlock, ToolCall, ToolSpec

if TYPE_CHECKING:
    from engine._base import Node

__all__ = ["ToolLoop", "Toolset", "build_toolset", "check_iterations"]

_RESULT_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class Toolset:
    """The tools of one turn: their menu (for validation) and their specs (for the model)."""

    menu: Menu
    specs: list[ToolSpec]
    withheld: tuple[str, ...] = ()


def check_iterations(max_iterations: int) -> None:
    """Refuse a ``max_iterations`` that is not a whole number of model calls >= 1."""
    if type(max_iterations) is not int or max_iterations < 1:
        raise ValueError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")


def build_toolset(tools: Sequence[object], options: Menu | None = None) -> Toolset | None:
    """Normalise ``tools``; with a decision's ``options``, withhold the option functions.

    Returns:
        The toolset, or ``None`` when no tool is left to offer.

    Raises:
        TypeError: ``tools`` is not a list, or a tool is not a function (or a
            ``(function, description)`` pair).
        ValueError: Two tools share a name, or a tool and a different option share one.
    """
    if (
        callable(tools)
        or isinstance(tools, str | bytes | Mapping)
        or not isinstance(tools, Iterable)
    ):
        raise TypeError(f"tools must be a list of functions, got {tools!r}")
    items = list(tools)
    for index, item in enumerate(items):
        head = item[0] if isinstance(item, tuple) and item else item
        if not callable(head):
            raise TypeError(
                f"tools[{index}] must be a function or (function, description), got {item!r}"
            )
    menu = build_menu(items)
    # A function offered as an option is never also a tool, whatever name either gives it.
    picked = {id(o.handler) for o in options.options} if options is not None else set()
    withheld: list[str] = []
    kept = []
    for option in menu.options:
        same = options.by_name.get(option.name) if options is not None else None
        if id(option.handler) in picked:
            withheld.append(option.name)
        elif same is None:
            kept.append(option)
        else:
            raise ValueError(
                f"tool {option.name!r} and the option {option.name!r} are different functions "
                "with one name; rename one of them"
            )
    if not kept:
        return None
    if withheld:
        menu = Menu(tuple(kept), "", {o.name: o for o in kept})
    specs = [
        ToolSpec(name=o.name, description=o.description or "", parameters=tool_parameters(o))
        for o in menu.options
    ]
    return Toolset(menu, specs, tuple(withheld))


class ToolLoop:
    """Run model calls and tool calls until the model answers without calling a tool.

    One loop serves one turn, and its budget is shared by every attempt of a decision: a
    reply that asks for tools after ``max_iterations`` model calls of the turn raises
    :class:`~engine.MaxIterationsError` instead of running them.
    """

    __slots__ = (
        "calls",
        "context",
        "left",
        "max_iterations",
        "model",
        "runtime",
        "tools",
    )

    def __init__(
        self,
        runtime: object,
        tools: Toolset,
        calls: ModelCalls,
        *,
        model: Any,
        max_iterations: int,
        context: Mapping[str, Any] | None,
    ) -> None:
        check_iterations(max_iterations)
        self.runtime = runtime
        self.tools = tools
        self.model = model
        self.calls = calls
        self.max_iterations = max_iterations
        self.left = max_iterations
        self.context = context

    async def run(
        self, node: Node, request: Request, next_node: Callable[[], Node]
    ) -> tuple[Response, list[Message]]:
        """Answer ``request`` (its first call on ``node``), running the tools it asks for.

        ``next_node`` opens the node of each further model call of the loop.

        Returns:
            The final reply, and the conversation it answers (the request's messages plus
            every tool call and result of the loop).

        Raises:
            MaxIterationsError: The model still called tools when the budget ran out.
        """
        messages = list(request.messages)
        while True:
            self.left -= 1
            asked = request.model_copy(update={"messages": list(messages)})
            response = await self.calls(node, self.model, asked)
            if not response.tool_calls:
                return response, messages
            if self.left <= 0:
                raise MaxIterationsError(self.max_iterations)
            messages.append(
                Message(
                    role="assistant",
                    content=[TextBlock(text=response.text)] if response.text else [],
                    tool_calls=response.tool_calls,
                )
            )
            messages.extend(await self._run_tools(node, response.tool_calls))
            node = next_node()

    async def _run_tools(self, node: Node, calls: list[ToolCall]) -> list[Message]:
        # Nodes are opened in the model's order before anything runs, so their keys (and the
        # journal records under them) never depend on which tool finishes first.
        nodes = [node.child("tool_call", call.name, id=call.id) for call in calls]
        results: list[str] = [""] * len(calls)

        async def run_one(index: int) -> None:
            results[index] = await self._run_tool(nodes[index], calls[index])

        async with anyio.create_task_group() as group:
            for index in range(len(calls)):
                group.start_soon(run_one, index)
        return [
            Message(
                role="tool",
                content=[TextBlock(text=text)],
                tool_call_id=call.id,
                name=call.name,
            )
            for call, text in zip(calls, results, strict=True)
        ]

    async def _run_tool(self, node: Node, call: ToolCall) -> str:
        try:
            args = plain_args(call.arguments)  # a JSON string holding the object, as in a pick
            pick = validate(RawPick(call.name, args, True, {}), self.tools.menu)
        except Failure as failure:
            node.close("error", failure=failure.kind)
            return f"error: {failure.kind}: {failure.message}"
        kwargs = bind(pick, runtime=self.runtime, context=self.context)
        option = pick.option
        node.data["args"] = pick.args

        async def run() -> str:
            return await _call_tool(option.handler, kwargs, option.function)

        token = current_node.set(node)
        runtime_token = current_runtime.set(self.runtime)
        try:
            # Through the step hook, so a journaled run replays the tool's result instead of
            # running it again.
            text: str = await self.calls.hooks.step(node, option.handler, run, str)
        except BaseException as exc:
            node.fail(exc)
            raise
        finally:
            current_runtime.reset(runtime_token)
            current_node.reset(token)
        node.close("error" if text.startswith("error: ") else "ok", result=text)
        return text


async def _call_tool(fn: object, kwargs: dict[str, Any], spec: Any) -> str:
    """Run one tool and return what the model reads: its result, or its error, as text."""
    assert callable(fn)
    try:
        # A plain def tool still running when the turn's deadline passes is left to finish
        # on its thread: the turn does not wait for it.
        result = await call_option(
            fn, kwargs, spec.is_async if spec is not None else False, abandon_on_cancel=True
        )
    except Exception as exc:  # any error of a user's tool goes back to the model as data
        return f"error: {type(exc).__name__}: {exc}"
    return _as_text(result)


def _as_text(result: object) -> str:
    text = result if isinstance(result, str) else to_json(result, fallback=repr).decode()
    return text if len(text) <= _RESULT_CHARS else text[:_RESULT_CHARS] + "…"
