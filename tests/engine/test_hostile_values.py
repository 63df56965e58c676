"""Values JSON cannot carry stop only the run that holds them, with a stored reason.

A lone surrogate (``"\\ud800"``) is a Python string that UTF-8, so JSON, has no form for; a
model's reply can carry one as an escape. Whether a pick, a step's result, a flow's result,
a reply or an error message holds it, ``Engine.run`` returns the run stopped, never raises,
and never leaves it ``running``.
"""

from __future__ import annotations

import json
import re
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostile_options import GOOD, OPTIONS, SURROGATE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import DecisionError, Engine, JournalError, Runtime, agentic_function, decision
from engine.models import Request, ScriptedModel
from engine.store import JournalRecord, MemoryStore, PostgresStore, Run, SQLiteStore, Store

#: The surrogate as a JSON escape: the reply text is plain ASCII, the pick's argument is not.
ESCAPED = '{"call": "refund", "args": {"reason": "\\ud800"}}'


@agentic_function
async def handle(ticket: str, runtime: Runtime | None = None) -> str:
    """One decision over refund, pay, a hostile step and a failing tool."""
    result: str = await decision.make(f"Handle {ticket}", OPTIONS)
    return result


@agentic_function
async def echo_bad(ticket: str, runtime: Runtime | None = None) -> str:
    """A flow whose own result holds a lone surrogate."""
    return ticket + SURROGATE


@agentic_function
async def deep_result(ticket: str, runtime: Runtime | None = None) -> Any:
    """A flow whose result nests deeper than a stored run can be read back."""
    return _nested(230, ticket)


def _nested(depth: int, inner: Any = None) -> Any:
    """Return ``inner`` inside ``depth`` lists."""
    value: Any = [] if inner is None else [inner]
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """Each test runs on every store (PostgreSQL when one is reachable)."""
    s: Store
    if request.param == "memory":
        s = MemoryStore()
    elif request.param == "sqlite":
        s = SQLiteStore(tmp_path / "runs.db")
    else:
        dsn = request.getfixturevalue("pg_dsn")
        s = PostgresStore(dsn, schema=request.getfixturevalue("pg_schema"))
    yield s
    await s.close()


async def _stopped(store: Store, replies: list[str], flow: Any = handle) -> Any:
    run = await Engine(ScriptedModel(replies), store=store).run(flow, "t1")
    stored = await store.get_run(run.run_id)
    assert stored is not None
    assert stored.status == run.status != "running"
    assert stored.error == run.error
    return run


async def test_a_pick_holding_a_surrogate_suspends_and_a_resume_asks_again(store: Store) -> None:
    model = ScriptedModel([ESCAPED, GOOD])
    engine = Engine(model, store=store)
    run = await engine.run(handle, "t1")
    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "bad_args"
    assert "lone surrogate '\\ud800' at ['reason']" in run.error.message
    assert run.error.where is not None
    assert run.error.where.endswith("decision:0")
    journal = await store.load_journal(run.run_id)
    assert [r.kind for r in journal] == ["model", "decision_failed"]
    assert journal[0].data["text"] == ESCAPED  # the reply the model gave, kept whole
    resumed = await engine.resume(run.run_id)
    assert resumed.status == "completed"
    assert resumed.result == "refunded late"
    assert model.calls == 2


async def test_a_reply_holding_a_raw_surrogate_is_journaled_whole(store: Store) -> None:
    reply = f"thinking {SURROGATE} {GOOD}"
    run = await _stopped(store, [reply])
    assert run.status == "completed"
    assert run.result == "refunded late"
    journal = await store.load_journal(run.run_id)
    assert journal[0].kind == "model"
    assert SURROGATE not in str(journal[0].data)  # stored escaped, as ASCII JSON text
    trace = await store.load_trace(run.run_id)
    assert trace is not None
    heads = [n["data"].get("reply") for n in trace["nodes"] if n["kind"] == "model_call"]
    assert heads == [reply.replace(SURROGATE, "\\ud800")]  # the trace shows it escaped


