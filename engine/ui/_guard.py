"""What keeps the inspector to the person who started it: its token, CSRF, Host, CSP.

- A token, when one is set (always when the server listens beyond this machine), is checked
  on every request: an ``Authorization: Bearer`` or ``X-Engine-Token`` header, or the cookie
  a ``?token=`` link sets (the link then redirects to the page without the token in it).
- Every POST carries the page's CSRF token (a hidden field, or the ``X-CSRF-Token`` header)
  and, where the browser says where it came from, an ``Origin`` of this server: a page of
  another site cannot make a browser answer or resume a run.
- Bound to this machine, only a ``Host`` that names this machine is served, so a web page
  cannot reach the inspector through a name it points at ``127.0.0.1`` (DNS rebinding).
- Every answer forbids scripts other than the inspector's own files (Content-Security-Policy),
  framing and content sniffing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOCAL_HOSTS", "Guard", "GuardMiddleware", "is_local"]

#: The addresses that reach only this machine: binding to one needs no token.
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

COOKIE = "engine_ui_token"

#: Scripts only from the inspector's own files; Mermaid draws with inline styles.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def is_local(host: str) -> bool:
    """Whether ``host`` (a bind address) reaches only this machine."""
    return host in LOCAL_HOSTS or host.startswith("127.")


@dataclass(frozen=True, slots=True)
class Guard:
    """The server's secrets: its token (``None``: none needed) and its CSRF token."""

    token: str | None
    local: bool
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    def token_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the server's token (always, when it has none)."""
        if self.token is None:
            return True
        return given is not None and secrets.compare_digest(given.encode(), self.token.encode())

    def csrf_ok(self, given: str | None) -> bool:
        """Whether ``given`` is the CSRF token of this server's pages."""
        return given is not None and secrets.compare_digest(given.encode(), self.csrf.encode())


class GuardMiddleware:
    """Check the token, the Host and the origin of every request; set the safety headers."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refused = self._refuse(scope, headers)
        if refused is not None:
            await _headed(refused)(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if self.guard.token is not None and "token" in query:
            await _headed(self._login(scope, query))(scope, receive, send)
            return

        async def headed(message: Message) -> None:
            if message["type"] == "http.response.start":
                _safety(MutableHeaders(scope=message), static=scope["path"].startswith("/static/"))
            await send(message)

        await self.app(scope, receive, headed)

    def _refuse(self, scope: Scope, headers: Headers) -> Response | None:
        host = (headers.get("host") or "").lower()
        if self.guard.local and _hostname(host) not in LOCAL_HOSTS:
            return PlainTextResponse(
                f"refused: the inspector listens on this machine only and {host!r} is not its "
                "name; open it as http://127.0.0.1:PORT/",
                status_code=421,
            )
        if not self._authorised(scope, headers):
            return PlainTextResponse(
                "refused: this inspector needs its token; open the link `engine ui` printed "
                "(http://HOST:PORT/?token=...), or send the header Authorization: Bearer TOKEN",
                status_code=401,
            )
        if scope["method"] not in _SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and urlsplit(origin).netloc.lower() != host:
                return PlainTextResponse(
                    f"refused: a request from {origin!r}, another site, may not change runs",
                    status_code=403,
                )
            if headers.get("sec-fetch-site") == "cross-site":
                return PlainTextResponse(
                    "refused: a cross-site request may not change runs", status_code=403
                )
        return None

    def _authorised(self, scope: Scope, headers: Headers) -> bool:
        if self.guard.token is None:
            return True
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and self.guard.token_ok(auth[7:].strip()):
            return True
        if self.guard.token_ok(headers.get("x-engine-token")):
            return True
        cookie = SimpleCookie()
        cookie.load(headers.get("cookie", ""))
        if COOKIE in cookie and self.guard.token_ok(cookie[COOKIE].value):
            return True
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        return self.guard.token_ok(query.get("token"))

    def _login(self, scope: Scope, query: dict[str, str]) -> Response:
        """A valid ``?token=`` link: set the cookie and go to the page without the token."""
        rest = urlencode({k: v for k, v in query.items() if k != "token"})
        where = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
        answer = RedirectResponse(where, status_code=303)
        token = query["token"]
        answer.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return answer


def _hostname(host: str) -> str:
    if host.startswith("["):  # [::1]:8700
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _safety(headers: MutableHeaders, *, static: bool = False) -> None:
    headers["Content-Security-Policy"] = CSP
    headers["X-Content-Type-Options"] = "nosniff"
    headers["X-Frame-Options"] = "DENY"
    # Not no-referrer: with it a browser sends "Origin: null" on its own forms.
    headers["Referrer-Policy"] = "same-origin"
    # The vendored files change only with the package; pages and fragments are always fresh.
    headers.setdefault("Cache-Control", "max-age=86400" if static else "no-store")


def _headed(response: Response) -> Response:
    _safety(response.headers)
    return response
