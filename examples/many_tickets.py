"""Route hundreds of support tickets at once against a slow, rate-limited model.

Every ticket is one durable run; ``Engine.as_completed`` keeps ``--concurrency`` of them in
flight on one event loop and hands each back as it finishes. The model is SimulatedModel
with 20-80 ms of latency per call, a few malformed replies (re-picked, or the run
suspends) and a few rate-limit errors (retried by the transport layer after their
retry-after). Concurrency is what turns minutes of model latency into seconds.

Run it with ``python examples/many_tickets.py [--tickets 300] [--concurrency 100]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from itertools import islice
from pathlib import Path

import anyio

from engine import Engine
from engine.models import Faults, SimulatedModel
from engine.store import MemoryStore
from flows.ticket_routing import Ticket, route_ticket

DATA = Path(__file__).parent / "data" / "tickets.jsonl"
LATENCY_S = (0.02, 0.08)


def load(n: int) -> list[Ticket]:
    """Return the first ``n`` tickets of the example dataset."""
    with DATA.open(encoding="utf-8") as lines:
        return [Ticket.model_validate(json.loads(line)) for line in islice(lines, n)]


async def main(n: int, concurrency: int) -> None:
    tickets = load(n)
    model = SimulatedModel(
        seed=5,
        latency=LATENCY_S,
        faults=Faults(no_json=0.03, rate_limit=0.02, retry_after=0.05),
    )
    engine = Engine(model=model, store=MemoryStore())
    outcomes: Counter[str] = Counter()
    actions: Counter[str] = Counter()
    started = time.perf_counter()
    batch = engine.as_completed(
        route_ticket, tickets, concurrency=concurrency, run_id=lambda t: t.id
    )
    async with batch as runs:
        async for run in runs:
            outcomes[run.status] += 1
            if run.status == "completed":
                actions[run.result["action"]["kind"]] += 1
            done = sum(outcomes.values())
            if done % 100 == 0 or done == len(tickets):
                print(f"{done:>5} done  {dict(outcomes)}")
    wall = time.perf_counter() - started
    one_at_a_time = model.calls * sum(LATENCY_S) / 2
    print(f"\n{len(tickets)} tickets in {wall:.2f} s ({len(tickets) / wall:.0f} tickets/s)")
    print(f"{model.calls} model calls; one at a time they would take about {one_at_a_time:.0f} s")
    print(f"faults injected: {dict(model.fault_counts)}")
    print(f"actions: {dict(actions.most_common())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()
    anyio.run(main, args.tickets, args.concurrency)
