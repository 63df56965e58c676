"""Find the flow a command names, and read its input records from a JSONL file.

A flow is ``module:function`` (imported with the working directory on the path, as
``python -m`` would) or a short name listed in the ``FLOWS`` dict of the ``flows`` package.
Each input line is one JSON value, validated against the flow's first parameter; a line
that cannot be read or does not fit is reported with its number and skipped. That holds
for every way a line can fail: bytes that are not UTF-8, JSON that Python refuses (an
integer of 5,000 digits, nesting 100,000 deep), values the stores cannot keep (a lone
surrogate, NaN or Infinity, nesting deeper than ``MAX_DEPTH``), a line over
``MAX_LINE_BYTES``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
import sys
import typing
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from engine._base import RUNTIME_PARAMS
from engine.cli._common import fail

__all__ = [
    "BadLine",
    "FoundFlow",
    "Record",
    "count_lines",
    "flow_name",
    "load_flow",
    "read_records",
    "short_name",
    "short_names",
    "working_dir_importable",
]


#: The longest input line read, in bytes; a longer one is skipped, never held whole.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: How deep a record may nest: the stores keep up to 255 levels, the run around it included.
MAX_DEPTH = 200
_CHUNK = 1 << 16
# A value's place while it is checked: its key and its parent's place (None at the top).
_KeyPath = tuple[object, Any] | None


@dataclass(frozen=True, slots=True)
class FoundFlow:
    """A flow found by name: the function, its stored name and its input's validator."""

    fn: Callable[..., Any]
    name: str
    param: str
    adapter: TypeAdapter[Any]


@dataclass(frozen=True, slots=True)
class Record:
    """One valid input line: the flow's argument and the run id it runs under."""

    line: int
    value: Any
    run_id: str


@dataclass(frozen=True, slots=True)
class BadLine:
    """An input line that was skipped, and why."""

    line: int
    reason: str


def short_names() -> dict[str, str]:
    """Return the short flow names of the ``flows`` package (none when it is absent)."""
    working_dir_importable()
    try:
        module = importlib.import_module("flows")
    except ImportError:
        return {}
    names = getattr(module, "FLOWS", {})
    return dict(names) if isinstance(names, dict) else {}


def short_name(name: str) -> str:
    """Return the short name of a stored flow name when ``flows`` lists one, else the name."""
    return next((k for k, v in short_names().items() if v == name), name)


def flow_name(spec: str) -> str:
    """Return the stored name (``module:qualname``) of the flow ``spec`` names, unimported."""
    if ":" in spec:
        return spec
    names = short_names()
    if spec not in names:
        _unknown(spec, names)
    return names[spec]


def load_flow(spec: str) -> FoundFlow:
    """Import the flow ``spec`` names; stop with what to fix when it cannot be found."""
    target = flow_name(spec)
    module_name, _, qualname = target.partition(":")
    working_dir_importable()
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        fail(f"flow {spec!r}: cannot import module {module_name!r} ({exc}); check the name")
    for part in qualname.split("."):
        if not hasattr(obj, part):
            fail(f"flow {spec!r}: module {module_name!r} has no {qualname!r}; check the name")
        obj = getattr(obj, part)
    if not callable(obj):
        fail(f"flow {spec!r}: {target} is not a function")
    param, adapter = _input_of(obj, target)
    return FoundFlow(obj, target, param, adapter)


def _unknown(spec: str, names: dict[str, str]) -> typing.NoReturn:
    known = ", ".join(sorted(names)) or "none"
    fail(f"unknown flow {spec!r}; give module:function, or one of the short names: {known}")


def working_dir_importable() -> None:
    """Put the working directory on the import path, so its flows import as ``python -m``'s.

    The ``engine`` script, unlike ``python -m``, does not put it there; ``run`` and
    ``resume`` both find a flow of one's own (``myflows.module:flow``) from its folder.
    """
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def _input_of(fn: Callable[..., Any], target: str) -> tuple[str, TypeAdapter[Any]]:
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.name not in RUNTIME_PARAMS and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if not params:
        fail(f"flow {target} takes no input; a flow run from a file takes one argument")
    try:
        hints = typing.get_type_hints(inspect.unwrap(fn))
    except (NameError, TypeError):
        hints = {}
    annotation = hints.get(params[0].name, Any)
    return params[0].name, TypeAdapter(annotation)


def count_lines(path: Path) -> int:
    """Return how many non-blank lines ``path`` holds (the batch's size, for progress)."""
    with _open(path) as file:
        return sum(1 for _ in _lines(file, MAX_LINE_BYTES))


