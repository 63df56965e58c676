"""``ENGINE_PURE_PYTHON=1``: import the engine's modules from their ``.py`` files.

``make native`` compiles some of the engine's modules in place (``tools/native.py``), and
Python imports a compiled module before its source. With the variable set, the package finds
every module of its own by its source instead, so the same checkout runs as pure Python: to
compare the two, to read a Python traceback or profile through those modules, or to try an
edit without compiling again.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["install", "wanted"]


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Find ``engine.*`` modules by their ``.py`` file where one lies on the package path."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is None or not fullname.startswith("engine."):
            return None
        leaf = fullname.rpartition(".")[2]
        for folder in path:
            source = os.path.join(folder, f"{leaf}.py")
            if os.path.isfile(source):
                return importlib.util.spec_from_file_location(fullname, source)
        return None  # a package, or not found here: the usual finders decide


def wanted() -> bool:
    """Whether ``ENGINE_PURE_PYTHON`` asks for the sources (set, and neither empty nor 0)."""
    return os.environ.get("ENGINE_PURE_PYTHON", "") not in ("", "0")


def install() -> None:
    """Put the source-first finder ahead of the usual ones (once)."""
    if not any(isinstance(finder, _SourceFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst())
