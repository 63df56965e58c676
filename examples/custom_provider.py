"""Plug in your own model: one class with a ``name`` and an async ``complete``.

Anything that answers a :class:`~engine.models.Request` with a
:class:`~engine.models.Response` is a model: a provider SDK, an in-house gateway, a rules
engine. This one is a keyword matcher: it reads the menu from ``request.choices`` (the
same options the prompt lists, as JSON Schema) and picks the option whose description
shares the most words with the ticket. The engine validates its pick like any other.

Run it with ``python examples/custom_provider.py`` (offline, no API key).
"""

from __future__ import annotations

import json
import re
import time
from itertools import islice
from pathlib import Path

import anyio

from engine import Runtime
from engine.models import ChoiceSpec, Model, Request, Response, Usage
from flows.ticket_routing import Ticket, classify

DATA = Path(__file__).parent / "data" / "tickets.jsonl"
_WORD = re.compile(r"[a-z]{4,}")


class KeywordModel:
    """Pick the option whose name and description best match the request's words."""

    name = "keywords"

    async def complete(self, request: Request) -> Response:
        """Answer one request with a JSON pick (or a short note when no menu is offered)."""
        started = time.perf_counter()
        text = request.messages[-1].text.lower() if request.messages else ""
        if request.choices:
            # The menu follows the question; match the question's words only.
            question = text.split(f"\n{request.choices[0].name}(")[0]
            words = set(_WORD.findall(question))
            best = max(request.choices, key=lambda c: _score(c, words))
            reply = json.dumps({"call": best.name, "args": {}})
        else:
            reply = "I only pick from menus."
        return Response(
            text=reply,
            finish_reason="stop",
            usage=Usage(input_tokens=len(text) // 4, output_tokens=len(reply) // 4),
            model=self.name,
            latency_s=time.perf_counter() - started,
        )


def _score(choice: ChoiceSpec, words: set[str]) -> int:
    described = set(_WORD.findall(f"{choice.name} {choice.description}".lower()))
    stems = {w[:5] for w in described}
    return sum(1 for w in words if w in described or w[:5] in stems)


async def main() -> None:
    model: Model = KeywordModel()  # it satisfies the protocol; no base class needed
    runtime = Runtime(model=model)
    with DATA.open(encoding="utf-8") as lines:
        tickets = [Ticket.model_validate(json.loads(line)) for line in islice(lines, 12)]
    for ticket in tickets:
        category = await classify(ticket, runtime=runtime)
        print(f"{ticket.id}  {category:<10} {ticket.subject}")
    calls = runtime.trace.find("model_call")
    print(f"\n{len(calls)} calls to {model.name}, every pick validated against the menu")


if __name__ == "__main__":
    anyio.run(main)
