"""The hot path's cancel scopes behave as anyio's: a shield holds, a deadline cancels."""

from __future__ import annotations

import anyio

from engine._base import cancel_scope, fast_lock


async def test_a_shielded_scope_finishes_its_work_through_a_cancel() -> None:
    done: list[str] = []
    async with anyio.create_task_group() as tg:

        async def work() -> None:
            with cancel_scope(shield=True):
                await anyio.sleep(0.05)
                done.append("landed")

        tg.start_soon(work)
        await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert done == ["landed"]


async def test_a_deadline_cancels_the_block_and_is_caught_by_its_scope() -> None:
    with cancel_scope(deadline=anyio.current_time() + 0.01) as scope:
        await anyio.sleep(1)
    assert scope.cancelled_caught
    assert isinstance(scope, anyio.CancelScope)


async def test_the_fast_lock_is_anyios_lock_and_excludes() -> None:
    lock = fast_lock()
    assert isinstance(lock, anyio.Lock)
    order: list[str] = []

    async def hold(name: str) -> None:
        async with lock:
            order.append(f"{name} in")
            await anyio.sleep(0.01)
            order.append(f"{name} out")

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold, "a")
        tg.start_soon(hold, "b")
    assert order in (["a in", "a out", "b in", "b out"], ["b in", "b out", "a in", "a out"])


async def test_nothing_else_ready_tells_a_lone_task_from_one_with_company() -> None:
    import asyncio

    from engine._base import nothing_else_ready

    assert nothing_else_ready()  # this task alone on the loop
    loop = asyncio.get_running_loop()
    handle = loop.call_soon(lambda: None)
    assert not nothing_else_ready()  # a callback is ready
    handle.cancel()
    await asyncio.sleep(0)
    timer = loop.call_later(3600, lambda: None)
    assert nothing_else_ready()  # a timer far off is not due
    timer.cancel()


def test_nothing_else_ready_outside_a_loop_says_no() -> None:
    from engine._base import nothing_else_ready

    assert not nothing_else_ready()
