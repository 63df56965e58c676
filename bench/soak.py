"""Soak: 10,000 tickets of the ticket-routing flow, 1,000 in flight, journaled to SQLite.

The model is SimulatedModel with 50 ms of latency on average (25-75 ms). Two phases, each in
a process of its own so that its peak RSS is its own:

* clean: no faults. Reported against the ideal wall time, ``tickets x transitions x
  latency / in flight``, where a ticket's transitions are its model calls in sequence (the
  line-item checks of a ticket run side by side and count once);
* faults: 10% malformed replies (no JSON, unknown options, wrong types), 5% rate limits
  (retry-after 0.1 s) and 2% 5xx. No ticket may be lost: each ends completed, or stopped
  with its reason (suspended on a decision, failed on a provider error whose retries ran
  out); then the stopped ones are resumed with a well-behaved model, and each must complete.

Reported per phase: wall time, tickets per second, peak RSS, retries per layer, and the
outcome of every ticket (counted by status and reason). The floors (the same sleeps, no
engine: through anyio, and through plain asyncio) are printed beside the clean phase.

    python bench/soak.py [--tickets 10000] [--in-flight 1000] [--phase clean|faults|floor]
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import Engine
from engine._base._context import current_node, current_run_id
from engine.models import Faults, Request, Response, SimulatedModel
from engine.store import SQLiteStore
from flows.ticket_routing import Ticket, route_ticket

DATA = Path(__file__).resolve().parent.parent / "examples" / "data" / "tickets.jsonl"
LATENCY = (0.025, 0.075)
MEAN_LATENCY = sum(LATENCY) / 2
FAULTS = Faults(
    no_json=0.04,
    unknown_option=0.03,
    wrong_types=0.03,
    rate_limit=0.05,
    server_error=0.02,
    retry_after=0.1,
)


def tickets(n: int) -> Iterator[Ticket]:
    """Yield ``n`` tickets, the example dataset's cycled under fresh ids (never all at once)."""
    with DATA.open(encoding="utf-8") as lines:
        base = [json.loads(line) for line in lines]
    for index, raw in zip(range(n), itertools.cycle(base), strict=False):
        yield Ticket.model_validate({**raw, "id": f"S-{index:05d}"})