async def test_a_raw_surrogate_in_the_pick_suspends_and_the_replay_reads_the_same_reply(
    store: Store,
) -> None:
    reply = f'{{"call": "refund", "args": {{"reason": "a{SURROGATE}"}}}}'
    model = ScriptedModel([reply, GOOD])
    engine = Engine(model, store=store)
    run = await engine.run(handle, "t1")
    assert run.status == "suspended"
    assert run.error is not None
    assert run.error.kind == "bad_args"
    assert "(character 1)" in run.error.message
    assert run.error.replies == [reply.replace(SURROGATE, "\\ud800")]
    resumed = await engine.resume(run.run_id)
    assert resumed.status == "completed"
    assert model.calls == 2


async def test_a_step_result_holding_a_surrogate_fails_the_run(store: Store) -> None:
    run = await _stopped(store, ['{"call": "lookup", "args": {"order": "o1"}}'])
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "JournalError"
    assert "the result of step 'lookup'" in run.error.message
    assert "lone surrogate '\\ud800' at the top (character 8)" in run.error.message
    journal = await store.load_journal(run.run_id)
    assert [r.kind for r in journal] == ["model", "pick"]  # nothing half-written


async def test_a_flow_result_holding_a_surrogate_fails_the_run(store: Store) -> None:
    run = await _stopped(store, [], flow=echo_bad)
    assert run.status == "failed"
    assert run.error is not None
    assert run.result is None
    assert "the result of flow" in run.error.message
    assert "lone surrogate" in run.error.message


async def test_a_result_too_deep_to_read_back_fails_the_run_at_its_last_write(
    store: Store,
) -> None:
    run = await _stopped(store, [], flow=deep_result)
    assert run.status == "failed"
    assert run.error is not None
    assert run.result is None
    assert "nesting deeper than 200 levels at depth" in run.error.message
    assert await store.load_trace(run.run_id) is not None


async def test_an_error_message_holding_a_surrogate_is_stored_escaped(store: Store) -> None:
    run = await _stopped(store, ['{"call": "explode", "args": {"order": "o1"}}'])
    assert run.status == "failed"
    assert run.error is not None
    assert run.error.kind == "RuntimeError"
    assert run.error.message == "no order o1\\ud800"
    assert run.error.traceback is not None
    assert SURROGATE not in run.error.traceback


async def test_a_non_finite_argument_from_a_reply_is_a_bad_argument(store: Store) -> None:
    run = await _stopped(store, ['{"call": "pay", "args": {"amount": 1e999}}'] * 3)
    assert run.status == "suspended"
    assert run.error is not None
    # Still a pick: its argument is out of a float's range, named with its path.
    assert run.error.kind == "type_mismatch"
    assert "amount" in run.error.message


async def test_a_flow_input_holding_a_surrogate_is_refused_before_anything_is_stored(
    store: Store,
) -> None:
    engine = Engine(ScriptedModel([GOOD]), store=store)
    with pytest.raises(JournalError, match=r"argument 0 of flow .* lone surrogate '\\ud800'"):
        await engine.run(handle, f"t{SURROGATE}", run_id="bad")
    assert await store.get_run("bad") is None


async def test_a_batch_with_hostile_values_returns_every_run(store: Store) -> None:
    replies = {
        "good": GOOD,
        "escaped": ESCAPED,
        "raw": f'{{"call": "refund", "args": {{"reason": "{SURROGATE}"}}}}',
        "step": '{"call": "lookup", "args": {"order": "o"}}',
        "tool": '{"call": "explode", "args": {"order": "o"}}',
    }

    def reply(request: Request) -> str:
        found = re.search(r"Handle (\w+)-", " ".join(m.text for m in request.messages))
        assert found is not None
        return replies[found[1]]

    tickets = [f"{kind}-{i}" for i in range(4) for kind in replies]
    errors: list[Any] = []
    engine = Engine(ScriptedModel(reply), store=store)
    runs = await engine.run_many(
        handle, [*tickets, f"bad{SURROGATE}"], on_error=lambda *a: errors.append(a)
    )
    assert len(runs) == len(tickets)
    assert len(errors) == 1
    assert isinstance(errors[0][2], JournalError)
    by_kind: dict[str, set[str]] = {}
    for ticket, run in zip(tickets, runs, strict=True):
        by_kind.setdefault(ticket.split("-")[0], set()).add(run.status)
    assert by_kind == {
        "good": {"completed"},
        "escaped": {"suspended"},
        "raw": {"suspended"},
        "step": {"failed"},
        "tool": {"failed"},
    }
    assert all(r.status != "running" for r in await store.list_runs())


