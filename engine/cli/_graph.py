"""``engine graph FLOW``: the routing graph of a flow's stored runs, as Mermaid.

Printed as Mermaid text by default (paste it into any Mermaid viewer, or a Markdown file
in a ```mermaid block). ``--output graph.svg`` (or ``.png``, ``.pdf``) renders it with the
Mermaid CLI (``mmdc``) when it is on PATH; without it the Mermaid text is written beside
the requested file with a note saying how to render it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from engine._observe import RoutingGraph
from engine.cli._common import DEFAULT_STORE, err, fail, note, out, run_async
from engine.cli._inputs import flow_name
from engine.cli._run import StoreOpt
from engine.cli._stores import open_store
from engine.store import Store

__all__ = ["graph"]

_RENDERED = frozenset({".svg", ".png", ".pdf"})
_RENDER_TIMEOUT_S = 120


def graph(
    flow: Annotated[
        str | None,
        typer.Argument(help="module:function or a short name; optional with one stored flow."),
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to a file: .mmd, .md, .json, .svg, .png."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the aggregated counts as JSON.")
    ] = False,
    direction: Annotated[str, typer.Option(help="Mermaid direction: TD or LR.")] = "TD",
) -> None:
    """Draw the routing graph of a flow's stored runs: options offered and picked, failures."""

    async def body() -> None:
        async with open_store(store, read_only=True) as opened:
            name = await _which_flow(opened, flow, store)
            routing = await RoutingGraph.from_store(opened, name)
        if not routing.runs:
            fail(f"no stored runs of {name} in {store}; run some with `engine run {name}`")
        mermaid = routing.to_mermaid(direction=direction)
        if as_json:
            text = json.dumps(routing.to_dict(), indent=2)
            _emit(text, output)
            return
        if output is None:
            out.print(mermaid, end="", soft_wrap=True)
            return
        _render_file(mermaid, output)
        out.print(_summary(routing))

    run_async(body)


async def _which_flow(store: Store, flow: str | None, url: str) -> str:
    if flow is not None:
        return flow_name(flow)
    flows = sorted({r.flow for r in await store.list_runs()})
    if len(flows) != 1:
        listed = ", ".join(flows) or "none"
        fail(f"name the flow to draw; {url} holds runs of: {listed}")
    return flows[0]


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        out.print(text, soft_wrap=True)
    else:
        output.write_text(text + "\n", encoding="utf-8")
        err.print(Text(f"wrote {output}"))


def _render_file(mermaid: str, output: Path) -> None:
    """Write ``mermaid`` to ``output``, rendered by ``mmdc`` for image suffixes.

    Without ``mmdc`` on PATH, an image is not drawn: the Mermaid text goes to the ``.mmd``
    beside it, and a note says how to render it.
    """
    if output.suffix == ".md":
        output.write_text(f"```mermaid\n{mermaid}```\n", encoding="utf-8")
    elif output.suffix not in _RENDERED:
        output.write_text(mermaid, encoding="utf-8")
    else:
        source = output.with_suffix(".mmd")
        source.write_text(mermaid, encoding="utf-8")
        mmdc = shutil.which("mmdc")
        if mmdc is None:
            note(
                f"no Mermaid renderer (mmdc) on PATH, so no {output.suffix} was drawn; wrote "
                f"the Mermaid text to {source}. Install it with `npm install -g "
                "@mermaid-js/mermaid-cli`, or paste the text into https://mermaid.live"
            )
            return
        _run_mmdc(mmdc, source, output)
    err.print(Text(f"wrote {output}"))


def _run_mmdc(mmdc: str, source: Path, output: Path) -> None:
    try:
        done = subprocess.run(
            [mmdc, "-i", str(source), "-o", str(output)],
            capture_output=True,
            text=True,
            timeout=_RENDER_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        fail(f"mmdc could not render {output}: {exc}; the Mermaid text is in {source}")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        fail(f"mmdc failed to render {output}: {tail[0]}; the Mermaid text is in {source}")


def _summary(routing: RoutingGraph) -> Table:
    # Labels and option names come from the store: plain text, never rich markup.
    labels = routing.labels()
    title = Text(f"{routing.flow} over {routing.runs} run(s)")
    table = Table(title=title, title_justify="left")
    for column in ("decision", "visits", "top picks", "DecisionError"):
        table.add_column(column, justify="right" if column == "visits" else "left")
    for key, point in routing.points.items():
        top = sorted(point.options.values(), key=lambda o: -o.picked)[:3]
        picks = ", ".join(f"{o.name} {o.picked}" for o in top if o.picked)
        errors = f"{point.errors} ({point.error_rate:.1%})" if point.errors else "0"
        table.add_row(Text(labels[key]), str(point.visits), Text(picks), errors)
    return table
