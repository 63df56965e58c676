"""Memory a run holds: bytes per run in flight, and per finished run ``run_many`` returns.

1,000 tickets of ``journal_overhead.py``'s three-decision flow, all in flight at once on
SQLite (default durability). The model holds every call of the second decision until all
1,000 runs have made it, so that every run stands at the same place (one transition
journaled, the next model call under way) when Python's allocations are counted
(tracemalloc); then it lets them all finish, and counts again while the returned runs are
held. Medians over a few rounds in one process.

Run with ``python bench/run_memory.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import tracemalloc
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from journal_overhead import FakeModel, ticket_flow

from engine import Engine
from engine.models import Request, Response
from engine.store import Run, SQLiteStore


class GatedModel(FakeModel):
    """``FakeModel``, holding each call of the second decision until ``runs`` are held."""

    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.held = 0
        self.all_held = anyio.Event()
        self.release = anyio.Event()

    async def complete(self, request: Request) -> Response:
        if request.messages[0].text.startswith("Route"):
            self.held += 1
            if self.held == self.runs:
                self.all_held.set()
            await self.release.wait()
        return await super().complete(request)


async def one_round(folder: str, runs: int, index: int) -> tuple[float, float]:
    """Return the bytes a run holds in flight, and a finished run once returned."""
    model = GatedModel(runs)
    finished: list[Run] = []

    async def batch(tickets: list[str]) -> None:
        finished.extend(await engine.run_many(ticket_flow, tickets, concurrency=runs))

    async with SQLiteStore(f"{folder}/runs-{index}.sqlite") as store:
        engine = Engine(model=model, store=store)
        model.release.set()  # the warm-up runs are not held
        await engine.run_many(ticket_flow, [f"w{index}-{i}" for i in range(50)], concurrency=50)
        model.release, model.held = anyio.Event(), 0
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        async with anyio.create_task_group() as tg:
            tg.start_soon(batch, [f"t{index}-{i}" for i in range(runs)])
            await model.all_held.wait()
            gc.collect()
            in_flight = (tracemalloc.get_traced_memory()[0] - base) / runs
            model.release.set()
        assert len(finished) == runs
        assert all(run.status == "completed" for run in finished)
        gc.collect()
        kept = (tracemalloc.get_traced_memory()[0] - base) / runs
        await engine.aclose()
    return in_flight, kept


async def main(runs: int, rounds: int) -> None:
    tracemalloc.start()
    with tempfile.TemporaryDirectory() as folder:
        samples = [await one_round(folder, runs, index) for index in range(rounds)]
    in_flight = statistics.median(s[0] for s in samples)
    kept = statistics.median(s[1] for s in samples)
    print(
        f"memory a run holds on SQLite ({runs} in flight, median of {rounds} rounds, tracemalloc)"
    )
    print(f"  in flight, at its second model call      {in_flight / 1024:6.1f} KB")
    print(f"  finished, as run_many returned it        {kept / 1024:6.1f} KB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.runs, args.rounds)
