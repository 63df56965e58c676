"""Instructions a ticket of scenario A, counted by ``valgrind --tool=callgrind``.

Scenario A of ``../shared/bench-anchors`` (``Engine.run`` on ``MemoryStore``, the anchors'
``triage`` flow, tickets one after another): a process running ``--many`` tickets minus one
running ``--few``, divided by their difference, so start-up and imports cancel out. The
count does not depend on the machine's load; with ``PYTHONHASHSEED`` fixed (0 unless set)
it repeats within a few dozen instructions, where a random seed moves it by about 0.6%.

    python bench/instructions.py                 # this checkout
    python bench/instructions.py --tree /tmp/base  # another tree (a git worktree, say)

Needs valgrind, and ``../shared/bench-anchors`` beside the checkout (``--anchors``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

_TICKETS = """
import asyncio, sys
sys.path.insert(0, {anchors!r})
import bench_engine as be
from engine import Engine
from engine.store import MemoryStore

async def main(n):
    engine = Engine(model=be.MODEL, store=MemoryStore())
    for i in range(n):
        run = await engine.run(be.triage, f"T{{i:05d}}", run_id=f"T{{i:05d}}")
        assert run.status == "completed", run

asyncio.run(main(int(sys.argv[1])))
"""


def count(tree: Path, anchors: Path, tickets: int) -> int:
    """Instructions of one process running ``tickets`` tickets on ``tree``'s engine."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
    }
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            _TICKETS.format(anchors=str(anchors)),
            str(tickets),
        ],
        env=env,
        cwd=tree,  # ``-c`` puts the working folder first on the path: the tree's engine
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"valgrind said no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=HERE, help="the project tree to count")
    parser.add_argument("--anchors", type=Path, default=HERE.parent / "shared" / "bench-anchors")
    parser.add_argument("--few", type=int, default=20)
    parser.add_argument("--many", type=int, default=220)
    args = parser.parse_args()
    few = count(args.tree.resolve(), args.anchors.resolve(), args.few)
    many = count(args.tree.resolve(), args.anchors.resolve(), args.many)
    per = (many - few) // (args.many - args.few)
    print(f"{args.tree}: {per:,} instructions a ticket (scenario A, callgrind)")


if __name__ == "__main__":
    main()
