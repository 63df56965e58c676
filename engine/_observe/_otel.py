"""Export a run's trace to OpenTelemetry, with the GenAI semantic conventions for model calls.

Every node of a stored trace becomes one span with the node's own start and end times, under
its parent's span: the run (``invoke_agent <flow>``), frames, decisions, re-picks, steps,
branches, retries, model calls (``chat <model>``, with ``gen_ai.*`` attributes: operation,
request and response model, the request's settings (temperature, top_p, max_tokens, seed,
stop sequences), token usage, finish reason) and tool calls (``execute_tool
<name>``). Engine-specific facts ride as ``engine.*`` attributes (the node key, the options
a decision offered, its pick, attempts and failure kinds).

A resumed run's earlier executions (``trace["earlier"]``) are exported too, in the same
trace, so there is one span per stored node: the last execution's run span is the trace's
root, and each earlier execution's tree hangs under it, its run span a child of that root.
Every run span says which execution it was (``engine.execution``: 0 for the first).

The export reads the stored trace, so it runs after the fact (a finished run, or a run
read back from any store) and costs the run itself nothing. Spans go to the tracer
provider the application configured (``opentelemetry-sdk`` with any exporter). Needs the
``otel`` extra: ``pip install -e ".[otel]"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine._base import STOPPED, RunNotFoundError, StoredNode
from engine._observe._stored import Execution, data_of, executions
from engine.store import Run, Store

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = ["export_run", "export_trace"]

_NS = 1_000_000_000
_OK = frozenset({"ok", "running"})
_MODEL_KINDS = frozenset({"model_call", "repick"})


def export_trace(
    trace: Mapping[str, Any], *, run: Run | None = None, tracer: Tracer | None = None
) -> int:
    """Export a stored trace (``Trace.to_dict()``) as spans; return how many were made.

    The earlier executions of a resumed run hang under the last one's root span (see the
    module's docstring).

    Args:
        trace: The trace, as :meth:`Engine.trace` returns it.
        run: The stored run, for its id, status and usage on the last execution's root span.
        tracer: The tracer to use (``opentelemetry.trace.get_tracer("engine")`` by default).
    """
    from opentelemetry import trace as otel  # the otel extra: engine.otel checks it is there

    tracer = tracer or otel.get_tracer("engine")
    *earlier, final = executions(trace)
    last = _start(tracer, final, len(earlier), run=run, under=None)
    root = next((span for node, span in last if node.get("parent_id") is None), None)
    trees = [_start(tracer, e, i, under=root) for i, e in enumerate(earlier)]
    # End children before parents, each at its recorded end (or its start when unfinished);
    # the earlier executions before the root they hang under.
    for started in [*trees, last]:
        for node, span in reversed(started):
            span.end(end_time=_ns(node.get("ended_at") or node.get("started_at")))
    return len(last) + sum(len(t) for t in trees)


def _start(
    tracer: Tracer,
    execution: Execution,
    number: int,
    *,
    under: Span | None,
    run: Run | None = None,
) -> list[tuple[StoredNode, Span]]:
    """Start a span per node of one execution, each under its parent's; return them in order.

    Its run node's span goes under ``under`` (``None``: a root), and says which execution
    it was (``number``, 0 for the first); ``run`` describes the run on it.
    """
    from opentelemetry import trace as otel
    from opentelemetry.trace import SpanKind, Status, StatusCode

    spans: dict[Any, Span] = {}
    started: list[tuple[StoredNode, Span]] = []
    for node in execution.in_start_order():
        is_root = node.get("parent_id") is None
        parent = under if is_root else spans.get(node.get("parent_id"))
        attributes = _attributes(node)
        if is_root:
            attributes["engine.execution"] = number
        span = tracer.start_span(
            _name(node),
            context=otel.set_span_in_context(parent) if parent is not None else None,
            kind=SpanKind.CLIENT if node.get("kind") in _MODEL_KINDS else SpanKind.INTERNAL,
            attributes=attributes,
            start_time=_ns(node.get("started_at")),
        )
        if is_root and run is not None:
            _describe_run(span, run)
        elif node.get("status") not in _OK:
            why = data_of(node).get("error") or node.get("status")
            span.set_status(Status(StatusCode.ERROR, str(why)))
        spans[node.get("id")] = span
        started.append((node, span))
    return started


async def export_run(store: Store, run_id: str, *, tracer: Tracer | None = None) -> int:
    """Export the stored trace of one run; return the number of spans (0 without a trace).

    Raises:
        RunNotFoundError: The store holds no run with this id (a ``KeyError``).
    """
    run = await store.get_run(run_id)
    if run is None:
        raise RunNotFoundError(run_id)
    trace = await store.load_trace(run_id)
    if trace is None:
        return 0
    return export_trace(trace, run=run, tracer=tracer)


def _name(node: StoredNode) -> str:
    kind = str(node.get("kind"))
    name = str(node.get("name"))
    if kind == "run":
        return f"invoke_agent {name}"
    if kind in _MODEL_KINDS:
        return f"chat {data_of(node).get('model') or 'unknown'}"
    if kind == "tool_call":
        return f"execute_tool {name}"
    return name if kind == name else f"{kind} {name}"


def _attributes(node: StoredNode) -> dict[str, Any]:
    kind = str(node.get("kind"))
    data = data_of(node)
    attrs: dict[str, Any] = {"engine.node.kind": kind, "engine.node.key": str(node.get("key"))}
    if kind == "run":
        attrs.update({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": node["name"]})
    elif kind in _MODEL_KINDS:
        attrs.update(_model_attributes(node, data))
    elif kind == "tool_call":
        attrs.update({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": node["name"]})
    elif kind == "decision":
        attrs.update(_decision_attributes(data))
    if data.get("replayed"):
        attrs["engine.replayed"] = True
    return attrs


def _model_attributes(node: StoredNode, data: Mapping[str, Any]) -> dict[str, Any]:
    usage: Mapping[str, int] = node.get("usage") or {}
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "engine.attempt": data.get("attempt", 0),
    }
    if data.get("model"):
        attrs["gen_ai.request.model"] = attrs["gen_ai.response.model"] = str(data["model"])
    if usage:
        attrs["gen_ai.usage.input_tokens"] = int(usage.get("input_tokens", 0))
        attrs["gen_ai.usage.output_tokens"] = int(usage.get("output_tokens", 0))
    if data.get("finish_reason"):
        attrs["gen_ai.response.finish_reasons"] = [str(data["finish_reason"])]
    if data.get("failure"):
        attrs["engine.failure.kind"] = str(data["failure"])
    settings = data.get("settings")
    if isinstance(settings, Mapping):  # the model settings the call sent
        for key, value in settings.items():
            name = _REQUEST_SETTINGS.get(key)
            if name is not None:
                attrs[name] = [str(s) for s in value] if key == "stop" else value
    return attrs


#: The GenAI semantic-convention attribute of each model setting that has one.
_REQUEST_SETTINGS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
    "stop": "gen_ai.request.stop_sequences",
}


def _decision_attributes(data: Mapping[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "engine.decision.options": [str(o) for o in data.get("options", [])],
        "engine.decision.failures": [str(f) for f in data.get("failures") or []],
    }
    if "attempts" in data:
        attrs["engine.decision.attempts"] = int(data["attempts"])
    if "pick" in data:
        attrs["engine.decision.pick"] = str(data["pick"])
    return attrs


def _describe_run(span: Span, run: Run) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attributes(
        {
            "engine.run.id": run.run_id,
            "engine.run.status": run.status,
            "engine.run.resumes": run.resumes,
            "gen_ai.usage.input_tokens": run.usage.input_tokens,
            "gen_ai.usage.output_tokens": run.usage.output_tokens,
        }
    )
    if run.status in STOPPED:  # finished short of completing: the span is an error
        kind = run.error.kind if run.error is not None else run.status
        span.set_status(Status(StatusCode.ERROR, f"{run.status}: {kind}"))


def _ns(seconds: object) -> int | None:
    return int(float(seconds) * _NS) if isinstance(seconds, int | float) else None
