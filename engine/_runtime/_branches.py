"""Concurrency inside a flow with stable keys: :func:`gather` and :func:`map`.

Each branch runs under its own trace node whose key is fixed by its position, not by when it
was scheduled, so the journal keys of everything inside a branch are the same on every
replay, whatever order the branches finish in.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import anyio

from engine._base import Node, WaitingForAnswer, current_node, using_node

__all__ = ["gather", "map"]

T = TypeVar("T")
R = TypeVar("R")


async def gather(*branches: Awaitable[T] | Callable[[], Awaitable[T]]) -> list[T]:
    """Run branches concurrently and return their results in argument order.

    Each branch is an awaitable or a zero-argument async callable. When a branch raises, the
    others are cancelled and its exception propagates as is (never wrapped in an exception
    group), so a ``DecisionError`` still suspends the run. An error another branch raises
    while it is being cancelled is not taken for the failure. A branch that waits for a
    person (:class:`~engine.WaitingForAnswer`) does not stop the others: once they are done
    (or waiting too), every waiting branch's question is raised together, each to be
    answered on its own.
    """
    parent = current_node.get()
    group = parent.child("branch", "gather") if parent is not None else None
    nodes = [
        group.child("branch", str(i)) if group is not None else None
        for i in builtins.range(len(branches))
    ]
    results: list[Any] = [None] * len(branches)
    failed: list[BaseException] = []  # the first failure only
    waiting: list[dict[str, Any]] = []  # the questions of branches that wait for a person

    async def one(index: int, branch: Awaitable[T] | Callable[[], Awaitable[T]]) -> None:
        node = nodes[index]
        try:
            if node is None:
                results[index] = await _await(branch)
            else:
                with using_node(node):
                    results[index] = await _await(branch)
                node.close("ok")
        except WaitingForAnswer as exc:
            _close(node, "waiting")
            waiting.extend(exc.questions)
        except Exception as exc:
            _close(node, exc)
            if not tg.cancel_scope.cancel_called:  # else: raised by the cancel's cleanup
                failed.append(exc)
                tg.cancel_scope.cancel()
        except BaseException:  # cancelled: a sibling failed, or the run was stopped
            _close(node, "cancelled")
            raise

    try:
        async with anyio.create_task_group() as tg:
            for index, branch in enumerate(branches):
                tg.start_soon(one, index, branch)
    finally:
        if group is not None:
            group.close(_group_status(nodes, failed, waiting))
    if failed:
        raise failed[0]
    if waiting:
        raise WaitingForAnswer(waiting)
    return results


async def map(
    fn: Callable[[T], Awaitable[R]],
    items: Iterable[T],
    *,
    concurrency: int | None = None,
) -> list[R]:
    """Call ``fn`` on every item concurrently (at most ``concurrency`` at once), in order."""
    limiter = anyio.CapacityLimiter(concurrency) if concurrency else None

    def branch(item: T) -> Callable[[], Awaitable[R]]:
        async def run() -> R:
            if limiter is None:
                return await fn(item)
            async with limiter:
                return await fn(item)

        return run

    return await gather(*(branch(item) for item in items))


def _close(node: Node | None, how: str | Exception) -> None:
    """Close a branch's node (if it has one) with a status, or as failed by an exception."""
    if node is None:
        return
    if isinstance(how, Exception):
        node.fail(how)
    else:
        node.close(how)


def _group_status(
    nodes: list[Node | None], failed: list[BaseException], waiting: list[dict[str, Any]]
) -> str:
    """How a gather's node closes: a branch failed, one was cut short, one waits, or ok."""
    if failed:
        return "error"
    if any(n is not None and n.status == "cancelled" for n in nodes):
        return "cancelled"
    return "waiting" if waiting else "ok"


async def _await(branch: Awaitable[T] | Callable[[], Awaitable[T]]) -> T:
    if callable(branch):
        return await branch()
    return await branch
