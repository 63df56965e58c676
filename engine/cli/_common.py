"""What every command shares: the consoles, the exit statuses, failing with a fix, picks.

Every command ends with one of the exit statuses below (the README's table): ``engine run``,
``resume``, ``recover``, ``submit``, ``worker`` and ``prune`` alike, so cron and CI can tell
what happened without reading the output.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import anyio
import typer
from rich.console import Console
from rich.text import Text

from engine._base import mask_secrets

__all__ = [
    "DEFAULT_STORE",
    "EXIT_INTERRUPTED",
    "EXIT_NOTHING_STARTED",
    "EXIT_OK",
    "EXIT_STOPPED",
    "EXIT_STORE",
    "EXIT_USAGE",
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

#: Every run (or every line of the file) completed; or there was nothing to do.
EXIT_OK = 0
#: Some runs stopped (suspended, failed, cancelled) or wait for a person, or some lines could
#: not run; the rest did.
EXIT_STOPPED = 1
#: Bad usage: an unknown option, a missing argument, a value that does not fit (click's 2).
EXIT_USAGE = 2
#: Nothing could start: every line bad, every run held by another process, or the like.
EXIT_NOTHING_STARTED = 3
#: The store is unreachable or damaged.
EXIT_STORE = 4
#: Ctrl-C or SIGTERM stopped the command (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

#: How each run status is coloured, wherever a command prints one.
STATUS_STYLE = {
    "completed": "green",
    "waiting": "blue",
    "suspended": "yellow",
    "failed": "red",
    "cancelled": "magenta",
    "running": "cyan",
    "queued": "dim",
}

#: Results (tables, trees, Mermaid) go to stdout; progress, notes and errors to stderr.
#: Neither reads a string as markup or ``:name:`` as an emoji code: ids, flows, URLs and what
#: a model wrote are printed as written; styles come as ``Text`` (or a column's own markup).
out = Console(highlight=False, soft_wrap=False, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, markup=False, emoji=False)


class CliError(Exception):
    """A problem the user can fix: printed as one ``error:`` line, exit status ``code``."""

    def __init__(self, message: str, *, code: int = EXIT_USAGE) -> None:
        self.code = code
        super().__init__(message)


def fail(message: str, *, code: int = EXIT_USAGE) -> NoReturn:
    """Stop the command with ``message`` (what went wrong and how to fix it)."""
    raise CliError(message, code=code)


def abort(message: str, *, code: int = EXIT_USAGE) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    err.print(Text.assemble(("error: ", "bold red"), mask_secrets(message)), soft_wrap=True)
    raise typer.Exit(code)


def run_async(body: Callable[[], Awaitable[T]]) -> T:
    """Run an async command body; every error it stops on becomes one line and an exit status.

    A :class:`CliError` says its own fix; a store that fails mid-command (a damaged SQLite
    file, a full disk) and a Ctrl-C that reaches here get a line of their own.
    """
    try:
        return anyio.run(body)
    except CliError as exc:
        abort(str(exc), code=exc.code)
    except sqlite3.Error as exc:
        abort(
            f"the store failed: {exc}; check the file (`engine runs` reads it) or restore a copy",
            code=EXIT_STORE,
        )
    except KeyboardInterrupt:
        abort(
            "interrupted; `engine resume --all-cancelled` continues the runs it stopped",
            code=EXIT_INTERRUPTED,
        )


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
