"""What the SQL stores share: opened on first use or by ``async with``, and closed once, safely.

:class:`~engine.store.SQLiteStore` and :class:`~engine.store.PostgresStore` both open their
connections lazily under a lock, queue their writes for group commit, and on close commit
what is queued before they let the connections go. That life is written here once; each
store says how it connects, how it commits a batch and how it lets its connections go.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Generic, Self, TypeVar

import anyio

__all__ = ["BatchedStore"]

OpT = TypeVar("OpT")


class BatchedStore(ABC, Generic[OpT]):
    """The open-and-close life of a store whose writes are committed in queued batches.

    A subclass calls ``super().__init__()``, appends its writes (``OpT``) to ``_queue`` and
    commits them holding ``_commit_lock``, and implements the four hooks below.
    """

    #: What a new store would reach again, named in the message of a closed one.
    _reopen_hint = "the file"

    def __init__(self) -> None:
        self._closed = False
        self._queue: list[OpT] = []
        self._commit_lock = anyio.Lock()
        self._open_lock = anyio.Lock()

    async def __aenter__(self) -> Self:
        await self._ensure_open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Commit the writes already queued, then close the connections. Idempotent."""
        self._closed = True
        # Shielded: a close cut short would leak open connections. The wait inside is
        # bounded by the batch in flight, itself bounded by the store's timeout.
        # The open lock too: an open still in flight would otherwise land after the close.
        with anyio.CancelScope(shield=True):
            async with self._open_lock, self._commit_lock:
                if self._queue:
                    await self._flush()
                await self._release()

    async def _ensure_open(self) -> None:
        """Open the connections on first use, once however many tasks ask at a time.

        Raises:
            RuntimeError: The store is closed.
        """
        if self._is_open():
            return
        async with self._open_lock:
            if self._closed:
                raise self._closed_error()
            if not self._is_open():
                await self._open_connections()

    def _closed_error(self) -> RuntimeError:
        return RuntimeError(
            f"{self!r} is closed; open a new store to use {self._reopen_hint} again"
        )

    # -- what each store does its own way ------------------------------------------------------

    @abstractmethod
    def _is_open(self) -> bool:
        """Whether the connections are open."""

    @abstractmethod
    async def _open_connections(self) -> None:
        """Open the connections (creating the schema); the caller holds the open lock."""

    @abstractmethod
    async def _flush(self) -> None:
        """Commit everything queued as one transaction; the caller holds the commit lock."""

    @abstractmethod
    async def _release(self) -> None:
        """Close the connections, if open; the caller holds both locks, the queue committed."""