class Rounds(SimulatedModel):
    """SimulatedModel that counts each run's model calls in sequence (its transitions)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sequential: Counter[str] = Counter()
        self.branched: set[str] = set()

    async def complete(self, request: Request) -> Response:
        run_id, node = current_run_id.get(), current_node.get()
        if run_id is not None and node is not None:
            if "/branch:" in node.key:
                self.branched.add(run_id)
            else:
                self.sequential[run_id] += 1
        return await super().complete(request)

    def transitions(self) -> float:
        runs = set(self.sequential) | self.branched
        total = sum(self.sequential.values()) + len(self.branched)
        return total / max(1, len(runs))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_phase(n: int, in_flight: int, faults: bool, folder: Path) -> dict[str, Any]:
    store = SQLiteStore(folder / f"soak-{'faults' if faults else 'clean'}.db")
    model = Rounds(seed=17, latency=LATENCY, faults=FAULTS if faults else None)
    engine = Engine(model=model, store=store)
    outcomes: Counter[str] = Counter()
    retries: Counter[str] = Counter()
    suspended: list[str] = []
    t0 = time.perf_counter()
    batch = engine.as_completed(route_ticket, tickets(n), concurrency=in_flight)
    async with batch as runs:
        async for run in runs:
            reason = f" ({run.error.kind})" if run.error is not None else ""
            outcomes[f"{run.status}{reason}"] += 1
            retries.update(run.retries)
            if run.status in ("suspended", "failed"):
                suspended.append(run.run_id)
    wall = time.perf_counter() - t0
    transitions = model.transitions()
    report: dict[str, Any] = {
        "phase": "faults" if faults else "clean",
        "tickets": n,
        "in_flight": in_flight,
        "wall_s": wall,
        "tickets_per_s": n / wall,
        "transitions": transitions,
        "ideal_s": n * transitions * MEAN_LATENCY / in_flight,
        "model_calls": model.calls,
        "faults": dict(model.fault_counts),
        "outcomes": dict(outcomes),
        "retries": dict(retries),
    }
    if suspended:
        report["resumed"] = await resume_all(store, suspended, in_flight)
    report["peak_rss_mb"] = peak_rss_mb()
    await store.close()
    return report


async def resume_all(store: SQLiteStore, run_ids: list[str], in_flight: int) -> dict[str, int]:
    """Resume the stopped runs with a well-behaved model; count how they end."""
    engine = Engine(model=SimulatedModel(seed=99, latency=LATENCY), store=store)
    ends: Counter[str] = Counter()
    limiter = anyio.CapacityLimiter(in_flight)

    async def one(run_id: str) -> None:
        async with limiter:
            ends[(await engine.resume(run_id, flow=route_ticket)).status] += 1

    async with anyio.create_task_group() as tg:
        for run_id in run_ids:
            tg.start_soon(one, run_id)
    return dict(ends)


async def floor(n: int, in_flight: int, transitions: float) -> dict[str, Any]:
    """The same sleeps with no engine: what the event loop alone reaches, through anyio (a
    task per ticket under a capacity limiter) and through plain asyncio (``in_flight``
    workers taking tickets in turn)."""
    import asyncio
    import random

    whole = int(transitions)
    extra = transitions - whole
    rng = random.Random(5)

    def sleeps() -> int:
        return whole + (1 if rng.random() < extra else 0)

    limiter = anyio.CapacityLimiter(in_flight)

    async def one() -> None:
        async with limiter:
            for _ in range(sleeps()):
                await anyio.sleep(rng.uniform(*LATENCY))

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    wall = time.perf_counter() - t0

    todo = iter(range(n))

    async def worker() -> None:
        for _ in todo:
            for _ in range(sleeps()):
                await asyncio.sleep(rng.uniform(*LATENCY))

    t0 = time.perf_counter()
    # Plain asyncio on purpose: this is the floor the issue compares against.
    await asyncio.gather(*(worker() for _ in range(in_flight)))  # noqa: TID251
    plain = time.perf_counter() - t0
    ideal = n * transitions * MEAN_LATENCY / in_flight
    return {"phase": "floor", "wall_s": wall, "asyncio_wall_s": plain, "ideal_s": ideal}


def in_child(phase: str, n: int, in_flight: int, transitions: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--phase", phase, "--tickets", str(n)]
    command += ["--in-flight", str(in_flight), "--transitions", str(transitions)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def show(report: dict[str, Any]) -> None:
    ratio = report["ideal_s"] / report["wall_s"]
    print(f"\n[{report['phase']}] {report['tickets']:,} tickets, {report['in_flight']:,} in flight")
    print(
        f"  wall {report['wall_s']:.2f} s, ideal {report['ideal_s']:.2f} s "
        f"({report['transitions']:.2f} transitions x {MEAN_LATENCY * 1000:.0f} ms): "
        f"{ratio:.2f} of the ideal throughput"
    )
    print(f"  {report['tickets_per_s']:,.0f} tickets/s, peak RSS {report['peak_rss_mb']:.0f} MB")
    print(f"  model calls {report['model_calls']:,}, faults injected {report['faults']}")
    print(f"  retries by layer {report['retries']}")
    print(f"  outcomes {report['outcomes']}")
    if "resumed" in report:
        print(f"  stopped ones resumed with a well-behaved model: {report['resumed']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=1_000)
    parser.add_argument("--phase", choices=["clean", "faults", "floor"])
    parser.add_argument("--transitions", type=float, default=0.0)
    args = parser.parse_args()
    if args.phase == "floor":
        print(json.dumps(anyio.run(floor, args.tickets, args.in_flight, args.transitions)))
        return
    if args.phase is not None:
        with tempfile.TemporaryDirectory() as tmp:
            report = anyio.run(
                run_phase, args.tickets, args.in_flight, args.phase == "faults", Path(tmp)
            )
        print(json.dumps(report))
        return
    clean = in_child("clean", args.tickets, args.in_flight, 0.0)
    show(clean)
    base = in_child("floor", args.tickets, args.in_flight, clean["transitions"])
    print(
        f"  floors (same sleeps, no engine): anyio {base['wall_s']:.2f} s, "
        f"{base['ideal_s'] / base['wall_s']:.2f} of the ideal; plain asyncio "
        f"{base['asyncio_wall_s']:.2f} s, {base['ideal_s'] / base['asyncio_wall_s']:.2f}"
    )
    show(in_child("faults", args.tickets, args.in_flight, 0.0))


if __name__ == "__main__":
    main()
