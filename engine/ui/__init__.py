"""A local web inspector over a store: runs live, their traces and graphs, answers and resumes.

``engine ui`` starts it (the ``ui`` extra: ``pip install -e ".[ui]"``). Its pages: the runs
(counts by status, filters, pages by keys, refreshed while a batch runs), one run (its
input, work, why it stopped with the failing decision's menu and every raw reply, the trace
as a tree, its earlier executions), a flow's routing graph drawn by Mermaid, and an inbox
of waiting and suspended runs, each with a form built from its decision's menu and checked
by the engine's own rules. Every script and style it needs is vendored in the package
(``static/vendor``), so it works offline. It binds 127.0.0.1 by default; beyond this machine
every request must carry a token (see :mod:`engine.ui._guard`).
"""

from __future__ import annotations

import secrets

from starlette.applications import Starlette

from engine.ui._app import create_app
from engine.ui._guard import is_local

__all__ = ["create_app", "is_local", "new_token", "serve"]


def new_token() -> str:
    """A fresh random token for a server that listens beyond this machine."""
    return secrets.token_urlsafe(24)


async def serve(
    app: Starlette,
    *,
    host: str = "127.0.0.1",
    port: int = 8700,
    log_level: str = "warning",
) -> None:
    """Serve ``app`` (from :func:`create_app`) with uvicorn until stopped (Ctrl-C)."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="off")
    await uvicorn.Server(config).serve()
