"""OpenTelemetry export: one span per trace node, GenAI attributes on model calls."""

from __future__ import annotations

import json

import pytest
import support_flows as sf

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from engine import Engine
from engine.models import ScriptedModel
from engine.otel import export_run, export_trace
from engine.store import MemoryStore


def pick(call: str, **args: object) -> str:
    return json.dumps({"call": call, "args": args} if args else {"call": call})


async def exported(replies: list[str]) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = MemoryStore()
    run = await Engine(model=ScriptedModel(replies), store=store).run(sf.three_decisions, "t")
    count = await export_run(store, run.run_id, tracer=provider.get_tracer("test"))
    spans = list(exporter.get_finished_spans())
    assert count == len(spans)
    return spans


async def test_every_node_is_a_span_under_its_parent() -> None:
    spans = await exported(["?", pick("billing"), pick("ship", item="box"), pick("close")])
    by_id = {s.context.span_id: s for s in spans}
    root = next(s for s in spans if s.parent is None)
    assert root.name == "invoke_agent support_flows:three_decisions"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["engine.run.status"] == "completed"
    assert root.attributes["gen_ai.usage.input_tokens"] > 0
    assert all(s.parent is None or s.parent.span_id in by_id for s in spans)
    assert all(s.start_time <= s.end_time for s in spans)
    names = [s.name for s in spans]
    assert names.count("decision") == 3
    assert "step ship" in names
    assert "frame three_decisions" in names


async def test_model_calls_follow_the_genai_conventions() -> None:
    spans = await exported(["?", pick("billing"), pick("ship", item="box"), pick("close")])
    calls = sorted((s for s in spans if s.name == "chat scripted"), key=lambda s: s.start_time)
    assert len(calls) == 4
    first = calls[0]
    assert first.kind is SpanKind.CLIENT
    attrs = first.attributes
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "scripted"
    assert attrs["gen_ai.response.model"] == "scripted"
    assert attrs["gen_ai.usage.input_tokens"] > 0
    assert attrs["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs["gen_ai.request.max_tokens"] == 1024  # a decision's default bound
    assert "gen_ai.request.temperature" not in attrs  # a setting nobody set
    assert attrs["engine.failure.kind"] == "no_action"
    decision = min((s for s in spans if s.name == "decision"), key=lambda s: s.start_time)
    assert decision.attributes["engine.decision.options"] == ("billing", "tech")
    assert decision.attributes["engine.decision.pick"] == "billing"
    assert decision.attributes["engine.decision.attempts"] == 2
    assert decision.attributes["engine.decision.failures"] == ("no_action",)


async def test_a_suspended_run_marks_its_spans_as_errors() -> None:
    spans = await exported([pick("tech"), "no", "still no"])
    root = next(s for s in spans if s.parent is None)
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == "suspended: no_action"
    failed = [s for s in spans if s.name == "decision" and s.status.status_code is StatusCode.ERROR]
    assert len(failed) == 1


async def test_unknown_runs_and_missing_traces() -> None:
    store = MemoryStore()
    with pytest.raises(KeyError, match="unknown run"):
        await export_run(store, "nope")


async def test_a_resumed_run_exports_every_execution_in_one_trace() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = MemoryStore()
    runs = Engine(model=ScriptedModel([pick("tech"), pick("hold"), "?", "??"]), store=store)
    await runs.run(sf.three_decisions, "t", run_id="r")
    await runs.resume("r", model=ScriptedModel(["no"] * 2))  # fails again: still suspended
    await runs.resume("r", pick={"call": "close"})
    trace = await store.load_trace("r")
    assert trace is not None
    assert len(trace["earlier"]) == 2
    stored = len(trace["nodes"]) + sum(len(e["nodes"]) for e in trace["earlier"])
    count = await export_run(store, "r", tracer=provider.get_tracer("test"))
    spans = list(exporter.get_finished_spans())
    assert count == len(spans) == stored
    assert len({s.context.trace_id for s in spans}) == 1
    by_id = {s.context.span_id: s for s in spans}
    assert all(s.parent is None or s.parent.span_id in by_id for s in spans)
    runs_spans = sorted(
        (s for s in spans if s.name.startswith("invoke_agent")),
        key=lambda s: s.attributes["engine.execution"],
    )
    assert [s.attributes["engine.execution"] for s in runs_spans] == [0, 1, 2]
    first, second, last = runs_spans
    assert last.parent is None
    assert last.attributes["engine.run.status"] == "completed"
    assert first.parent.span_id == second.parent.span_id == last.context.span_id
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "suspended"
    failed = [s for s in spans if s.name == "decision" and s.status.status_code is StatusCode.ERROR]
    assert len(failed) == 2  # one per earlier execution; the last one picked by hand


def test_an_older_or_hand_made_trace_exports_every_node() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace = {  # no times, no keys, data that is not a dict, a node whose parent is missing
        "earlier": [{"nodes": [{"id": 0, "kind": "run", "name": "f", "status": "suspended"}]}],
        "nodes": [
            {"id": 0, "kind": "run", "name": "f", "status": "ok"},
            {"id": 1, "parent_id": 0, "kind": "decision", "name": "decision", "data": None},
            {"id": 2, "parent_id": 99, "kind": "step", "name": "ship", "status": "ok"},
        ],
    }
    count = export_trace(trace, tracer=provider.get_tracer("test"))
    spans = list(exporter.get_finished_spans())
    assert count == len(spans) == 4
    runs = [s for s in spans if s.name == "invoke_agent f"]
    first, last = sorted(runs, key=lambda s: s.attributes["engine.execution"])
    assert last.parent is None
    assert first.parent.span_id == last.context.span_id
    (decision,) = (s for s in spans if s.name == "decision")
    assert decision.parent.span_id == last.context.span_id
    assert decision.attributes["engine.decision.options"] == ()
    (step,) = (s for s in spans if s.name == "step ship")
    assert step.parent is None  # its parent is not in the trace
