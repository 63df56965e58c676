"""Find the flow a command names, and read its input records from a JSONL file.

A flow is ``module:function`` (imported with the working directory on the path, as
``python -m`` would) or a short name listed in the ``FLOWS`` dict of the ``flows`` package.
Each input line is one JSON value, validated against the flow's first parameter; a line
that cannot be read or does not fit is reported with its number and skipped.
"""

from __future__ import annotations

import importlib
import inspect
import json
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
]


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
    _working_dir_importable()
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
    _working_dir_importable()
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


def _working_dir_importable() -> None:
    # The `engine` script, unlike `python -m`, does not put the working directory on the path.
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
    with _open(path) as lines:
        return sum(1 for line in lines if line.strip())


def read_records(
    path: Path, flow: FoundFlow, *, id_field: str | None
) -> Iterator[Record | BadLine]:
    """Yield each non-blank line of ``path`` as a :class:`Record` or a :class:`BadLine`.

    A record's run id is its ``id_field`` value when it has one (so running a file twice
    runs each record once), else a fresh id.
    """
    with _open(path) as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                yield _record(number, line, flow, id_field)


def _record(number: int, raw: bytes, flow: FoundFlow, id_field: str | None) -> Record | BadLine:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return BadLine(number, "not UTF-8 text")
    except json.JSONDecodeError as exc:
        return BadLine(number, f"not valid JSON ({exc.msg} at column {exc.colno})")
    try:
        value = flow.adapter.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or flow.param
        return BadLine(number, f"does not fit {flow.param}: {where}: {first['msg']}")
    run_id = data.get(id_field) if id_field and isinstance(data, dict) else None
    return Record(number, value, str(run_id) if run_id is not None else uuid.uuid4().hex)


def _open(path: Path) -> typing.BinaryIO:
    # Bytes: a line that is not UTF-8 is one bad line, not the end of the batch.
    try:
        return path.open("rb")
    except OSError as exc:
        fail(f"cannot read the input {path}: {exc.strerror or exc}; check the path")
