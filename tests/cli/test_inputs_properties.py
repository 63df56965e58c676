"""Properties of the input reader: whatever a file holds, it never raises, reads every line, in
linear time."""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pydantic_core
from cli_support import CLEAN, Cli, ticket
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from engine.cli._inputs import MAX_DEPTH, MAX_LINE_BYTES, BadLine, FoundFlow, Record, read_records


def _flow(annotation: Any) -> FoundFlow:
    return FoundFlow(lambda value: value, "tests:flow", "ticket", TypeAdapter(annotation))


ANY = _flow(Any)
TICKETS = _flow(dict[str, int | str | list[int]])

# Pieces of hostile lines: what Python's parser refuses, what the stores cannot keep, and
# what is not text at all.
_HOSTILE = [
    "9" * 5000, "-" + "1" * 4301, "[" * 100_000 + "]" * 100_000, '{"a":' * 3000 + "1" + "}" * 3000,
    "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), '"\\ud800"', '{"\\udfff": 1}', '["\\udc00x"]',
    "NaN", "-Infinity", "[Infinity]", "1e400", "-1e999", '"a\\u0000b"', '"a\x00b"',
    '{"id": "\\u0000"}', "\x00", '{"id": 1', "{}", "[]", '""', "null", '{"id": "T-1", "n": 3}',
    '{"id": [1, 2]}', '\ufeff{"a": 1}', "\t", "\r", " ",
]  # fmt: skip
_BYTES = [b"\xff", b"\xfe\xff", b"\xed\xa0\x80", b"\xc3", b"\x80abc", b"\xf4\x90\x80\x80", b"\r"]

# Text with every code point, lone surrogates included, written as UTF-8 where it can be and
# with the surrogates' own bytes (which no UTF-8 reader accepts) where it cannot.
any_text = st.text(st.characters(blacklist_categories=()), max_size=40).map(
    lambda text: text.encode("utf-8", "surrogatepass")
)
hostile = st.sampled_from(_HOSTILE).map(lambda text: text.encode("utf-8", "surrogatepass"))
lines = st.one_of(
    st.binary(max_size=60),
    any_text,
    hostile,
    st.sampled_from(_BYTES),
    st.lists(st.one_of(hostile, st.sampled_from(_BYTES), any_text), max_size=4).map(b"".join),
).map(lambda line: line.replace(b"\n", b" "))

plain = st.text(st.characters(codec="utf-8"), max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | plain,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain, inner, max_size=4),
    max_leaves=12,
)


@contextmanager
def _file(data: bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.jsonl"
        path.write_bytes(data)
        yield path


def _non_blank(data: bytes) -> list[int]:
    """The numbers of the lines a reader must report: every one that is not blank."""
    return [n for n, line in enumerate(data.split(b"\n"), start=1) if line.strip()]


def _read(data: bytes, flow: FoundFlow, **options: Any) -> list[Record | BadLine]:
    with _file(data) as path:
        return list(read_records(path, flow, id_field="id", **options))


def _check_results(results: list[Record | BadLine], data: bytes) -> None:
    assert [item.line for item in results] == _non_blank(data)
    for item in results:
        if isinstance(item, BadLine):
            # Printable anywhere, on one line, and short.
            item.reason.encode("utf-8")
            assert "\n" not in item.reason
            assert 0 < len(item.reason) <= 300
        else:
            # What was read can be kept: it is JSON text a store writes and reads back.
            stored = pydantic_core.to_json(item.value)
            assert json.loads(stored) == item.value
            assert item.run_id
            assert "\x00" not in item.run_id


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(lines, max_size=12),
    st.sampled_from([b"\n", b"\r\n"]),
    st.sampled_from([ANY, TICKETS]),
    st.sampled_from([48, MAX_LINE_BYTES]),
)
def test_reading_any_file_never_raises_and_reports_every_line(
    file_lines: list[bytes], end: bytes, flow: FoundFlow, limit: int
) -> None:
    data = end.join(file_lines)
    started = time.perf_counter()
    results = _read(data, flow, max_line_bytes=limit)
    elapsed = time.perf_counter() - started
    _check_results(results, data)
    # Bounded examples, bounded time: no line costs more than its bytes (nesting 100,000 deep
    # and 5,000 digits included) plus a fixed overhead.
    assert elapsed < 1.0 + len(data) * 1e-6


