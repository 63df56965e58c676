"""Compare one benchmark on two trees of the project, in ABBA pairs of processes.

Each pair runs the benchmark once in this checkout and once in the other tree (a
``git worktree`` of an earlier commit, say), in the order ABBA, BAAB, ... so that the
machine's drift falls on both alike. Each tree's benchmark imports its own ``engine``. The
figure is read from each run's output, and the medians of the per-pair ratios (this tree
over the other) are printed, one line per figure found.

    git worktree add ../base 31c3241
    python bench/compare_trees.py ../base --pairs 4 \\
        --figure 'journaled +([0-9.]+) +overhead' -- bench/journal_overhead.py

``--figure`` is a regular expression whose first group is a number; every match in the
output is a figure of its own (a benchmark that prints several lines of one form gives
several). ``--key`` reads a key of the last JSON line the benchmark prints instead.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def figures(output: str, pattern: str | None, key: str | None) -> list[float]:
    """Return the figures one run printed."""
    if key is not None:
        line = [text for text in output.splitlines() if text.startswith("{")][-1]
        return [float(json.loads(line)[key])]
    assert pattern is not None
    return [float(found) for found in re.findall(pattern, output, flags=re.MULTILINE)]


def run(tree: Path, command: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, *command], cwd=tree, capture_output=True, text=True, check=True
    )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("other", type=Path, help="the tree to compare this checkout with")
    parser.add_argument("--pairs", type=int, default=4, help="ABBA pairs of runs")
    found = parser.add_mutually_exclusive_group(required=True)
    found.add_argument("--figure", help="a regular expression; its first group is a figure")
    found.add_argument("--key", help="a key of the last JSON line the benchmark prints")
    parser.add_argument("command", nargs="+", help="the benchmark and its arguments, after --")
    args = parser.parse_args()
    trees = {"this": HERE, "other": args.other.resolve()}
    seen: dict[str, list[list[float]]] = {"this": [], "other": []}
    for pair in range(args.pairs):
        order = ("other", "this") if pair % 2 == 0 else ("this", "other")
        for name in order:
            seen[name].append(figures(run(trees[name], args.command), args.figure, args.key))
    print(f"{' '.join(args.command)}: this tree against {trees['other']}, {args.pairs} pairs")
    for index in range(len(seen["this"][0])):
        mine = [values[index] for values in seen["this"]]
        theirs = [values[index] for values in seen["other"]]
        ratios = sorted(a / b for a, b in zip(mine, theirs, strict=True))
        print(
            f"  figure {index + 1}: this {statistics.median(mine):.4g}, "
            f"other {statistics.median(theirs):.4g}; this/other per pair: "
            f"median {statistics.median(ratios):.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f})"
        )


if __name__ == "__main__":
    main()
