"""OpenTelemetry export of run traces, following the GenAI semantic conventions.

Needs the ``otel`` extra (``pip install -e ".[otel]"``) and a tracer provider configured
by the application (``opentelemetry-sdk`` with an exporter). Then::

    from engine.otel import export_run

    await export_run(engine.store, run.run_id)   # one span per trace node
"""

from engine._otel import export_run, export_trace

__all__ = ["export_run", "export_trace"]
