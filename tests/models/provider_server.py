"""A scripted HTTP server on 127.0.0.1 that the provider tests point the real SDKs at.

Each test queues replies (status, JSON body, headers, or a hang) and reads back the requests
the SDK sent. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ProviderServer", "Recorded", "Reply"]

_HANG_LIMIT_S = 10.0


@dataclass
class Reply:
    """One scripted answer: a status and JSON body, or a response that never comes."""

    body: dict[str, Any] | str = field(default_factory=dict)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ProviderServer:
    """Serve scripted replies in order; record every request.

    ``respond``, when given, answers every request instead (a server that behaves, such as
    the emulations of real servers in ``real_servers.py``).
    """

    def __init__(self, respond: Callable[[Recorded], Reply] | None = None) -> None:
        self.respond = respond
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._server.handle_error = lambda request, address: None  # type: ignore[method-assign]
        # A short poll keeps shutdown() (which waits one poll) from slowing every test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ProviderServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.release.set()  # let a hung handler finish
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self.respond is not None:
                return self.respond(recorded)
            if not self.replies:
                return Reply({"error": {"message": "no scripted reply left"}}, status=500)
            return self.replies.pop(0)


def _handler(server: ProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            recorded = Recorded(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=json.loads(raw or b"{}"),
            )
            reply = server.next_reply(recorded)
            if reply.hang:
                server.release.wait(_HANG_LIMIT_S)
                return
            payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            data = payload.encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