def read_records(
    path: Path,
    flow: FoundFlow,
    *,
    id_field: str | None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[Record | BadLine]:
    """Yield each non-blank line of ``path`` as a :class:`Record` or a :class:`BadLine`.

    A record's run id is its ``id_field`` value when it has one (so running a file twice
    runs each record once), else a fresh id. Whatever a line holds (bytes that are not
    UTF-8, JSON that Python or the stores cannot keep, a line longer than
    ``max_line_bytes``) it is one :class:`BadLine` with its number and the reason, and the
    lines after it are read as usual; reading never raises on what the file holds.
    """
    with _open(path) as file:
        for number, line in _lines(file, max_line_bytes):
            if isinstance(line, int):
                yield BadLine(
                    number, f"too long ({line} bytes; a line holds at most {max_line_bytes})"
                )
            else:
                yield _record(number, line, flow, id_field)


def _lines(file: typing.BinaryIO, limit: int) -> Iterator[tuple[int, bytes | int]]:
    """Yield the number and bytes of each non-blank line, or its size when over ``limit``.

    A line over the limit is read on in chunks and dropped, never held whole.
    """
    number = 0
    while line := file.readline(limit + 1):
        number += 1
        if len(line) <= limit or line.endswith(b"\n"):
            if line.strip():
                yield number, line
            continue
        size, blank = len(line), not line.strip()
        while not line.endswith(b"\n") and (line := file.readline(_CHUNK)):
            size += len(line)
            blank = blank and not line.strip()
        if not blank:
            yield number, size - 1 if line.endswith(b"\n") else size


def _record(number: int, raw: bytes, flow: FoundFlow, id_field: str | None) -> Record | BadLine:
    try:
        data = _parse(raw)
    except _Unfit as exc:
        return BadLine(number, _clip(str(exc)))
    try:
        value = flow.adapter.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or flow.param
        return BadLine(number, _clip(f"does not fit {flow.param}: {where}: {first['msg']}"))
    except Exception as exc:  # a validator of the flow's own that raised something else
        return BadLine(number, _clip(f"does not fit {flow.param}: {type(exc).__name__}: {exc}"))
    run_id = data.get(id_field) if id_field and isinstance(data, dict) else None
    if run_id is None:
        return Record(number, value, uuid.uuid4().hex)
    if "\x00" in (text := str(run_id)):
        return BadLine(number, f"its {id_field} holds a NUL character, which no run id may")
    return Record(number, value, text)


class _Unfit(Exception):
    """Why a line cannot be read as a value the engine can keep."""


def _parse(raw: bytes) -> Any:
    """Return the line's JSON value, or raise :class:`_Unfit` saying why there is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Unfit(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1})"
        ) from None
    try:
        data = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        what = exc.msg.removesuffix(" at")  # "Invalid control character at"
        raise _Unfit(f"not valid JSON ({what} at column {exc.colno})") from None
    except RecursionError:
        raise _Unfit(f"nested deeper than {MAX_DEPTH} levels (the most the stores keep)") from None
    problem = _unkeepable(data)
    if problem is not None:
        raise _Unfit(problem)
    return data


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than Python turns into an integer
        digits = len(text.lstrip("-"))
        limit = sys.get_int_max_str_digits()
        raise _Unfit(f"holds an integer of {digits} digits (the most is {limit})") from None


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Unfit(f"holds a number too large for a float ({_clip(text, 40)})")
    return value


def _constant(name: str) -> float:
    raise _Unfit(f"holds {name}, which is not a JSON number")


def _unkeepable(data: Any) -> str | None:
    """Say where ``data`` holds what the stores cannot keep (a lone surrogate, deep nesting).

    One pass over the value, without recursion; a path is built only for what is reported.
    """
    stack: list[tuple[Any, int, _KeyPath]] = [(data, 0, None)]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, str):
            if not _encodable(value):
                return f"{_where(path)} holds a lone surrogate ({_shown(value)}), which is not text"
        elif isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels (the most the stores keep)"
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and not _encodable(key):
                    return f"{_where(path)} has a key holding a lone surrogate ({_shown(key)})"
                stack.append((item, depth + 1, (key, path)))
    return None


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _where(path: _KeyPath) -> str:
    """Return a value's place, as ``items[0].sku``; the top value is ``the value``."""
    keys: list[object] = []
    while path is not None:
        key, path = path
        keys.append(key)
    parts = [f"[{k}]" if isinstance(k, int) else f".{_shown(str(k), 40)}" for k in keys[::-1]]
    if parts and parts[0].startswith("."):
        parts[0] = parts[0][1:]
    return "".join(parts) or "the value"


def _shown(text: str, limit: int = 60) -> str:
    # Surrogates and control characters as escapes, so the reason prints on one line anywhere.
    return _clip(repr(text)[1:-1], limit)


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _open(path: Path) -> typing.BinaryIO:
    # Bytes: a line that is not UTF-8 is one bad line, not the end of the batch.
    try:
        return path.open("rb")
    except OSError as exc:
        fail(f"cannot read the input {path}: {exc.strerror or exc}; check the path")
