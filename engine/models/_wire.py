"""What the provider adapters share: HTTP failures as our errors, and enforced picks unwrapped.

Both official SDKs raise a status error carrying the HTTP status and the response headers,
a connection error, and a timeout error. :func:`error_for_status` maps a status to our error
tree once, so the adapters agree on what is retryable.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Mapping
from typing import Any

from engine._base import (
    AuthenticationError,
    BadRequestError,
    ModelError,
    ModelTimeoutError,
    ProviderUnavailableError,
    ProviderUnreachableError,
    RateLimitError,
)
from engine.models._types import Message, PickSchema, TextBlock

__all__ = [
    "error_for_status",
    "parse_retry_after",
    "short",
    "text_of",
    "translate_sdk_error",
    "unwrap_pick",
]

_MESSAGE_CHARS = 300
# Statuses a second attempt may fix besides 429 and 5xx: a request timeout, and a conflict
# (both official SDKs retry these themselves when their own retries are on).
_RETRYABLE = frozenset({408, 409})
# What a server's own request validation says when it answers it with a 5xx (as
# llama-cpp-python's server does: a pydantic error about the request's body, as HTTP 500).
# Such a reply refuses the request itself: a second attempt would be refused alike.
_VALIDATION = re.compile(
    r"validation error|validation_error|invalid_request_error|literal_error|"
    r"input should be|'loc': \('body'|\"loc\": \[\"body\"",
    re.IGNORECASE,
)


def error_for_status(
    status: int, detail: str, headers: Mapping[str, str] | None, *, provider: str
) -> ModelError:
    """Return our error for an HTTP failure status of ``provider``.

    A 5xx is the provider failing, worth a retry, unless its body is the server's own
    validation of the request (a request it refuses, as a 4xx would): that is a
    :class:`~engine.BadRequestError`.
    """
    refused = status >= 500 and _VALIDATION.search(detail) is not None
    detail = short(detail)
    if status == 429:
        retry_after = parse_retry_after(headers)
        wait = f"; retry after {retry_after:g}s" if retry_after is not None else ""
        return RateLimitError(
            f"{provider} rate limited the call (429){wait}: {detail}",
            retry_after=retry_after,
            provider=provider,
        )
    if status in (401, 403):
        return AuthenticationError(
            f"{provider} refused the credentials ({status}): {detail}; check the API key",
            provider=provider,
        )
    if status == 408:
        return ModelTimeoutError(
            f"{provider} timed out the request (408): {detail}", provider=provider
        )
    if refused:
        return BadRequestError(
            f"{provider} refused the request ({status}, a request-validation error): "
            f"{detail}; fix the request, retrying it cannot help",
            provider=provider,
        )
    if status >= 500 or status in _RETRYABLE:
        return ProviderUnavailableError(
            f"{provider} failed on its side ({status}): {detail}", provider=provider
        )
    return BadRequestError(
        f"{provider} rejected the request ({status}): {detail}; fix the request, retrying "
        "it cannot help",
        provider=provider,
    )


def translate_sdk_error(
    exc: Exception, sdk: Any, base: type[Exception], provider: str, *, url: str | None = None
) -> ModelError | None:
    """Return our error for an exception of an official provider SDK, ``None`` for others.

    ``openai`` and ``anthropic`` share their error classes' names (``APITimeoutError``,
    ``APIConnectionError``, ``APIStatusError``); ``base`` is the SDK's own root error.
    ``url``, the endpoint called, is named in the messages of a call that got no answer.
    """
    where = f"{provider} at {url}" if url else provider
    if isinstance(exc, sdk.APITimeoutError):
        return ModelTimeoutError(f"{where} did not answer in time", provider=provider)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderUnreachableError(
            f"could not reach {where}: {short(str(exc))}", provider=provider, url=url
        )
    if isinstance(exc, sdk.APIStatusError):
        return error_for_status(
            exc.status_code, exc.message, exc.response.headers, provider=provider
        )
    if isinstance(exc, base):
        # A reply the SDK could not read, or a client-side misconfiguration.
        return ModelError(f"{provider} call failed: {short(str(exc))}", provider=provider)
    return None


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Read the wait a 429 asks for, in seconds, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be seconds or an HTTP date; anything unreadable is ``None``.
    """
    if not headers:
        return None
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def short(text: str) -> str:
    """Cut a provider's message to a bounded length for our error messages."""
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"


def text_of(message: Message) -> str:
    """Return a message's text blocks as one string, kept apart by a blank line.

    For the places a provider takes a string only; :attr:`Message.text` glues the blocks.
    """
    content = message.content
    if len(content) == 1 and isinstance(content[0], TextBlock):
        return content[0].text
    return "\n\n".join(b.text for b in content if isinstance(b, TextBlock) and b.text)


def unwrap_pick(value: object, enforce: PickSchema) -> str | None:
    """Return the pick inside an enforced reply as JSON text, or ``None`` when it has none.

    ``value`` is the decoded reply (a dict) or its JSON text. A reply that is not the
    expected wrapper is left for the caller to pass on as it came, so a malformed or
    truncated reply fails in the decision core like any other.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict) or enforce.key not in value:
        return None
    pick: Any = value[enforce.key]
    return json.dumps(pick, ensure_ascii=False)
