"""The inspector's web app: its pages, the fragments they refresh live, and the forms' POSTs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from engine._base import log
from engine._observe import journal_summary, usd
from engine.models import Model
from engine.store import Run, Store
from engine.ui._actions import Engines, settle, settling_of
from engine.ui._guard import Guard, GuardMiddleware
from engine.ui._views import (
    STATUSES,
    at,
    executions_of,
    finished,
    flows_seen,
    read_page,
    routing_of,
    seconds,
)

__all__ = ["create_app"]

HERE = Path(__file__).parent

#: The most waiting and suspended runs the inbox lists at once, of each.
INBOX = 100


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every value from a model, a flow input or an option is text
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(usd=usd, at=at, seconds=seconds, statuses=STATUSES)
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)
    return env


class Pages:
    """The inspector's handlers over one store."""

    def __init__(self, store: Store, model: Model | str | None, guard: Guard) -> None:
        self.store = store
        self.guard = guard
        self.engines = Engines(store, model)
        self.default_model = model if isinstance(model, str) else ""
        self.env = _templates()

    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        """Render a template with the values every page uses."""
        body = self.env.get_template(name).render(
            csrf=self.guard.csrf, default_model=self.default_model, **values
        )
        return HTMLResponse(body, status_code=status)

    async def runs(self, request: Request) -> Response:
        """The runs page: counts by status, the table, filters, the pages by keys."""
        page = await read_page(self.store, request.query_params)
        return self.page("runs.html", page=page, query=request.url.query)

    async def runs_table(self, request: Request) -> Response:
        """The runs table alone, as the runs page refreshes it."""
        page = await read_page(self.store, request.query_params)
        return self.page("_table.html", page=page, query=request.url.query)

    async def run(self, request: Request) -> Response:
        """One run: its input, status, work, error, trace tree and earlier executions."""
        found = await self._run(request)
        if isinstance(found, Response):
            return found
        return self.page("run.html", **await self._run_values(found))

    async def run_live(self, request: Request) -> Response:
        """The changing part of a run's page, as the page refreshes it."""
        found = await self._run(request)
        if isinstance(found, Response):
            return found
        return self.page("_run_live.html", **await self._run_values(found))

    async def _run_values(self, run: Run) -> dict[str, Any]:
        trace = await self.store.load_trace(run.run_id)
        live = not finished(run)
        # A running run's trace is stored when its execution ends; its journal, as it goes.
        journal = (
            [
                {"key": r.key, "kind": r.kind, "actor": r.actor or "", "text": journal_summary(r)}
                for r in await self.store.load_journal(run.run_id)
            ]
            if live
            else []
        )
        return {
            "run": run,
            "executions": executions_of(trace),
            "live": live,
            "journal": journal,
            "settlings": settling_of(run),
        }

    async def _run(self, request: Request) -> Run | Response:
        run_id = request.path_params["run_id"]
        run = await self.store.get_run(run_id)
        if run is None:
            return PlainTextResponse(
                f"no run {run_id!r} in this store; the runs page lists them", status_code=404
            )
        return run

    async def graph(self, request: Request) -> Response:
        """A flow's routing graph, drawn by Mermaid in the page."""
        flows = await flows_seen(self.store)
        flow = request.query_params.get("flow") or (flows[0] if flows else "")
        mermaid = await self._mermaid(flow)
        return self.page("graph.html", flows=flows, flow=flow, mermaid=mermaid)

    async def graph_source(self, request: Request) -> Response:
        """The Mermaid text of a flow's graph, as the graph page refreshes it."""
        flow = request.query_params.get("flow", "")
        return self.page("_graph.html", flow=flow, mermaid=await self._mermaid(flow))

    async def _mermaid(self, flow: str) -> str | None:
        if not flow:
            return None
        routing = await routing_of(self.store, flow)
        return routing.to_mermaid() if routing.runs else None

    async def inbox(self, request: Request) -> Response:
        """The waiting and suspended runs, each with the form that settles it."""
        waiting = await self.store.page_runs(status="waiting", limit=INBOX)
        suspended = await self.store.page_runs(status="suspended", limit=INBOX)
        settlings = [s for run in waiting + suspended for s in settling_of(run)]
        counts = await self.store.count_runs_by_status()
        note = request.query_params.get("note", "")
        return self.page("inbox.html", settlings=settlings, counts=counts, note=note)

    async def settle(self, request: Request) -> Response:
        """Settle a run with a person's form; a refused answer shows beside its field."""
        sent = await self._form(request)
        if isinstance(sent, Response):
            return sent
        found = await self._run(request)
        if isinstance(found, Response):
            return found
        outcome = await settle(self.engines, found, sent)
        if outcome.run is not None:
            log.info("ui_settled", run_id=found.run_id, status=outcome.run.status)
            return RedirectResponse(f"/runs/{found.run_id}", status_code=303)
        return self.page("settle.html", status=422, run=found, settlings=outcome.settlings)

    async def resume(self, request: Request) -> Response:
        """Resume a suspended run, asking its decision afresh (on another model if named)."""
        sent = await self._form(request)
        if isinstance(sent, Response):
            return sent
        found = await self._run(request)
        if isinstance(found, Response):
            return found
        try:
            await self.engines.get(sent.get("model", "")).resume(found.run_id)
        except (ValueError, LookupError) as exc:
            settlings = settling_of(found)
            for one in settlings:
                one.error = str(exc).strip("'\"")
            return self.page("settle.html", status=422, run=found, settlings=settlings)
        return RedirectResponse(f"/runs/{found.run_id}", status_code=303)

    async def resume_all(self, request: Request) -> Response:
        """Resume every suspended run, in the background; the inbox says it started."""
        sent = await self._form(request)
        if isinstance(sent, Response):
            return sent
        try:
            engine = self.engines.get(sent.get("model", ""))
        except ValueError as exc:
            return RedirectResponse(f"/inbox?note={_quoted(str(exc))}", status_code=303)
        ids = await suspended_ids(self.store)

        async def resume_them() -> None:
            async with engine.resume_as_completed(
                ids, on_error=lambda *_: None, concurrency=16
            ) as batch:
                async for _ in batch:
                    pass

        note = f"resuming {len(ids)} suspended run(s)"
        return RedirectResponse(
            f"/inbox?note={_quoted(note)}", status_code=303, background=BackgroundTask(resume_them)
        )

    async def _form(self, request: Request) -> dict[str, str] | Response:
        form = await request.form()
        sent = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        given = sent.pop("csrf", None) or request.headers.get("x-csrf-token")
        if not self.guard.csrf_ok(given):
            return PlainTextResponse(
                "refused: the form's CSRF token is missing or stale; reload the page and send "
                "it again",
                status_code=403,
            )
        return sent