@settings(max_examples=300, deadline=None)
@given(st.lists(json_values, max_size=8))
def test_lines_of_keepable_json_are_records_of_their_values(values: list[Any]) -> None:
    data = b"\n".join(json.dumps(value).encode() for value in values)
    results = _read(data, ANY)
    assert all(isinstance(item, Record) for item in results)
    assert [item.value for item in results if isinstance(item, Record)] == values
    for item, value in zip(results, values, strict=True):
        assert isinstance(item, Record)
        if isinstance(value, dict) and value.get("id") is not None:
            assert item.run_id == str(value["id"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(json_values.map(json.dumps).map(str.encode), lines), max_size=8))
def test_a_bad_line_never_hides_the_lines_after_it(before: list[bytes]) -> None:
    data = b"\n".join([*before, b'{"id": "last"}'])
    results = _read(data, ANY)
    _check_results(results, data)
    final = results[-1]
    assert isinstance(final, Record)
    assert final.run_id == "last"


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=200), st.binary(min_size=1, max_size=20))
def test_a_line_over_the_limit_is_one_bad_line_of_its_size(extra: int, tail: bytes) -> None:
    limit = 64
    long = (b"x" * (limit + extra) + tail).replace(b"\n", b"y")
    data = b'{"id": "a"}\n' + long + b'\n{"id": "b"}\n'
    results = _read(data, ANY, max_line_bytes=limit)
    assert [type(item) for item in results] == [Record, BadLine, Record]
    bad = results[1]
    assert isinstance(bad, BadLine)
    assert bad.line == 2
    assert f"{len(long)} bytes" in bad.reason


def test_each_kind_of_unreadable_line_says_why() -> None:
    cases = {
        "9" * 5000: "integer of 5000 digits",
        "[" * 100_000 + "]" * 100_000: "nested deeper than",
        '"\\ud800"': "lone surrogate",
        '{"a": ["\\udc00"]}': "a[0] holds a lone surrogate",
        "NaN": "NaN",
        "[1e400]": "too large",
        '"a\x00"': "not valid JSON",
        '{"id": "T\\u0000"}': "NUL",
    }
    data = b"\n".join(text.encode() for text in cases) + b"\n\xff\xfe\n" + b"x" * 300_001
    results = _read(data, ANY, max_line_bytes=300_000)
    assert all(isinstance(item, BadLine) for item in results)
    reasons = [item.reason for item in results if isinstance(item, BadLine)]
    for reason, expected in zip(reasons, [*cases.values(), "not UTF-8", "too long"], strict=True):
        assert expected in reason


def _hostile_file(copies: int) -> bytes:
    one = [
        "9" * 4000,
        "[" * 5000 + "]" * 5000,
        '{"id": "x", "a": "\\ud800"}',
        '{"id": "y", "s": "' + "é" * 2000 + '"}',
        "NaN",
    ]
    return "\n".join(one * copies).encode("utf-8", "surrogatepass")


def test_reading_time_grows_linearly_with_the_file() -> None:
    def best_of_three(data: bytes) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            assert len(_read(data, ANY)) == data.count(b"\n") + 1
            times.append(time.perf_counter() - started)
        return min(times)

    small, large = _hostile_file(20), _hostile_file(160)
    best_of_three(small)  # warm up
    # Eight times the lines: a reader linear in its input takes about eight times as long;
    # a quadratic one, sixty-four.
    assert best_of_three(large) < 24 * best_of_three(small) + 0.05


def test_engine_run_skips_each_unreadable_line_and_runs_the_rest(cli: Cli, tmp_path: Path) -> None:
    bad = ["9" * 5000, "[" * 100_000 + "]" * 100_000, '"\\ud800"', "NaN", '"a\x00"']
    data = "\n".join([json.dumps(ticket(1)), *bad, json.dumps(ticket(2))]).encode() + b"\n\xff\n"
    (tmp_path / "hostile.jsonl").write_bytes(data)
    result = cli("run", "ticket_routing", "-i", "hostile.jsonl", "-m", CLEAN)
    assert "Traceback" not in result.output
    for number in range(2, 7):
        assert f"line {number}: " in result.stdout
    assert "line 8: not UTF-8 text" in result.stdout
    assert re.search(r"input lines skipped\s*│\s*6", result.stdout)
    assert re.search(r"completed\s*│\s*2", result.stdout)
