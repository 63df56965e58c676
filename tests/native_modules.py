"""What the suite knows of the compiled modules: ``tools/native.py``, and whether this run
tests the sources instead (``ENGINE_PURE_PYTHON``)."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType


@cache
def native_tool() -> ModuleType:
    """``tools/native.py``, which compiles the hot modules and knows which they are."""
    path = Path(__file__).resolve().parent.parent / "tools" / "native.py"
    spec = importlib.util.spec_from_file_location("engine_native_tool", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pure_python() -> bool:
    """Whether the engine runs as pure Python here (``ENGINE_PURE_PYTHON``)."""
    from engine._pure import wanted

    return wanted()
