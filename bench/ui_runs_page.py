"""The inspector's runs page over 100,000 runs in SQLite: how long a page takes to answer.

Writes 100,000 runs straight into an SQLite store (through ``create_run``, many at once, so
the store's group commit batches them; a tenth suspended, a few flows), starts the inspector
on a free port in this process, and times whole HTTP requests of the runs page: the first
page, a deep one (read after the key of a run near the oldest), one filtered by status, by
flow and by an id prefix, and the table fragment the page refreshes itself with. Medians
(and the slowest) over N requests each; the target is under 200 ms.

Run with ``python bench/ui_runs_page.py [--runs N] [--requests N]`` (needs the ui extra).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.store import Run, SQLiteStore
from engine.ui import create_app

FLOWS = ("flows.ticket_routing:route_ticket", "flows.incident_triage:triage", "app:other")


async def fill(path: Path, runs: int) -> tuple[float, str]:
    """Write ``runs`` runs; return the page key of the run 1,000 from the oldest."""
    start = time.time() - runs
    async with SQLiteStore(path) as store:
        for first in range(0, runs, 5000):
            async with anyio.create_task_group() as group:
                for i in range(first, min(first + 5000, runs)):
                    status = "suspended" if i % 10 == 0 else "completed"
                    run = Run(
                        run_id=f"run-{i:06d}",
                        flow=FLOWS[i % len(FLOWS)],
                        status=status,
                        input={"ticket": f"ticket {i}"},
                        transitions=3,
                        model_calls=3,
                        created_at=start + i,
                    )
                    group.start_soon(store.create_run, run)
    deep = min(1000, runs - 1)
    return start + deep, f"run-{deep:06d}"


def serve(path: Path) -> tuple[str, object]:
    import socket

    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app(SQLiteStore(path, read_only=True))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{port}", server


def timed(url: str, requests: int) -> list[float]:
    took = []
    for _ in range(requests):
        begun = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as answer:
            body = answer.read()
            if answer.status != 200 or b"<table" not in body:
                raise SystemExit(f"{url} answered {answer.status} without the runs table")
        took.append((time.perf_counter() - begun) * 1000)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.db"
        began = time.perf_counter()
        at, run_id = anyio.run(fill, path, args.runs)
        print(f"wrote {args.runs:,} runs in {time.perf_counter() - began:.1f} s")
        base, server = serve(path)
        deep = urllib.parse.urlencode({"after": f"{at!r}~{run_id}"})
        pages = {
            "first page": "/",
            "deep page (1,000 from the oldest)": f"/?{deep}",
            "status=suspended": "/?status=suspended",
            f"flow={FLOWS[1]}": "/?" + urllib.parse.urlencode({"flow": FLOWS[1]}),
            "id prefix run-0999": "/?q=run-0999",
            "table fragment (live refresh)": "/runs/table",
        }
        timed(base + "/", 3)  # warm the connection pool and the page cache
        print(f"{'page':<40} {'median ms':>10} {'slowest ms':>11}")
        for name, path_query in pages.items():
            took = timed(base + path_query, args.requests)
            print(f"{name:<40} {statistics.median(took):>10.1f} {max(took):>11.1f}")
        server.should_exit = True  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
