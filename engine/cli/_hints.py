"""Command lines printed for a person to paste: shell-quoted, naming the store they need.

A hint such as ``engine resume RUN_ID`` is only worth printing when it works as printed:
each word is quoted for a POSIX shell, and ``--store`` is named whenever the command's store
is not the default one (``ENGINE_STORE``, else ``engine.db`` here). A password in a store URL
is masked, never printed.
"""

from __future__ import annotations

import shlex

from engine._base import mask_secrets
from engine.cli._common import store_option
from engine.cli._stores import same_store

__all__ = ["command_line"]


def command_line(verb: str, *words: str, store: str | None = None) -> str:
    """Return ``engine VERB WORDS [--store URL]``, each word quoted for a shell.

    Args:
        verb: The command (``resume``, ``show``).
        words: Its arguments and options, as the user would type them unquoted.
        store: The ``--store`` the printing command was given; named unless it is the
            default store.
    """
    parts = ["engine", verb, *(shlex.quote(word) for word in words)]
    if store is not None and not same_store(store, store_option()):
        parts += ["--store", shlex.quote(mask_secrets(store))]
    return " ".join(parts)
