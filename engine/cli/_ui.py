"""``engine ui``: the local web inspector over a store (the ``ui`` extra).

It serves the runs of ``--store`` (the same URLs as every command) on
``http://127.0.0.1:8700/`` by default. Listening on any other address needs a token: the
one ``--token`` gives, or one made at start, printed in the link to open.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from engine.cli._common import DEFAULT_STORE, CliError, abort, note, out, run_async
from engine.cli._models import choose_model
from engine.cli._run import ModelOpt, StoreOpt
from engine.cli._stores import open_store
from engine.models import Model

__all__ = ["ui"]

INSTALL = 'pip install -e ".[ui]"'


def ui(
    store: StoreOpt = DEFAULT_STORE,
    host: Annotated[
        str, typer.Option(help="The address to listen on; beyond 127.0.0.1 a token is needed.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="The port to listen on.")] = 8700,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="ENGINE_UI_TOKEN",
            help="The token every request must carry (default: made at start when --host is "
            "not this machine).",
        ),
    ] = None,
    model: ModelOpt = None,
) -> None:
    """Open the web inspector: runs live, traces, routing graphs; answer and resume runs."""
    try:
        import engine.ui as web
    except ImportError as exc:
        abort(f"engine ui needs the ui extra: {INSTALL} (missing: {exc.name or exc})")
    local = web.is_local(host)
    if not local and not token:
        token = web.new_token()
    chosen = _model(model)

    async def body() -> None:
        async with open_store(store) as opened:
            app = web.create_app(opened, model=chosen, token=token or None, local=local)
            shown = f"[{host}]" if ":" in host else host
            link = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
            out.print(Text(f"engine ui on {store}: open {link}"))
            if chosen is None:
                note(
                    "no model: a resumed run's later decisions need one; name it in the form, "
                    "or start with --model"
                )
            out.print(Text("Ctrl-C stops it."))
            await web.serve(app, host=host, port=port)

    run_async(body)


def _model(spec: str | None) -> Model | None:
    try:
        return choose_model(spec).model
    except CliError:
        if spec:
            raise
        return None  # no model named and no provider key: the forms name one
