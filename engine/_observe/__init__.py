"""Reading stored traces: the routing graph, its Mermaid drawing, the trace tree, OpenTelemetry.

Everything here reads what a store keeps (runs and their traces, each a
:class:`~engine._base.StoredTrace` walked by :mod:`._stored`, and the journal lines of a run
still running), never a live run's memory.
"""

from engine._observe._graph import RoutingGraph
from engine._observe._journal_lines import journal_summary
from engine._observe._otel import export_run, export_trace
from engine._observe._trace_view import TraceLine, render_trace, trace_lines, usd

__all__ = [
    "RoutingGraph",
    "TraceLine",
    "export_run",
    "export_trace",
    "journal_summary",
    "render_trace",
    "trace_lines",
    "usd",
]
