"""The package's floors: every import runs downwards, through a folder's face.

Each folder of ``engine/`` (and each public module beside them) stands on a floor. A module
may import its own folder's modules, and from a folder or public module on a lower floor,
through that folder's face only (``from engine._base import X``, never
``engine._base._errors``). Folders on one floor stand side by side and import nothing of each
other. Every import counts: at module level, inside functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import engine

PACKAGE = Path(engine.__file__).parent

#: Where each unit stands, bottom first. A unit is a folder of ``engine/`` or a public module.
FLOORS: dict[str, int] = {
    "_pure": 0,  # ENGINE_PURE_PYTHON: imported first, so it imports nothing of the package
    "_base": 0,
    "_decision": 1,
    "models": 1,
    "store": 1,
    "_retries": 2,
    "_limits": 2,
    "_observe": 2,
    "otel": 3,
    "_runtime": 3,
    "decision": 4,
    "_run": 4,
    "_workers": 5,
    "distributed": 6,
    "ui": 6,  # the web inspector: cli starts it (engine ui)
    "cli": 7,
    "__init__": 8,
    "__main__": 9,
}


@dataclass(frozen=True)
class Import:
    """One import statement: who imports, what, and where it stands."""

    module: str  # the importing module, as a path under engine/
    line: int
    target: str  # the imported module, dotted


def unit_of(dotted: str) -> str | None:
    """Return the unit a dotted engine module belongs to (``None``: the package itself)."""
    parts = dotted.split(".")
    if parts[0] != "engine":
        return None
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _is_module(dotted: str) -> bool:
    """Tell whether ``dotted`` names a module or folder of the package."""
    parts = dotted.split(".")
    if parts[0] != "engine":
        return False
    where = PACKAGE.joinpath(*parts[1:])
    return where.with_suffix(".py").exists() or (where / "__init__.py").exists()


def imports_of(path: Path, source: str) -> list[Import]:
    """Every import of engine modules in ``source``, wherever it sits in the file."""
    rel = path.relative_to(PACKAGE.parent)
    package = ".".join(rel.with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.removesuffix(".__init__")
    else:
        package = package.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(str(rel), node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # ``from engine import decision``, ``from engine.store import _sqlite_sql``: a name
            # that is a module of the package is an import of that module.
            found += [
                Import(str(rel), node.lineno, f"{target}.{alias.name}")
                if _is_module(f"{target}.{alias.name}")
                else Import(str(rel), node.lineno, target)
                for alias in node.names
            ]
    return [i for i in found if i.target.split(".")[0] == "engine"]


def home_of(path: Path) -> str:
    """Return the unit a file of the package belongs to."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def violations(path: Path, source: str) -> list[str]:
    """Every import of ``source`` (the file at ``path``) that breaks the floors."""
    home = home_of(path)
    bad = []
    for imp in imports_of(path, source):
        unit = unit_of(imp.target)
        if unit is None or unit == home:
            continue
        where = f"{imp.module}:{imp.line} imports {imp.target}"
        if unit not in FLOORS:
            bad.append(f"{where}: {unit!r} stands on no floor (add it to FLOORS)")
        elif FLOORS[unit] == FLOORS[home]:
            bad.append(f"{where}: across a floor ({home} and {unit} stand side by side)")
        elif FLOORS[unit] > FLOORS[home]:
            bad.append(f"{where}: upwards ({home} on floor {FLOORS[home]}, {unit} above it)")
        elif imp.target.count(".") > 1:
            bad.append(f"{where}: past the face (import from engine.{unit})")
    return bad


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
        ".__init__"
    )


def module_graph() -> dict[str, set[str]]:
    """Every engine module and the engine modules it imports."""
    modules = {_dotted(path): path for path in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = {imp.target for imp in imports_of(path, path.read_text())}
        found = set()
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                found.add(target)
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the import circles of ``graph``: its strongly connected parts of two or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_layers_every_unit_stands_on_a_floor() -> None:
    units = {home_of(path) for path in _modules()}

    assert units - FLOORS.keys() == set()


def test_layers_every_folder_has_a_face_with_a_docstring_and_all() -> None:
    faceless = []
    for folder in sorted(p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"):
        tree = ast.parse((folder / "__init__.py").read_text())
        assigned = {
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        if not ast.get_docstring(tree) or "__all__" not in assigned:
            faceless.append(folder.name)

    assert faceless == []


def test_layers_imports_run_downwards_through_faces() -> None:
    bad = [v for path in _modules() for v in violations(path, path.read_text())]

    assert bad == []


def test_layers_no_import_circles() -> None:
    assert circles(module_graph()) == []


def test_layers_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert circles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("home", "source", "expected"),
    [
        pytest.param(
            "_base/_errors.py",
            "from engine._run import Engine\n",
            "upwards",
            id="upward",
        ),
        pytest.param(
            "models/_openai.py",
            "if TYPE_CHECKING:\n    from engine.store import Run\n",
            "across a floor",
            id="across-under-type-checking",
        ),
        pytest.param(
            "_run/_engine.py",
            "def f():\n    from engine._workers import submit\n",
            "upwards",
            id="upward-in-a-function",
        ),
        pytest.param(
            "_runtime/_runtime.py",
            "from engine._decision._menu import Menu\n",
            "past the face",
            id="past-the-face",
        ),
        pytest.param(
            "cli/_run.py",
            "import engine._run._engine\n",
            "past the face",
            id="plain-import-past-the-face",
        ),
        pytest.param(
            "cli/_stores.py",
            "from engine.store import _sqlite\n",
            "past the face",
            id="private-module-through-the-face",
        ),
    ],
)
def test_layers_rule_catches_a_bad_import(home: str, source: str, expected: str) -> None:
    found = violations(PACKAGE / home, source)

    assert len(found) == 1
    assert expected in found[0]


@pytest.mark.parametrize(
    ("home", "source"),
    [
        pytest.param("_run/_engine.py", "from engine._runtime import Runtime\n", id="down"),
        pytest.param("_run/_engine.py", "from engine._run._leases import Leases\n", id="same"),
        pytest.param("_run/_engine.py", "from . import _leases\n", id="relative-same"),
        pytest.param("cli/_run.py", "from engine import decision\n", id="public-module"),
    ],
)
def test_layers_rule_lets_a_good_import_through(home: str, source: str) -> None:
    assert violations(PACKAGE / home, source) == []
