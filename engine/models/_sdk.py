"""What the models built on a vendor SDK share: a client made at first use, one timed call
whose vendor exceptions become ours, and closing what was opened."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, Self
from urllib.parse import urlsplit

from engine._base import AuthenticationError, ModelError, remember_secret
from engine.models._settings import ModelSettings
from engine.models._wire import short

__all__ = ["SDKModel", "key_or_none", "missing_key", "url_problem"]

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
        settings: ModelSettings | None = None,
    ) -> None:
        if settings is not None and not isinstance(settings, ModelSettings):
            raise TypeError(f"settings must be a ModelSettings, got {settings!r}")
        base_url = base_url or None  # an empty base_url means the default endpoint
        if base_url is not None and (problem := url_problem(base_url)):
            raise ValueError(f"base_url {base_url!r} {problem}")
        self.name = model
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        #: The model's own settings, under a runtime's and a call's.
        self.settings = settings if settings is not None else ModelSettings()
        self._api_key = api_key
        remember_secret(api_key)  # never written out: logs, stored errors and tracebacks
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

    def _build(
        self, make: Callable[..., Any], provider: str, *, api_key: str, base_url: str | None
    ) -> Any:
        """Make the SDK client; what its constructor raises becomes our error."""
        try:
            return make(api_key=api_key, base_url=base_url, max_retries=0, timeout=self.timeout)
        except Exception as exc:
            where = f" for base_url {base_url!r}" if base_url else ""
            raise ModelError(
                f"could not set up the {provider} client{where}: {short(str(exc))}",
                provider=provider,
            ) from exc

    def _endpoint(self, variable: str, provider: str) -> str | None:
        """Return the ``base_url`` given, else the one ``variable`` sets, checked."""
        if self.base_url is not None:
            return self.base_url
        url = os.environ.get(variable) or None
        if url is not None and (problem := url_problem(url)):
            raise ModelError(f"{variable} {url!r} {problem}", provider=provider)
        return url

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


def missing_key(provider: str, variable: str) -> AuthenticationError:
    """Return the error for a model with no key: none given, and ``variable`` unset or empty."""
    return AuthenticationError(
        f"no {provider} API key: set {variable} or pass api_key=", provider=provider.lower()
    )


def key_or_none(key: str | None) -> str | None:
    """Return ``key``, or ``None`` for a missing, empty or blank one."""
    return key if key and key.strip() else None


def url_problem(url: str) -> str | None:
    """Say what is wrong with an endpoint URL, or return ``None`` when nothing is.

    The check is what an HTTP client needs before it connects: an ``http(s)`` scheme, a
    host, and a port in range (a bad port otherwise escapes the SDKs as a raw error).
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (reading it checks the port)
    except ValueError as exc:
        return f"is not a valid URL ({exc}); write one such as 'http://localhost:8000/v1'"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http(s) URL with a host; write one such as 'http://localhost:8000/v1'"
    return None
