"""Fixtures shared across test folders: a PostgreSQL database and a fresh schema per test.

The PostgreSQL tests run against ``ENGINE_TEST_PG_DSN`` (default: the local server at
127.0.0.1:5432, database ``test``). Where none answers, they skip and say how to point them
at one.

The suite runs the engine as it is built here: with the modules ``make native`` compiled,
or as pure Python with ``ENGINE_PURE_PYTHON=1`` (``make test-pure``). It refuses to start on
compiled modules out of step with their sources, which would test the code as it was.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from native_modules import native_tool, pure_python


def pytest_configure(config: pytest.Config) -> None:
    if pure_python():
        return
    stale = native_tool().stale()
    if stale:
        raise pytest.UsageError(
            f"compiled modules out of step with their sources: {', '.join(stale)} (changed "
            "since compiled, or not compiled with the rest); run `make native` to compile "
            "them again (or ENGINE_PURE_PYTHON=1 to test the sources)"
        )


PG_DSN_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"


def _reachable(dsn: str) -> str | None:
    """Return why ``dsn`` cannot be used, or ``None`` when a server answers there."""
    try:
        import psycopg
    except ImportError:
        return 'psycopg is not installed (pip install -e ".[dev]")'
    try:
        with psycopg.connect(dsn, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"no PostgreSQL answers at {dsn} ({str(exc).strip().splitlines()[0]})"
    return None


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """The DSN of a reachable PostgreSQL database; skips the test when there is none."""
    dsn = os.environ.get("ENGINE_TEST_PG_DSN") or PG_DSN_DEFAULT
    why = _reachable(dsn)
    if why is not None:
        pytest.skip(
            f"{why}; point the PostgreSQL tests at a database with "
            "ENGINE_TEST_PG_DSN=postgresql://user@host:5432/dbname"
        )
    return dsn


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    """A schema name of this test's own; the schema is dropped (with its tables) afterwards."""
    import psycopg

    name = f"engine_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
