"""Route a few tickets on a real model behind an OpenAI-compatible API.

Works with OpenAI itself and with anything that speaks its protocol: vLLM, Ollama,
llama.cpp's server, LM Studio, OpenRouter, a LiteLLM proxy. Set:

    OPENAI_API_KEY   the key (any non-empty string for a local server that ignores it)
    OPENAI_BASE_URL  the server, e.g. http://localhost:11434/v1 for Ollama (optional)
    OPENAI_MODEL     the model id (default gpt-4o-mini), e.g. llama3.1:8b

Without OPENAI_API_KEY it prints how to set them and exits (status 0), so it is safe to
run anywhere. Run it with ``python examples/openai_compatible.py``.
"""

from __future__ import annotations

import json
import os
import sys
from itertools import islice
from pathlib import Path

import anyio

from engine import Engine
from engine.store import MemoryStore
from flows.ticket_routing import Ticket, route_ticket

DATA = Path(__file__).parent / "data" / "tickets.jsonl"
HOW = """\
This example talks to a real model, and OPENAI_API_KEY is not set. To run it:

  OpenAI:   export OPENAI_API_KEY=sk-...
  Ollama:   export OPENAI_API_KEY=ollama OPENAI_BASE_URL=http://localhost:11434/v1 \\
                   OPENAI_MODEL=llama3.1:8b
  vLLM:     export OPENAI_API_KEY=token OPENAI_BASE_URL=http://localhost:8000/v1 \\
                   OPENAI_MODEL=<the served model>

then run: python examples/openai_compatible.py
(The same model on the command line: engine run ticket_routing --input FILE \\
 --model openai:<model>@<base_url>)"""


async def main() -> None:
    from engine.models import OpenAIModel  # after the key check: nothing to import without it

    model_id = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    model = OpenAIModel(model_id, base_url=os.environ.get("OPENAI_BASE_URL") or None)
    engine = Engine(model=model, store=MemoryStore(), concurrency=4)
    with DATA.open(encoding="utf-8") as lines:
        tickets = [Ticket.model_validate(json.loads(line)) for line in islice(lines, 5)]
    runs = await engine.run_many(route_ticket, tickets)
    for ticket, run in zip(tickets, runs, strict=True):
        if run.status == "completed":
            outcome = f"{run.result['category']} -> {run.result['action']['kind']}"
        else:
            outcome = f"{run.status}: {run.error.kind if run.error else '?'}"
        print(f"{ticket.id}  {outcome:<28} {run.usage.total_tokens:>6} tokens  {ticket.subject}")


if __name__ == "__main__":
    if not os.environ.get("OPENAI_API_KEY"):
        print(HOW)
        sys.exit(0)
    anyio.run(main)
