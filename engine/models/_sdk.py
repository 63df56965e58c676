"""What the models built on a vendor SDK share: a client made at first use, one timed call
whose vendor exceptions become ours, and closing what was opened."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Self

__all__ = ["SDKModel"]

Translate = Callable[[Exception], Exception | None]


class SDKModel:
    """A base for SDK-backed models: subclasses make ``_connect`` and translate errors."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        client: Any,
        base_url: str | None,
        timeout: float,
    ) -> None:
        self.name = model
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self._api_key = api_key
        self._given = client
        self._client: Any = None

    def _connect(self) -> Any:
        """Return the SDK client, made at first use (a client passed in, its retries off)."""
        if self._client is None:
            # The transport layer retries with the run's deadline in view; SDK retries would
            # multiply attempts behind its back.
            given = self._given
            self._client = given.with_options(max_retries=0) if given is not None else self._open()
        return self._client

    def _open(self) -> Any:
        """Make a new SDK client from the model's settings and the environment."""
        raise NotImplementedError

    async def _send(
        self, create: Callable[..., Awaitable[Any]], params: dict[str, Any], translate: Translate
    ) -> tuple[Any, float]:
        """Make one SDK call; return its reply and latency, or raise our error for its own."""
        started = time.perf_counter()
        try:
            reply = await create(**params)
        except Exception as exc:
            error = translate(exc)
            if error is None:
                raise
            raise error from exc
        return reply, time.perf_counter() - started

    async def aclose(self) -> None:
        """Close the HTTP client this model opened (a client passed in stays open)."""
        client, self._client = self._client, None
        if client is not None and self._given is None:
            await client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
