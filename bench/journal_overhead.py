"""Journal overhead: microseconds per journaled transition on SQLite.

2,000 tickets of three transitions each (three decisions), run sequentially and with 200 in
flight, side by side with the same flow unjournaled (the flow awaited directly, no engine).
Beside them, with 200 in flight, the store's own share: the five writes a journaled ticket
makes (create the run, three journal appends, finish it with its trace), replayed straight
into the store with no flow and no engine. Medians over a few rounds in one process.

Run with ``make bench`` or ``python bench/journal_overhead.py [--tickets N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Engine, Runtime, agentic_function, decision
from engine._base._context import ambient_runtime
from engine.models import Request, Response
from engine.store import SQLiteStore

TRANSITIONS = 3


@agentic_function
async def ticket_flow(ticket: str, runtime: Runtime | None = None) -> str:
    """Three decisions: classify, route, close."""
    kind = await decision.make(f"Classify {ticket}.", ["billing", "tech", "other"])
    route = await decision.make("Route it.", {"queue_a": "A", "queue_b": "B"})
    close = await decision.make("Close?", ["close", "keep"])
    return f"{kind}/{route}/{close}"


_CLASSIFY, _ROUTE, _CLOSE = (json.dumps({"call": c}) for c in ("billing", "queue_a", "close"))


class FakeModel:
    """The fake provider of both columns: yields once, like a network call, then picks.

    Unlike ``ScriptedModel`` it keeps no log of the requests it answered (a provider
    does not), so memory stays flat across the 6,000 calls of a round.
    """

    name = "fake"

    async def complete(self, request: Request) -> Response:
        await asyncio.sleep(0)
        text = request.messages[0].text
        if text.startswith("Classify"):
            reply = _CLASSIFY
        elif text.startswith("Route"):
            reply = _ROUTE
        else:
            reply = _CLOSE
        return Response(text=reply, finish_reason="stop", model=self.name)


async def unjournaled(tickets: list[str], in_flight: int) -> float:
    runtime = Runtime(model=FakeModel())
    limiter = anyio.CapacityLimiter(in_flight)

    async def one(ticket: str) -> None:
        async with limiter:
            with ambient_runtime(runtime):
                await ticket_flow(ticket)

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for ticket in tickets:
            tg.start_soon(one, ticket)
    return time.perf_counter() - t0


async def journaled(tickets: list[str], in_flight: int, folder: Path) -> float:
    store = SQLiteStore(folder / f"bench-{time.monotonic_ns()}.db")
    engine = Engine(model=FakeModel(), store=store)
    t0 = time.perf_counter()
    runs = await engine.run_many(ticket_flow, tickets, concurrency=in_flight)
    elapsed = time.perf_counter() - t0
    assert all(r.status == "completed" for r in runs)
    await store.close()
    return elapsed


async def store_writes_alone(tickets: list[str], in_flight: int, folder: Path) -> float:
    """Replay a journaled ticket's five store writes for every ticket, ``in_flight`` at once."""
    sample = SQLiteStore(folder / f"sample-{time.monotonic_ns()}.db")
    engine = Engine(model=FakeModel(), store=sample)
    (done,) = await engine.run_many(ticket_flow, tickets[:1])
    journal = await sample.load_journal(done.run_id)
    trace = await sample.load_trace(done.run_id)
    await sample.close()
    # The appends as the engine makes them: each model reply carries the pick before it.
    appends = [journal[0:1], journal[1:3], journal[3:5]]
    store = SQLiteStore(folder / f"alone-{time.monotonic_ns()}.db")
    limiter = anyio.CapacityLimiter(in_flight)

    async def one(ticket: str) -> None:
        async with limiter:
            start = done.model_copy(
                update={"run_id": ticket, "status": "running", "result": None, "version": 0}
            )
            run, _ = await store.create_run(start)
            for records in appends:
                await store.append(ticket, records, owner=run.owner)
            final = run.model_copy(update={"status": "completed", "result": done.result})
            await store.finish_run(
                final, expected_version=run.version, records=journal[5:], trace=trace
            )

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for ticket in tickets:
            tg.start_soon(one, ticket)
    elapsed = time.perf_counter() - t0
    await store.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tickets", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tickets = [f"t{i}" for i in range(args.tickets)]
    transitions = len(tickets) * TRANSITIONS
    print(
        f"journal overhead on SQLite ({args.tickets} tickets x {TRANSITIONS} transitions, "
        f"median of {args.rounds} rounds, µs per transition)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for label, in_flight in (("sequential", 1), ("200 in flight", 200)):
            plain = statistics.median(
                asyncio.run(unjournaled(tickets, in_flight)) for _ in range(args.rounds)
            )
            durable = statistics.median(
                asyncio.run(journaled(tickets, in_flight, Path(tmp))) for _ in range(args.rounds)
            )
            per_plain = plain / transitions * 1e6
            per_durable = durable / transitions * 1e6
            print(
                f"  {label:<14} unjournaled {per_plain:8.1f}   journaled {per_durable:8.1f}   "
                f"overhead {per_durable - per_plain:8.1f}"
            )
        alone = statistics.median(
            asyncio.run(store_writes_alone(tickets, 200, Path(tmp))) for _ in range(args.rounds)
        )
        print(
            f"  {'200 in flight':<14} the store's five writes a ticket alone, no flow: "
            f"{alone / transitions * 1e6:8.1f}"
        )


if __name__ == "__main__":
    main()
