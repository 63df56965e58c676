"""Logging, configured in one place: quiet by default, readable on a terminal, JSON elsewhere.

A library must not print by default. The engine logs through :data:`log`, whose events
first ask the standard ``logging`` logger named ``engine`` whether their level is enabled (a
cached, cheap check), and only then go to structlog, which formats them as the application
configured. So ``logging.getLogger("engine").setLevel(logging.INFO)`` turns events on, and
:func:`configure_logging` sets both up for a process (the command line calls it once). Every
event carries the run id, the trace node and the attempt of the task that logged it, read
from the engine's context variables, so concurrent runs never mix their context. Anything
that looks like a secret is masked before an event is rendered: values of keys named like
credentials, values of secret-looking environment variables wherever they appear, and
API-key and bearer-token shapes.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any, Literal, TextIO

from engine._base._context import current_node, current_run_id
from engine._base._secrets import MASK, is_secret_key, known_secrets, mask_value

if TYPE_CHECKING:
    from structlog.typing import EventDict, Processor, WrappedLogger

__all__ = [
    "LogLevel",
    "add_engine_context",
    "configure_logging",
    "log",
    "redact_secrets",
]


class _EngineLog:
    """``debug``/``info``/``warning`` that cost one level check when disabled."""

    __slots__ = ("_gate",)

    def __init__(self) -> None:
        self._gate = logging.getLogger("engine")

    def _emit(self, level: int, event: str, data: dict[str, Any]) -> None:
        if self._gate.isEnabledFor(level):
            # Imported at the first event written: a process that logs nothing (the default)
            # never loads structlog and the console renderer it brings (about 15 MB).
            import structlog

            structlog.get_logger("engine").log(level, event, **data)

    def debug(self, event: str, **data: Any) -> None:
        """Log a debug event."""
        self._emit(logging.DEBUG, event, data)

    def info(self, event: str, **data: Any) -> None:
        """Log an info event."""
        self._emit(logging.INFO, event, data)

    def warning(self, event: str, **data: Any) -> None:
        """Log a warning event."""
        self._emit(logging.WARNING, event, data)


log = _EngineLog()

LogLevel = Literal["debug", "info", "warning", "error", "critical"]


def redact_secrets(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """Mask secrets in an event: credential-named keys, secret env values, key shapes."""
    # Read the environment at every event: a key set after logging was configured must
    # still never reach a log.
    secrets = known_secrets()
    for key, value in list(event.items()):
        event[key] = MASK if is_secret_key(key) else mask_value(value, secrets)
    return event


def add_engine_context(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """Add the run id, trace node and attempt of the task that logs the event."""
    run_id = current_run_id.get()
    if run_id is not None:
        event.setdefault("run_id", run_id)
    node = current_node.get()
    if node is not None:
        event.setdefault("node", node.key)
        attempt = node.data.get("attempt")
        if attempt is not None:
            event.setdefault("attempt", attempt)
    return event


class _StderrLogger:
    """Write rendered lines to whatever ``sys.stderr`` is at the time of the write.

    Resolved per write, not captured once, so a live progress display (which swaps
    ``sys.stderr`` for a proxy that prints above the bar) and test capture both see logs.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def msg(self, message: str) -> None:
        """Write one rendered event as a line."""
        stream = self._stream or sys.stderr
        stream.write(message + "\n")
        stream.flush()

    debug = info = warning = warn = error = critical = exception = log = msg


def configure_logging(
    level: LogLevel | str = "warning",
    *,
    json: bool | None = None,
    stream: TextIO | None = None,
) -> None:
    """Configure structlog for this process: level, renderer, context and redaction.

    Args:
        level: The lowest level written (``debug``, ``info``, ``warning``, ``error``).
        json: JSON lines when true, the coloured console format when false; by default
            the console format on a terminal and JSON lines otherwise.
        stream: Where lines go (``sys.stderr`` at the time of each write by default).

    Raises:
        ValueError: ``level`` is not a level name.
    """
    import structlog  # loaded only by a process that logs (see _emit)

    number = logging.getLevelNamesMapping().get(str(level).upper())
    if number is None:
        raise ValueError(f"log level {level!r} is not one of debug, info, warning, error, critical")
    target = stream if stream is not None else sys.stderr
    if json is None:
        json = not _isatty(target)
    renderer: Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=_isatty(target))
    )
    context: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        add_engine_context,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    finish: list[Processor] = [
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
        redact_secrets,
        renderer,
    ]
    # The engine's events first ask the standard ``engine`` logger whether their level is on
    # (so a library stays quiet by default); open that gate at the configured level.
    logging.getLogger("engine").setLevel(number)
    _route_standard_logging(number, context, finish, stream)
    structlog.configure(
        processors=[*context, *finish],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        logger_factory=lambda *args: _StderrLogger(stream),
        cache_logger_on_first_use=False,
    )


class _StderrStream:
    """A file-like view of ``sys.stderr`` resolved at each write (see :class:`_StderrLogger`)."""

    def write(self, text: str) -> int:
        """Write to the current ``sys.stderr``."""
        return sys.stderr.write(text)

    def flush(self) -> None:
        """Flush the current ``sys.stderr``."""
        sys.stderr.flush()


def _route_standard_logging(
    level: int, context: list[Processor], finish: list[Processor], stream: TextIO | None
) -> None:
    """Send standard-library logs (drivers, SDKs) through the same format and redaction."""
    import structlog  # loaded only by a process that logs (see _emit)

    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*context, structlog.stdlib.add_logger_name],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *finish],
    )
    handler = logging.StreamHandler(stream if stream is not None else _StderrStream())
    handler.setFormatter(formatter)
    handler.set_name(_HANDLER)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


_HANDLER = "engine-structlog"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