async def suspended_ids(store: Store) -> list[str]:
    """The ids of every suspended run, read page by page."""
    ids: list[str] = []
    after: tuple[float, str] | None = None
    while True:
        page = await store.page_runs(status="suspended", after=after, limit=1000)
        ids += [r.run_id for r in page]
        if len(page) < 1000:
            return ids
        after = (page[-1].created_at, page[-1].run_id)


def _quoted(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def create_app(
    store: Store,
    *,
    model: Model | str | None = None,
    token: str | None = None,
    local: bool = True,
) -> Starlette:
    """Build the inspector's web app over ``store``.

    Args:
        store: The store whose runs it shows and settles.
        model: The model a resumed run's later decisions ask, unless a form names another.
        token: The token every request must carry (``None``: none asked for).
        local: The server listens on this machine only: requests must name it as their Host.
    """
    pages = Pages(store, model, Guard(token, local))
    routes = [
        Route("/", pages.runs),
        Route("/runs/table", pages.runs_table),
        Route("/runs/{run_id:path}/live", pages.run_live),
        Route("/runs/{run_id:path}/settle", pages.settle, methods=["POST"]),
        Route("/runs/{run_id:path}/resume", pages.resume, methods=["POST"]),
        Route("/runs/{run_id:path}", pages.run),
        Route("/graph", pages.graph),
        Route("/graph/source", pages.graph_source),
        Route("/inbox", pages.inbox),
        Route("/resume-all", pages.resume_all, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=pages.guard)])
    app.state.pages = pages
    return app