# -- properties ------------------------------------------------------------------------------

#: Text of any code point, lone surrogates and NUL included.
any_text = st.text(
    st.characters(codec=None, categories=["Cs"]) | st.characters() | st.just("\x00"),
    max_size=40,
)
#: JSON as a reply can spell it: what Python's parser takes, and what it refuses or misreads.
_FRAGMENTS = st.one_of(
    any_text.map(json.dumps),  # surrogates as escapes
    any_text.map(lambda t: json.dumps(t, ensure_ascii=False)),  # surrogates raw
    st.sampled_from(["NaN", "-Infinity", "1e999", "9" * 5000, "-0.0", '"a\\u0000b"', "null"]),
    st.integers(1, 400).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 400).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(10_000, 200_000).map(lambda n: json.dumps("x" * n)),
)
replies = st.one_of(
    any_text,
    st.tuples(st.sampled_from(["refund", "pay", "nope"]), _FRAGMENTS, any_text).map(
        lambda p: f'{p[2]} {{"call": "{p[0]}", "args": {{"reason": {p[1]}, "amount": {p[1]}}}}}'
    ),
    st.tuples(_FRAGMENTS, _FRAGMENTS).map(lambda p: f'{{"call": {p[0]}, "args": {p[1]}}}'),
)


async def _through_a_run(reply: str) -> None:
    store = MemoryStore()
    engine = Engine(ScriptedModel(lambda _request: reply), store=store)
    run = await engine.run(handle, "t1")
    assert run.status in {"completed", "suspended"}, run.error  # the reply's fault: resumable
    assert await store.get_run(run.run_id) == run  # stored as returned
    for record in await store.load_journal(run.run_id):
        if record.kind == "model":  # the reply the model gave, kept whole
            replayed = (
                json.loads(record.data["escaped_json"])
                if "escaped_json" in record.data
                else record.data
            )
            assert replayed["text"] == reply
    assert await store.load_trace(run.run_id) is not None


@settings(max_examples=150, deadline=None)
@given(replies)
def test_no_reply_raises_out_of_a_run_or_is_lost(reply: str) -> None:
    anyio.run(_through_a_run, reply)


#: JSON data of every kind a value can hold, JSON's limits included.
json_data: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([4500, 300, 19]).map(lambda n: 10**n)
    | st.floats()
    | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=10,
) | st.integers(200, 300).map(_nested)


async def _through_a_store(kind: str, data: Any, where: str) -> None:
    store: Store
    if kind == "memory":
        store = MemoryStore()
    elif kind == "sqlite":
        store = SQLiteStore(Path(where) / "runs.db")
    else:
        dsn, schema = where.split(" ")
        store = PostgresStore(dsn, schema=schema, pool_max=1)
    rid = uuid.uuid4().hex  # a PostgreSQL schema serves every example
    try:
        try:
            created, _ = await store.create_run(Run(run_id=rid, flow="f", input={"v": data}))
        except JournalError:
            assert await store.get_run(rid) is None  # refused whole
            created, _ = await store.create_run(Run(run_id=rid, flow="f"))
        else:
            assert created.input == {"v": data}
        try:
            await store.append(rid, [JournalRecord(key="k", kind="step", data={"v": data})])
        except JournalError:
            assert await store.load_journal(rid) == []
        else:
            assert [r.data for r in await store.load_journal(rid)] == [{"v": data}]
        changed = created.model_copy(update={"result": data})
        try:
            updated = await store.update_run(changed, expected_version=created.version)
        except JournalError:
            assert await store.get_run(rid) == created
        else:
            assert updated is not None
            stored = await store.get_run(rid)
            assert stored is not None
            assert stored.result == data
    finally:
        await store.close()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["memory", "sqlite"]), json_data)
