"""``python -m engine``: the same command line as the ``engine`` command."""

from engine.cli import app

app(prog_name="engine")
