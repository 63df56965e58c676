"""A batch's inputs, pulled one at a time as its workers free up: never all of them at once.

Inputs are any iterable or async iterable (a list, a generator, a file's lines, an async
iterator). A sync source is read directly; an async one through one generator, closed with
the batch, by one worker at a time. Stopping the feed cancels a read under way, so a batch
stops at once even while its async source waits for the next item.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Iterator
from types import TracebackType
from typing import Any

import anyio

__all__ = ["Feed", "Inputs"]

Inputs = Iterable[Any] | AsyncIterable[Any]
_NOTHING = object()


class Feed:
    """Read a batch's inputs one at a time, numbering them; use it as ``async with``."""

    def __init__(self, inputs: Inputs) -> None:
        self._items: Iterator[Any] | AsyncIterator[Any] = (
            aiter(inputs) if isinstance(inputs, AsyncIterable) else iter(inputs)
        )
        self._reader: AsyncGenerator[Any, None] | None = None
        #: How many inputs were read so far (the next one's index).
        self.read = 0
        #: Whether feeding stopped (a cancel, a shutdown) before the inputs ran out.
        self.stopped = False
        #: Whether the inputs ran out.
        self.exhausted = False
        self._reading = anyio.Lock()
        self._fetch: anyio.CancelScope | None = None

    async def __aenter__(self) -> Feed:
        if isinstance(self._items, AsyncIterator):
            self._reader = _items(self._items)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._reader is not None:
            await self._reader.aclose()

    def stop(self) -> None:
        """Read no more inputs; a read under way is cancelled."""
        if self.stopped:
            return
        self.stopped = True
        if self._fetch is not None:
            self._fetch.cancel()

    async def next(self) -> tuple[int, Any] | None:
        """Return the next input and its index; ``None`` when none is left or feeding stopped.

        Raises:
            Exception: Whatever the inputs raise, as it is.
        """
        if self.stopped or self.exhausted:
            return None
        if isinstance(self._items, Iterator):
            try:
                item = next(self._items)
            except StopIteration:
                self.exhausted = True
                return None
        else:
            item = await self._read()
            if item is _NOTHING:
                return None
        index = self.read
        self.read += 1
        return index, item

    def left(self) -> bool:
        """Whether feeding stopped with inputs left unread (an async source is assumed to)."""
        if not self.stopped or self.exhausted:
            return False
        if not isinstance(self._items, Iterator):
            return True
        try:
            return next(self._items, _NOTHING) is not _NOTHING
        except Exception:  # a source that fails now had inputs left as far as anyone knows
            return True

    async def _read(self) -> Any:
        """Read an async input, one worker at a time; :data:`_NOTHING` when none is left."""
        assert self._reader is not None, "an async feed is read inside `async with`"
        async with self._reading:
            if self.stopped or self.exhausted:
                return _NOTHING
            try:
                with anyio.CancelScope() as self._fetch:  # stop() cancels it
                    try:
                        return await anext(self._reader)
                    except StopAsyncIteration:
                        self.exhausted = True
            finally:
                self._fetch = None
            return _NOTHING


async def _items(items: AsyncIterator[Any]) -> AsyncGenerator[Any, None]:
    """Yield async inputs one at a time (closed with the batch)."""
    async for item in items:
        yield item