def test_what_a_store_takes_reads_back_equal_and_what_it_refuses_leaves_nothing(
    kind: str, data: Any
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        anyio.run(_through_a_store, kind, data, folder)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=json_data)
def test_what_postgresql_takes_reads_back_equal_and_what_it_refuses_leaves_nothing(
    pg_dsn: str, pg_schema: str, data: Any
) -> None:
    anyio.run(_through_a_store, "postgres", data, f"{pg_dsn} {pg_schema}")


async def test_a_reply_journaled_escaped_replays_as_the_model_gave_it(store: Store) -> None:
    reply = f"thinking {SURROGATE} {GOOD}"
    first = await Engine(ScriptedModel([reply]), store=store).run(handle, "t1")
    (model_record,) = [r for r in await store.load_journal(first.run_id) if r.kind == "model"]
    # A process died after journaling the reply, before its pick rode to the store.
    gone = {"run_id": "died", "status": "running", "owner": "dead", "lease_expires_at": 0.0}
    dead = first.model_copy(update={**gone, "result": None, "version": 0})
    await store.create_run(dead)
    await store.append("died", [model_record])
    model = ScriptedModel([])  # asked for anything, it raises: the reply must replay
    (recovered,) = await Engine(model, store=store).recover(flows=[handle])
    assert recovered.status == "completed"
    assert recovered.result == "refunded late"
    assert model.calls == 0


async def test_a_human_pick_holding_a_surrogate_is_refused_and_the_run_left_as_it_was(
    store: Store,
) -> None:
    engine = Engine(ScriptedModel([ESCAPED]), store=store)
    run = await engine.run(handle, "t1")
    assert run.status == "suspended"
    pick = {"call": "refund", "args": {"reason": SURROGATE}}
    with pytest.raises(DecisionError, match=r"lone surrogate '\\ud800' at \['reason'\]"):
        await engine.resume(run.run_id, pick=pick)
    assert await store.get_run(run.run_id) == run
    done = await engine.resume(run.run_id, pick={"call": "refund", "args": {"reason": "ok"}})
    assert done.status == "completed"


@agentic_function
async def two_picks(ticket: str, runtime: Runtime | None = None) -> str:
    """A value decision, then the hostile menu: the first pick rides with the second reply."""
    kind = await decision.make(f"Classify {ticket}", ["billing", "tech"])
    result: str = await decision.make(f"Handle {ticket} ({kind})", OPTIONS)
    return result


async def test_a_pick_riding_with_a_refused_reply_is_stored_with_it_escaped(store: Store) -> None:
    # The store refuses the raw reply (nothing of that write is kept), so it is journaled
    # again escaped: the first decision's pick, waiting to ride with it, must go in too.
    reply = f"thinking {SURROGATE} {GOOD}"
    run = await _stopped(store, ['{"call": "tech"}', reply], two_picks)
    assert run.status == "completed"
    journal = await store.load_journal(run.run_id)
    kinds = [(r.kind, r.data.get("call") if r.kind == "pick" else None) for r in journal]
    assert kinds[:3] == [("model", None), ("pick", "tech"), ("model", None)]
    assert SURROGATE not in str(journal[2].data)
    # A process that died after journaling both replies: the recovery replays them.
    gone = {"run_id": "died", "status": "running", "owner": "dead", "lease_expires_at": 0.0}
    await store.create_run(run.model_copy(update={**gone, "result": None, "version": 0}))
    await store.append("died", journal[:3])
    model = ScriptedModel([])  # asked for anything, it raises: the replies must replay
    (recovered,) = await Engine(model, store=store).recover(flows=[two_picks])
    assert recovered.result == run.result == "refunded late"
    assert model.calls == 0
