"""The compiled hot modules (``make native``) and the switch back to pure Python.

The whole suite runs on whichever the checkout has: ``make test`` on the compiled modules,
``make test-pure`` on their sources. These tests check that each run tests what it says.
"""

from __future__ import annotations

import copy
import importlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from native_modules import native_tool, pure_python

from engine import Node, Trace

ROOT = Path(__file__).resolve().parent.parent
MODULES = native_tool().MODULES


def _name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


@pytest.mark.parametrize("path", MODULES)
def test_each_listed_module_runs_as_this_run_says(path: str) -> None:
    module = importlib.import_module(_name(path))
    built = native_tool().extension(path).exists()
    if pure_python() or not built:
        assert module.__file__ == str(ROOT / path)
    else:
        assert module.__file__ == str(native_tool().extension(path))


def test_where_the_modules_must_compile_every_one_did() -> None:
    if pure_python():
        pytest.skip("ENGINE_PURE_PYTHON is set: this run tests the sources (make test-pure)")
    if not os.environ.get("ENGINE_EXPECT_NATIVE"):
        pytest.skip("CI sets ENGINE_EXPECT_NATIVE=1, where the modules must have compiled")
    missing = [path for path in MODULES if not native_tool().extension(path).exists()]
    assert not missing, f"make native compiled none of {missing}"


def test_engine_pure_python_imports_every_module_from_its_source() -> None:
    code = (
        "import importlib, sys\n"
        f"names = {[_name(p) for p in MODULES]!r}\n"
        "for name in names:\n"
        "    print(importlib.import_module(name).__file__)\n"
        "import engine\n"
        "print(engine.Engine.__module__)\n"
    )
    env = {**os.environ, "ENGINE_PURE_PYTHON": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    *files, engine_module = done.stdout.split()
    assert files == [str(ROOT / path) for path in MODULES]
    assert engine_module == "engine._run._engine"


class MyTrace(Trace):
    """A user's own trace class."""


def test_trace_and_node_stay_python_classes_to_copy_pickle_and_subclass() -> None:
    # Public classes are never compiled: a compiled class can be neither copied nor
    # subclassed from Python. The export of their data is (engine/_base/_summary.py).
    trace = MyTrace()
    root = trace.open("run", "flow", parent=None, run_id="r")
    child = root.child("decision", "decision", options=["a", "b"], reply="x" * 300)
    child.close("ok", pick="a")
    assert copy.copy(child).key == "run/decision:0"
    again = pickle.loads(pickle.dumps(trace))
    assert again.export() == trace.export()
    exported = trace.export()["nodes"]
    assert [(n["id"], n["parent_id"], n["key"], n["status"]) for n in exported] == [
        (0, None, "run", "running"),
        (1, 0, "run/decision:0", "ok"),
    ]
    assert exported[1]["data"] == {"options": ["a", "b"], "reply": "x" * 200 + "…", "pick": "a"}
    assert isinstance(child, Node)


def test_stale_names_a_changed_source_and_a_module_compiled_without_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = native_tool()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "MODULES", ("engine/a.py", "engine/b.py"))
    (tmp_path / "engine").mkdir()
    for name in ("a", "b"):
        (tmp_path / "engine" / f"{name}.py").write_text("")
    assert tool.stale() == []  # nothing compiled: the sources run
    tool.extension("engine/a.py").write_bytes(b"")
    assert tool.stale() == ["engine/b.py"]  # a part compiled beside the rest's sources
    tool.extension("engine/b.py").write_bytes(b"")
    assert tool.stale() == []
    source = tmp_path / "engine" / "a.py"
    later = tool.extension("engine/a.py").stat().st_mtime + 10
    os.utime(source, (later, later))
    assert tool.stale() == ["engine/a.py"]  # changed since it was compiled
