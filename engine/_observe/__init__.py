"""Reading stored traces: the routing graph, its Mermaid drawing, the trace tree, OpenTelemetry.

Everything here reads what a store keeps (runs and their traces, each a
:class:`~engine._base.StoredTrace` walked by :mod:`._stored`), never a live run.
"""

from engine._observe._graph import RoutingGraph
from engine._observe._otel import export_run, export_trace
from engine._observe._trace_view import TraceLine, render_trace, trace_lines, usd

__all__ = [
    "RoutingGraph",
    "TraceLine",
    "export_run",
    "export_trace",
    "render_trace",
    "trace_lines",
    "usd",
]
