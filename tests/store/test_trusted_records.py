"""Journal records, started runs and reply dumps the engine builds without validating again.

They must be indistinguishable from validated ones: equal, dumped, copied and revalidated
alike, and the one a run journals must carry what ``model_dump(mode="json")`` gives. (They
rely on how pydantic lays out a model instance; these tests catch a release that lays it
out differently.)
"""

from __future__ import annotations

import time
from typing import Any

import hypothesis.strategies as st
import pydantic_core
from hypothesis import given

from engine._run._records import dumped as _dumped
from engine.models import Response, ToolCall, Usage
from engine.store import JournalRecord, MemoryStore, Run
from engine.store._checks import record_json, run_json

_KINDS = ["model", "pick", "step", "decision_failed", "retry", "ask", "approval"]
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    key=st.text(min_size=1, max_size=20),
    kind=st.sampled_from(_KINDS),
    fingerprint=st.text(max_size=16),
    actor=st.none() | st.text(max_size=8),
    data=_json,
)
def test_a_trusted_record_is_the_record_validated(
    key: str, kind: Any, fingerprint: str, actor: str | None, data: Any
) -> None:
    before = time.time()
    trusted = JournalRecord.trusted(key, kind, fingerprint, actor, data)
    validated = JournalRecord(
        key=key,
        kind=kind,
        fingerprint=fingerprint,
        actor=actor,
        data=data,
        created_at=trusted.created_at,
    )
    assert before <= trusted.created_at <= time.time()
    assert trusted == validated
    assert trusted.model_dump() == validated.model_dump()
    assert trusted.model_dump_json() == validated.model_dump_json()
    assert list(trusted.__dict__) == list(validated.__dict__)
    assert trusted.model_fields_set == validated.model_fields_set - {"created_at"}
    assert JournalRecord.model_validate_json(trusted.model_dump_json()) == validated
    assert record_json("r", trusted) == record_json("r", validated)
    copy = trusted.model_copy(update={"data": {"escaped_json": "{}"}})
    assert copy.data == {"escaped_json": "{}"}
    assert trusted.data is data


def test_a_started_run_is_the_run_validated_and_kept_alike() -> None:
    now = time.time()
    data = {"args": ["T1"], "kwargs": {"n": 2}}
    started = Run.started("r1", "flows:f", data, owner="me", lease_expires_at=now + 30, now=now)
    validated = Run(
        run_id="r1",
        flow="flows:f",
        status="running",
        input=data,
        owner="me",
        lease_expires_at=now + 30,
        started_at=now,
        created_at=started.created_at,
        updated_at=started.updated_at,
    )
    assert now <= started.created_at == started.updated_at <= time.time()
    assert started == validated
    assert run_json(started) == run_json(validated)
    assert list(started.__dict__) == list(validated.__dict__)
    assert started.model_fields_set == {
        "run_id",
        "flow",
        "status",
        "input",
        "owner",
        "lease_expires_at",
        "started_at",
    }
    assert started.usage.model_fields_set == validated.usage.model_fields_set == set()
    # Its defaults are its own: a second run shares none of the first's mutable values.
    other = Run.started("r2", "flows:f", {}, owner="me", lease_expires_at=now, now=now)
    assert other.usage is not started.usage
    assert other.retries is not started.retries


async def test_a_started_run_reads_back_from_a_store_as_created() -> None:
    store = MemoryStore()
    now = time.time()
    run = Run.started(
        "r1", "flows:f", {"args": [], "kwargs": {}}, owner="me", lease_expires_at=now + 30, now=now
    )
    stored, created = await store.create_run(run)
    assert created
    assert stored == run
    assert await store.get_run("r1") == run


_calls = st.lists(
    st.builds(
        ToolCall,
        id=st.text(max_size=6),
        name=st.text(min_size=1, max_size=6),
        arguments=st.dictionaries(st.text(max_size=4), _json, max_size=2),
    ),
    max_size=2,
)


@given(
    text=st.text(max_size=30),
    tool_calls=_calls,
    finish_reason=st.none() | st.sampled_from(["stop", "length", "tool_calls"]),
    tokens=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    model=st.none() | st.text(max_size=8),
    latency_s=st.none() | st.floats(),
    enforcement=st.none() | st.sampled_from(["json_schema", "tool", "text"]),
)
def test_a_reply_is_journaled_as_its_json_dump(
    text: str,
    tool_calls: list[ToolCall],
    finish_reason: str | None,
    tokens: tuple[int, int],
    model: str | None,
    latency_s: float | None,
    enforcement: str | None,
) -> None:
    response = Response(
        text=text,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1]),
        model=model,
        latency_s=latency_s,
        enforcement=enforcement,
    )
    dumped, expected = _dumped(response), response.model_dump(mode="json")
    # Compared as JSON text, where a NaN latency equals itself.
    assert pydantic_core.to_json(dumped) == pydantic_core.to_json(expected)
    assert list(dumped) == list(expected)
    assert list(dumped["usage"]) == list(expected["usage"])


def test_a_reply_of_a_subclass_is_journaled_as_its_json_dump() -> None:
    class Tagged(Response):
        tag: str = "x"

    response = Tagged(text="hi", usage=Usage(input_tokens=1, output_tokens=2))
    assert _dumped(response) == response.model_dump(mode="json")
    assert _dumped(response)["tag"] == "x"


def test_a_run_of_a_subclass_is_written_as_its_json_dump() -> None:
    class Tagged(Run):
        tag: str = "x"

    run = Tagged(run_id="r1", flow="flows:f")
    assert run_json(run) == run.model_dump_json()
    assert '"tag":"x"' in run_json(run)
