"""A provider that is down until a test says it is back: 503s, then answers."""

from __future__ import annotations

from collections.abc import Callable

from engine import ProviderUnavailableError
from engine.models import Request, Response


class Down:
    """Answer 503 until :attr:`up` is set, then answer each request with ``answer(request)``."""

    name = "down"

    def __init__(self, answer: Callable[[Request], str]) -> None:
        self.answer = answer
        self.up = False
        self.calls = 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        if not self.up:
            raise ProviderUnavailableError("503 from the provider", provider=self.name)
        return Response(text=self.answer(request), finish_reason="stop")
