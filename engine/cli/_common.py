"""What every command shares: the consoles, failing with a fix, running async bodies, picks."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import anyio
import typer
from rich.console import Console
from rich.text import Text

from engine._base import mask_secrets

__all__ = [
    "DEFAULT_STORE",
    "STATUS_STYLE",
    "CliError",
    "abort",
    "err",
    "fail",
    "note",
    "out",
    "parse_pick",
    "run_async",
    "store_option",
]

T = TypeVar("T")

#: The store every command uses unless ``--store`` or ``ENGINE_STORE`` names another.
DEFAULT_STORE = "sqlite:///engine.db"

#: How each run status is coloured, wherever a command prints one.
STATUS_STYLE = {
    "completed": "green",
    "suspended": "yellow",
    "failed": "red",
    "cancelled": "magenta",
    "running": "cyan",
    "queued": "dim",
}

#: Results (tables, trees, Mermaid) go to stdout; progress, notes and errors to stderr.
out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


class CliError(Exception):
    """A problem the user can fix: printed as one ``error:`` line, exit status 2."""

    def __init__(self, message: str, *, code: int = 2) -> None:
        self.code = code
        super().__init__(message)


def fail(message: str, *, code: int = 2) -> NoReturn:
    """Stop the command with ``message`` (what went wrong and how to fix it)."""
    raise CliError(message, code=code)


def abort(message: str, *, code: int = 2) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    err.print(Text.assemble(("error: ", "bold red"), mask_secrets(message)), soft_wrap=True)
    raise typer.Exit(code)


def run_async(body: Callable[[], Awaitable[T]]) -> T:
    """Run an async command body; a :class:`CliError` becomes a message and an exit status."""
    try:
        return anyio.run(body)
    except CliError as exc:
        abort(str(exc), code=exc.code)


def note(message: str) -> None:
    """Print ``note: message`` on stderr (something the user should know, not an error)."""
    err.print(Text.assemble(("note: ", "yellow"), mask_secrets(message)), soft_wrap=True)


def store_option() -> str:
    """Return the default store URL: ``ENGINE_STORE`` when set, else an SQLite file here."""
    return os.environ.get("ENGINE_STORE") or DEFAULT_STORE


def parse_pick(text: str) -> dict[str, Any]:
    """Read a ``--pick`` (a person's decision, as JSON); stop with the fix when it is not one.

    Raises:
        CliError: ``text`` is not JSON, or not an object naming the option by ``call``.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f'--pick is not valid JSON ({exc.msg}); write it like \'{{"call": "close"}}\'')
    if not isinstance(data, dict) or not isinstance(data.get("call"), str):
        fail('--pick must be a JSON object naming the option: {"call": "close", "args": {}}')
    return data
