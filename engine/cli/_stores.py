"""Open the store a ``--store`` URL names, or say clearly why it cannot be opened.

Accepted: ``sqlite:///relative.db``, ``sqlite:////absolute.db``, a bare file path,
``memory://`` (runs kept in this process only) and ``postgresql://user@host/db`` (with
``?schema=name`` for a schema of its own) when the PostgreSQL store is installed (the
``postgres`` extra).

Commands that only read open an SQLite file read-only, so a read-only file (or one on a
read-only disk) can be looked into; a command that writes stops at once, before any run
starts, when the file is read-only or damaged. Whatever fails in the store while a command
uses it stops the command with one line that names the store and what to do, and exit
status 4 (``EXIT_STORE``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import engine.store as stores
from engine._base import EngineError, JournalError
from engine.cli._common import EXIT_STORE, fail
from engine.store import MemoryStore, Run, SQLiteStore, Store

__all__ = ["StoreURL", "find_run", "open_store", "parse_store_url", "same_store"]

_POSTGRES = ("postgresql://", "postgres://", "postgresql+psycopg://")


@dataclass(frozen=True, slots=True)
class StoreURL:
    """A parsed ``--store`` value."""

    kind: Literal["sqlite", "memory", "postgres"]
    target: str
    url: str


def parse_store_url(url: str) -> StoreURL:
    """Parse a ``--store`` value; an unknown scheme stops the command with the valid forms."""
    if url.startswith("sqlite:///"):
        return StoreURL("sqlite", url[len("sqlite:///") :], url)
    if url in ("memory://", "memory:"):
        return StoreURL("memory", "", url)
    if url.startswith(_POSTGRES):
        return StoreURL("postgres", url, url)
    if "://" in url:
        fail(
            f"--store {url!r}: unknown kind of store; use sqlite:///path/to/file.db, a file "
            "path, memory://, or postgresql://user@host:5432/dbname"
        )
    return StoreURL("sqlite", url, url)


def same_store(a: str, b: str) -> bool:
    """Whether two ``--store`` values name the same store (``engine.db`` is ``sqlite:///engine.db``)."""
    first, second = parse_store_url(a), parse_store_url(b)
    if first.kind != second.kind:
        return False
    if first.kind == "sqlite":
        return (
            Path(first.target).expanduser().resolve() == Path(second.target).expanduser().resolve()
        )
    return first.target == second.target


@asynccontextmanager
async def open_store(
    url: str, *, create: bool = False, read_only: bool = False
) -> AsyncIterator[Store]:
    """Open the store ``url`` names, check it answers, and close it afterwards.

    Args:
        url: A ``--store`` value.
        create: Whether a missing SQLite file may be created (``engine run``); commands that
            only read say that there is no store instead.
        read_only: The command only reads: an SQLite file is opened read-only and nothing
            is written to it. Otherwise an SQLite file that is read-only or damaged stops
            the command here, before it starts anything.

    Raises:
        CliError: The store cannot be opened, or failed while the command used it (exit
            status ``EXIT_STORE``).
    """
    spec = parse_store_url(url)
    store = _make(spec, create=create, read_only=read_only)
    try:
        await _check(store, spec)
        try:
            yield store
        except Exception as exc:
            fault = _store_fault(exc)
            if fault is None:
                raise
            fail(_fault_line(spec, fault, opening=False), code=EXIT_STORE)
    finally:
        await store.close()


def _make(spec: StoreURL, *, create: bool, read_only: bool) -> Store:
    if spec.kind == "memory":
        return MemoryStore()
    if spec.kind == "postgres":
        return _postgres(spec)
    path = Path(spec.target).expanduser()
    if not spec.target:
        fail(f"--store {spec.url!r} names no file; write sqlite:///engine.db")
    if path.is_dir():
        fail(f"--store {spec.url!r} is a folder; name a file in it, such as {path / 'engine.db'}")
    if not path.exists():
        if not create:
            fail(
                f"no store at {path}: nothing has run with this store yet; start with "
                "`engine run`, or point --store (or ENGINE_STORE) at an existing one"
            )
        if not path.parent.exists():
            fail(f"cannot create the store {path}: the folder {path.parent} does not exist")
        return SQLiteStore(path)
    if read_only:
        return SQLiteStore(path, read_only=True)
    why = _read_only_because(path)
    if why is not None:
        fail(
            f"the store {spec.url!r} is read-only ({why}) and this command writes to it, so "
            "nothing was done; make it writable, or point --store at a copy (`engine runs`, "
            "`show` and `graph` read it as it is)",
            code=EXIT_STORE,
        )
    # Checked before the first write, so that a damaged file is left as it is.
    return SQLiteStore(path, check=True)


def _read_only_because(path: Path) -> str | None:
    """Say why a command may not write the SQLite file at ``path``, or ``None`` if it may."""
    # The permission bits as well as access(): root may write any file, but a file marked
    # read-only (chmod a-w) is one its owner meant to be left alone.
    if not path.stat().st_mode & 0o222:
        return "its write permission is off"
    if not os.access(path, os.W_OK):
        return "this user may not write the file"
    folder = path.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} may not be written, and SQLite keeps its log beside it"
    for side in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if side.exists() and not os.access(side, os.W_OK):
            return f"{side.name} beside it may not be written"
    return None


def _postgres(spec: StoreURL) -> Store:
    try:
        postgres = getattr(stores, "PostgresStore", None)
    except ImportError as exc:  # the store is there, its driver is not
        fail(f"--store {spec.url!r} needs the postgres extra: pip install -e '.[postgres]' ({exc})")
    if postgres is None:
        fail(
            f"--store {spec.url!r}: this build has no PostgreSQL store; use an SQLite file "
            "(sqlite:///engine.db) on one machine"
        )
    try:
        made: Store = postgres(spec.target)
    except (ValueError, ImportError) as exc:
        fail(f"--store {spec.url!r}: {exc}")
    return made


async def _check(store: Store, spec: StoreURL) -> None:
    try:
        await store.list_runs(limit=1)
    except (EngineError, sqlite3.Error, OSError, ImportError) as exc:
        fail(_fault_line(spec, exc, opening=True), code=EXIT_STORE)


def _store_fault(exc: BaseException) -> BaseException | None:
    """Return the store's error that ``exc`` is or holds (a task group's), else ``None``."""
    if isinstance(exc, JournalError | sqlite3.Error):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        faults = [_store_fault(inner) for inner in exc.exceptions]
        if faults and all(fault is not None for fault in faults):
            return faults[0]
    return None


def _fault_line(spec: StoreURL, exc: BaseException, *, opening: bool) -> str:
    """Return the one line for a store that failed: which store, what failed, what to do."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if spec.kind == "sqlite" and text.startswith("SQLite store "):
        return text  # the SQLite store names the file, what is wrong and what to do
    if opening:
        return f"the store {spec.url!r} is unreachable: {text}; check the path or URL and access"
    return f"the store {spec.url!r} failed: {text}; check it answers, then run the command again"


async def find_run(store: Store, run_id: str, url: str) -> Run:
    """Return the run with this id, or the one run whose id starts with it."""
    run = await store.get_run(run_id)
    if run is not None:
        return run
    matches = [r for r in await store.list_runs() if r.run_id.startswith(run_id)] if run_id else []
    if len(matches) > 1:
        fail(f"{run_id!r} is the start of {len(matches)} run ids; give more of the id")
    if not matches:
        fail(f"no run {run_id!r} in {url}; list the stored runs with `engine runs`")
    return matches[0]
