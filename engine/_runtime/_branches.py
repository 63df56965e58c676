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

from engine._base import current_node, using_node

__all__ = ["gather", "map"]

T = TypeVar("T")
R = TypeVar("R")


async def gather(*branches: Awaitable[T] | Callable[[], Awaitable[T]]) -> list[T]:
    """Run branches concurrently and return their results in argument order.

    Each branch is an awaitable or a zero-argument async callable. When a branch raises, the
    others are cancelled and its exception propagates as is (never wrapped in an exception
    group), so a ``DecisionError`` still suspends the run. An error another branch raises
    while it is being cancelled is not taken for the failure.
    """
    parent = current_node.get()
    group = parent.child("branch", "gather") if parent is not None else None
    nodes = [
        group.child("branch", str(i)) if group is not None else None
        for i in builtins.range(len(branches))
    ]
    results: list[Any] = [None] * len(branches)
    failed: list[BaseException] = []  # the first failure only

    async def one(index: int, branch: Awaitable[T] | Callable[[], Awaitable[T]]) -> None:
        node = nodes[index]
        try:
            if node is None:
                results[index] = await _await(branch)
            else:
                with using_node(node):
                    results[index] = await _await(branch)
                node.close("ok")
        except Exception as exc:
            if node is not None:
                node.fail(exc)
            if not tg.cancel_scope.cancel_called:  # else: raised by the cancel's cleanup
                failed.append(exc)
                tg.cancel_scope.cancel()
        except BaseException:  # cancelled: a sibling failed, or the run was stopped
            if node is not None:
                node.close("cancelled")
            raise

    try:
        async with anyio.create_task_group() as tg:
            for index, branch in enumerate(branches):
                tg.start_soon(one, index, branch)
    finally:
        if group is not None:
            cut = any(n is not None and n.status == "cancelled" for n in nodes)
            group.close("error" if failed else "cancelled" if cut else "ok")
    if failed:
        raise failed[0]
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


async def _await(branch: Awaitable[T] | Callable[[], Awaitable[T]]) -> T:
    if callable(branch):
        return await branch()
    return await branch
