"""Extraction time on adversarial replies: medians of repeated runs of ``find_pick``.

Each case is built once; the table gives its size and the median time of one extraction.
The target is linear time under 50 ms per MB whatever the reply holds. Two yardsticks close
the table, timed in the same run: the C JSON parser reading 1 MB of dense objects, and a
Python loop that does nothing but visit each brace of the densest case (the least any
extractor written in Python does with such a reply).

Run with ``python bench/_extraction.py``.
"""

from __future__ import annotations

import functools
import json
import random
import re
import statistics
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine._decision._extract import find_pick

MB = 1 << 20
PICK = '{"call": "refund", "args": {"amount": 12.5, "reason": "broken on arrival"}}'


def _prose(size: int) -> str:
    words = ["the", "model", "weighs", "each", "option,", "then", "{sometimes}", "'quotes'"]
    rng = random.Random(7)
    parts: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(words)
        parts.append(word)
        total += len(word) + 1
    return " ".join(parts)


def _noise(size: int) -> str:
    rng = random.Random(11)
    alphabet = string.printable + "{}\"'" * 4
    return "".join(rng.choices(alphabet, k=size))


def _cases() -> list[tuple[str, str]]:
    return [
        ("100k '{'", "{" * 100_000),
        ("unclosed ```json + 100k spaces", "```json\n" + " " * 100_000),
        ("5000-deep '{'/'}'", "{" * 5000 + "}" * 5000),
        ('5000-deep {"a": ...}', '{"a":' * 5000 + "1" + "}" * 5000),
        ("200 KB prose, pick last", _prose(200_000) + "\n" + PICK),
        ('1 MB dense {"a":1}', '{"a":1} ' * (MB // 8)),
        ("1 MB printable noise", _noise(MB)),
        # Beyond the brief: the same bulk, but with a pick at the end so nothing is skipped.
        ('1 MB dense {"a":1}, pick last', '{"a":1} ' * (MB // 8) + PICK),
        ("1 MB noise, pick last", _noise(MB) + "\n" + PICK),
        ('1 MB dense {"call":1}', '{"call":1} ' * (MB // 11)),
        # Worst cases found so far: a structural token every few bytes, each a scan event.
        ('1 MB nested {"call":{', '{"call":{' * (MB // 9)),
        ('1 MB unclosed {"call":"a","args":{', '{"call":"a","args":{' * (MB // 20)),
        # Python literals that fail late: ast.literal_eval reads at most 80 KB of a reply.
        (
            "1 MB failing Python literals, pick last",
            "Note: " + "{'call': None, 'x': [1, 1, 1, 1] oops} " * (MB // 40) + PICK,
        ),
    ]


def _visit_braces(text: str) -> int:
    count = 0
    for _ in re.finditer(r"[{}]", text):
        count += 1
    return count


def _yardsticks() -> list[tuple[str, str, Callable[[str], object]]]:
    dense = json.dumps([{"a": 1}] * (MB // 10))
    return [
        ("yardstick: json.loads, 1 MB of objects", dense, json.loads),
        ('yardstick: visit each brace, {"call":{', '{"call":{' * (MB // 9), _visit_braces),
    ]


def _median_ms(func: Callable[[], object], rounds: int) -> float:
    times: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def run_extraction_bench(rounds: int = 7) -> list[tuple[str, float, float]]:
    """Time ``find_pick`` on each adversarial case.

    Returns:
        Rows of (case name, size in bytes, median milliseconds).
    """
    cases: list[tuple[str, str, Callable[[str], object]]] = [
        (name, reply, find_pick) for name, reply in _cases()
    ]
    rows: list[tuple[str, float, float]] = []
    for name, reply, func in [*cases, *_yardsticks()]:
        size = float(len(reply.encode()))
        rows.append((name, size, _median_ms(functools.partial(func, reply), rounds)))
    return rows


def main() -> None:
    """Print the extraction table."""
    print(f"{'case':<34} {'size':>10} {'median ms':>10} {'ms/MB':>8}")
    for name, size, ms in run_extraction_bench():
        print(f"{name:<34} {size:>10.0f} {ms:>10.2f} {ms / (size / MB):>8.1f}")


if __name__ == "__main__":
    main()
