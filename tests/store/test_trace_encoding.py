"""A trace the engine exports is stored as the same text, whichever way a store encodes it.

The stores encode a trace exported by the engine (:meth:`Trace.export`) on a fast path
(orjson) and any other dict the long way (pydantic's encoder, then the checks for what JSON
cannot carry). Both must store the very same text, and refuse the very same traces.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
from typing import Any

import pydantic
import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Engine, agentic_function, decision
from engine._base import ExportedTrace, JournalError, Trace
from engine.models import ScriptedModel
from engine.store import MemoryStore
from engine.store._checks import trace_json


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Text(str):
    pass


@dataclasses.dataclass
class Point:
    x: float
    y: float


class Item(pydantic.BaseModel):
    name: str
    price: float


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**80)
    | st.floats()  # NaN and the infinities included
    | st.text()
    | st.sampled_from(["\ud800", "a\udfffb", "é", "x" * 300])
    | st.sampled_from(
        [
            Colour.RED,
            Level.HIGH,
            Text("sub"),
            Point(1.0, math.nan),
            Item(name="n", price=2.5),
            dt.datetime(2026, 12, 3, 10, 0, tzinfo=dt.UTC),
            dt.date(2026, 12, 3),
            b"bytes",
            (1, "two"),
            frozenset({1}),
        ]
    )
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4)
    ),
    max_leaves=12,
)
# Keys the export treats each its own way (kept whole, summarised, flattened), and others.
_KEYS = st.sampled_from(["options", "replies", "pick", "args", "result", "reply", "x", "\ud800"])


def _stored(trace: dict[str, Any]) -> str | type[JournalError]:
    try:
        return trace_json("r", trace)
    except JournalError:
        return JournalError


@settings(max_examples=400, deadline=None)
@given(st.lists(st.dictionaries(_KEYS, _VALUES, max_size=4), min_size=1, max_size=4))
def test_an_exported_trace_is_stored_as_the_long_way_stores_it(datas: list[dict[str, Any]]) -> None:
    trace = Trace()
    root = trace.open_root("run", "flow", {"run_id": "r"})
    for data in datas:
        root.open_child("step", "step", data).close("ok")
    root.close("ok")
    exported = trace.export()
    assert type(exported) is ExportedTrace
    assert exported == trace.to_dict()
    assert _stored(exported) == _stored(dict(exported))


def test_the_fast_path_writes_pydantic_s_text_byte_for_byte() -> None:
    trace = Trace()
    root = trace.open_root("run", "flow", {"run_id": "r"})
    step = root.open_child("step", "refund", {"result": {"amount": 12.5, "ok": True, "n": None}})
    step.add_usage(10, 2)
    step.close("ok")
    root.child("decision", "decision", options=["a", "é"], replies=['{"call": "a"}'])
    exported = trace.export()
    assert trace_json("r", exported) == pydantic_core.to_json(dict(exported)).decode()


def test_a_non_finite_float_in_the_trace_is_stored_as_its_repr_not_null() -> None:
    trace = Trace()
    root = trace.open_root("run", "flow", {})
    root.open_child("step", "s", {"result": math.nan, "args": {"x": math.inf}}).close("ok")
    stored = json.loads(trace_json("r", trace.export()))
    assert stored["nodes"][1]["data"] == {"result": "nan", "args": {"x": "inf"}}


def test_a_trace_with_earlier_executions_is_checked_in_full() -> None:
    trace = Trace()
    trace.follow({"nodes": [{"id": 0, "data": {"x": math.nan}}]})
    trace.open_root("run", "flow", {}).close("ok")
    exported = trace.export()
    assert type(exported) is dict
    with pytest.raises(JournalError, match="not finite"):
        trace_json("r", exported)


def test_a_dict_of_the_same_shape_from_elsewhere_is_checked_in_full() -> None:
    with pytest.raises(JournalError, match="not finite"):
        trace_json("r", {"nodes": [{"data": {"x": math.nan}}]})


async def test_a_run_stores_its_trace_as_its_export_encodes() -> None:
    @agentic_function
    async def flow(ticket: str, runtime: Any = None) -> str:
        return await decision.make(f"Route {ticket}.", ["billing", "tech"])

    model = ScriptedModel(['{"call": "tech", "args": {}}'])
    store = MemoryStore()
    run = await Engine(model=model, store=store).run(flow, "T1", run_id="T1")
    assert run.status == "completed"
    stored = await store.load_trace("T1")
    assert stored is not None
    kinds = [n["kind"] for n in stored["nodes"]]
    assert kinds == ["run", "frame", "decision", "model_call"]
    # The text kept is what pydantic's encoder writes for the trace read back.
    assert store._traces["T1"] == pydantic_core.to_json(stored).decode()
