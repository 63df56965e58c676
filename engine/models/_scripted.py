"""A test double that answers from a script."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

from engine._base import ScriptExhaustedError
from engine.models._price import Price, check_price
from engine.models._settings import ModelSettings, effective_settings
from engine.models._types import Request, Response, TextBlock, trusted_response

__all__ = ["ScriptedModel"]

ReplyFunction = Callable[[Request], str | Awaitable[str]]


class ScriptedModel:
    """Answer each call with the next reply of a script, or with a function of the request.

    Args:
        replies: A list of reply strings, used one per call in order, or a callable
            ``request -> str`` (sync or async).
        name: The model name reported on replies.
        settings: The model's own :class:`~engine.models.ModelSettings`.
        price: What the model's calls cost (:class:`~engine.Price`, dollars per million
            tokens); ``None`` (the default): unknown, unless ``Engine(prices=)`` names the model.

    Every request is recorded in :attr:`requests`, in order, and the settings each call
    would have sent (its own laid under the request's) in :attr:`settings_seen`.
    """

    def __init__(
        self,
        replies: Sequence[str] | ReplyFunction,
        *,
        name: str = "scripted",
        settings: ModelSettings | None = None,
        price: Price | None = None,
    ) -> None:
        if isinstance(replies, str):
            raise TypeError("replies must be a list of strings or a callable, got one string")
        self.name = name
        self.price = check_price(price)
        self.settings = settings if settings is not None else ModelSettings()
        self.requests: list[Request] = []
        self.settings_seen: list[ModelSettings] = []
        self._script: list[str] | None = None
        self._fn: ReplyFunction | None = None
        if callable(replies):
            self._fn = replies
        else:
            self._script = list(replies)
        self._next = 0

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.requests)

    async def complete(self, request: Request) -> Response:
        """Record the request and return the next scripted reply."""
        self.requests.append(request)
        self.settings_seen.append(effective_settings(self.settings, request))
        if self._fn is not None:
            text = self._fn(request)
            if type(text) is not str and inspect.isawaitable(text):
                text = await text
            if not isinstance(text, str):
                raise TypeError(f"the reply function must return a str, got {type(text).__name__}")
        else:
            assert self._script is not None
            if self._next >= len(self._script):
                raise ScriptExhaustedError(
                    f"ScriptedModel ran out of replies after {len(self._script)} call(s); "
                    "add replies to the script",
                    provider="scripted",
                )
            text = self._script[self._next]
            self._next += 1
        # A rough token count (4 characters a token) so usage adds up in runs and traces.
        chars = 0
        for m in request.messages:
            for b in m.content:
                if isinstance(b, TextBlock):
                    chars += len(b.text)
        return trusted_response(
            text,
            finish_reason="stop",
            input_tokens=chars // 4,
            output_tokens=len(text) // 4,
            model=self.name,
            latency_s=0.0,
        )
