"""OpenTelemetry export of run traces, following the GenAI semantic conventions.

Needs the ``otel`` extra (``pip install -e ".[otel]"``) and a tracer provider configured
by the application (``opentelemetry-sdk`` with an exporter). Then::

    from engine.otel import export_run

    await export_run(engine.store, run.run_id)   # one span per trace node

Without the extra, importing this module raises an :class:`ImportError` that says how to
install it.
"""

try:
    from opentelemetry import trace as _trace  # noqa: F401  (the export needs the extra)
except ModuleNotFoundError as exc:
    if not (exc.name or "").startswith("opentelemetry"):
        raise
    raise ImportError(
        f'engine.otel needs OpenTelemetry ({exc.name} is missing): pip install -e ".[otel]"',
        name=exc.name,
    ) from exc

from engine._observe import export_run, export_trace

__all__ = ["export_run", "export_trace"]
