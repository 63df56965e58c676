"""What only the PostgreSQL store does: its schema versions, its DSN, its errors."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import anyio
import psycopg
import pytest

from engine import Engine, JournalError
from engine.models import ScriptedModel
from engine.store import PostgresStore, Run
from engine.store._postgres_sql import MIGRATIONS


async def _version(dsn: str, schema: str) -> str:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cursor = await conn.execute(
            f"SELECT value FROM {schema}.engine_meta WHERE key = 'schema_version'"
        )
        row = await cursor.fetchone()
    assert row is not None
    return str(row[0])


async def test_store_creates_its_schema_and_records_the_version(
    pg_dsn: str, pg_schema: str
) -> None:
    async with PostgresStore(pg_dsn, schema=pg_schema) as store:
        await store.create_run(Run(run_id="r1", flow="m:f"))
    assert await _version(pg_dsn, pg_schema) == str(len(MIGRATIONS))
    async with PostgresStore(f"{pg_dsn}?schema={pg_schema}") as again:  # reopened: no migration
        assert [r.run_id for r in await again.list_runs()] == ["r1"]


async def test_stores_opening_a_new_schema_at_once_migrate_it_once(
    pg_dsn: str, pg_schema: str
) -> None:
    stores = [PostgresStore(pg_dsn, schema=pg_schema, pool_max=2) for _ in range(4)]
    async with anyio.create_task_group() as tg:
        for store in stores:
            tg.start_soon(store.open)
    for store in stores:
        await store.close()
    assert await _version(pg_dsn, pg_schema) == str(len(MIGRATIONS))


async def test_a_newer_schema_is_refused_with_the_fix(pg_dsn: str, pg_schema: str) -> None:
    async with PostgresStore(pg_dsn, schema=pg_schema):
        pass
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute(f"UPDATE {pg_schema}.engine_meta SET value = '99'")
    store = PostgresStore(pg_dsn, schema=pg_schema)
    with pytest.raises(JournalError, match=r"schema version 99, newer .* upgrade the engine"):
        await store.open()
    await store.close()


async def test_an_unreachable_server_is_a_journal_error() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/test", timeout_s=1.0)
    with pytest.raises(JournalError, match=r"did not answer|failed"):
        await store.get_run("r1")
    await store.close()


@pytest.mark.parametrize(
    ("dsn", "cause"),
    [
        pytest.param("postgresql://postgres:s3cret-pw@127.0.0.1:1/test", "refused", id="port"),
        pytest.param(
            "postgresql://postgres:s3cret-pw@127.0.0.1:5432/no_such_db_here",
            'database "no_such_db_here" does not exist',
            id="database",
        ),
        pytest.param(
            "postgresql://postgres:s3cret-pw@no-such-host.invalid:5432/test",
            "no-such-host.invalid",
            id="host",
        ),
    ],
)
async def test_a_bad_dsn_fails_at_once_with_its_cause(pg_dsn: str, dsn: str, cause: str) -> None:
    store = PostgresStore(dsn)  # the default timeout_s: 30 s
    started = time.monotonic()
    with pytest.raises(JournalError, match="cannot connect") as raised:
        await store.get_run("r1")
    await store.close()
    assert time.monotonic() - started < 10
    assert cause in str(raised.value)
    assert "s3cret-pw" not in str(raised.value)
    assert "postgres:***@" in str(raised.value)


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        pytest.param("postgresql://u:secret@h:5432/db", "u:***@h:5432", id="url"),
        pytest.param("host=h user=u password=secret dbname=db", "password=***", id="keywords"),
    ],
)
def test_repr_hides_the_password(dsn: str, shown: str) -> None:
    assert shown in repr(PostgresStore(dsn))
    assert "secret" not in repr(PostgresStore(dsn))


@pytest.mark.parametrize("schema", ["a-b", "x; DROP TABLE y", "1abc", ""])
def test_a_schema_that_is_not_an_identifier_is_refused(schema: str) -> None:
    with pytest.raises(ValueError, match="plain identifier"):
        PostgresStore("postgresql://h/db", schema=schema or "?")


def test_the_schema_may_come_in_the_url() -> None:
    store = PostgresStore("postgresql://u@h:5432/db?schema=runs&sslmode=disable")
    assert (store.schema, store.dsn) == ("runs", "postgresql://u@h:5432/db?sslmode=disable")


async def test_a_closed_store_says_so(pg_dsn: str, pg_schema: str) -> None:
    store = PostgresStore(pg_dsn, schema=pg_schema)
    await store.open()
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError, match="is closed"):
        await store.get_run("r1")


async def test_engine_runs_and_resumes_on_postgres(pg_dsn: str, pg_schema: str) -> None:
    import pg_flows

    pg_flows.create_tables(pg_dsn, pg_schema)
    pg_flows.configure(pg_dsn, pg_schema)
    async with PostgresStore(pg_dsn, schema=pg_schema) as store:
        engine = Engine(model=ScriptedModel(["?", "??"]), store=store)
        run = await engine.run(pg_flows.ticket_flow, "t001", run_id="t001")
        assert (run.status, run.error.kind if run.error else None) == ("suspended", "no_action")
        fresh = Engine(model=ScriptedModel(pg_flows.latency_model), store=store)
        done = await fresh.resume("t001", pick={"call": "billing"})
        assert (done.status, done.result) == ("completed", "t001:refunded 5.0 for t001")
        assert (await store.load_trace("t001") or {}).get("nodes")
    await pg_flows.close()


@pytest.fixture
def mixed_case_schema(pg_dsn: str) -> Iterator[str]:
    """A schema name with capitals, dropped (quoted, as it was created) afterwards."""
    name = f"Probe_Upper_{uuid.uuid4().hex[:8]}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


async def test_a_mixed_case_schema_keeps_its_case(pg_dsn: str, mixed_case_schema: str) -> None:
    import pg_flows

    from engine.distributed import submit

    async with PostgresStore(f"{pg_dsn}?schema={mixed_case_schema}") as store:
        await store.create_run(Run(run_id="r1", flow="m:f"))
        await submit(store, pg_flows.ticket_flow, ["t001"], run_id=lambda t: t)
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            [mixed_case_schema],
        )
        tables = {name for (name,) in await cursor.fetchall()}
    assert {"engine_runs", "procrastinate_jobs"} <= tables
    async with PostgresStore(pg_dsn, schema=mixed_case_schema) as again:
        assert [r.run_id for r in await again.list_runs()] == ["r1", "t001"]
