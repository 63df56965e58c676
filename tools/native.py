"""Compile the engine's hot synchronous modules with mypyc, in place (``make native``).

The engine is pure Python and runs as such. ``make install`` also compiles the modules listed
in :data:`MODULES` with mypyc (part of mypy): each gets a C extension beside its ``.py``,
which Python imports instead of it. They are the per-transition path's plain functions and
classes (a trace's export, the JSON checks, menus and picks, a run's outcome and spending,
the stores' encoding); compiled, they run the same code, checked by the same tests, with
fewer instructions a call. What is never compiled: a module with a coroutine or a generator (a
compiled coroutine can crash its process when it is cancelled: mypy issue #12867), a module
of public classes (a compiled class can be neither copied nor subclassed from Python), and the
modules whose functions check their callers' arguments themselves.

    python tools/native.py build    # compile them (about a minute, gcc and Python headers)
    python tools/native.py clean    # remove the extensions: the engine runs as pure Python
    python tools/native.py status   # which modules run compiled, and any that are stale
    python tools/native.py sources  # the listed modules' sources, for make to depend on

An extension older than its ``.py`` is stale: it runs the code as it was when compiled.
``make`` rebuilds it whenever a listed ``.py`` changes, and the test suite refuses to start on
a stale one (``ENGINE_PURE_PYTHON=1`` runs the suite on the ``.py`` files instead).
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The compiled modules, as paths from the project's root.
MODULES = (
    "engine/_base/_json.py",
    "engine/_base/_scopes.py",
    "engine/_base/_status.py",
    "engine/_base/_summary.py",
    "engine/_decision/_menu.py",
    "engine/_decision/_picks.py",
    "engine/_decision/_validate.py",
    "engine/_run/_flows.py",
    "engine/_run/_outcome.py",
    "engine/_run/_records.py",
    "engine/_run/_spending.py",
    "engine/_runtime/_replies.py",
    "engine/_runtime/_requests.py",
    "engine/store/_checks.py",
)

#: The extension that holds mypyc's runtime, shared by the compiled modules.
GROUP = "engine._native"

_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def extension(module: str) -> Path:
    """The extension a compiled ``module`` (a path from the root) is imported from."""
    return ROOT / (module.removesuffix(".py") + _SUFFIX)


def _all_extensions() -> list[Path]:
    """Every compiled extension in the package (also of modules no longer listed)."""
    return sorted((ROOT / "engine").rglob(f"*{_SUFFIX}"))


def stale() -> list[str]:
    """The compiled modules whose ``.py`` is newer than their extension, or not listed; or,
    where some are compiled but not all, the listed ones that are not: the compiled modules
    call each other's compiled code directly, so they are compiled and imported together,
    never a part of them beside the sources of the rest."""
    built = [m for m in MODULES if extension(m).exists()]
    found: list[str] = [m for m in MODULES if built and m not in built]
    for ext in _all_extensions():
        source = ext.with_name(ext.name.removesuffix(_SUFFIX) + ".py")
        if not source.exists():
            continue  # the group's runtime: no source of its own
        if (
            source.relative_to(ROOT).as_posix() not in MODULES
            or source.stat().st_mtime > ext.stat().st_mtime
        ):
            found.append(source.relative_to(ROOT).as_posix())
    return found


def build() -> None:
    """Compile :data:`MODULES` in place."""
    from mypyc.build import mypycify  # mypy, a dev dependency
    from setuptools import setup

    clean()
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="engine-native-") as work:
        # Everything is generated and compiled afresh, in a folder of its own: a build
        # folder kept from before could hand back an older extension.
        setup(
            name="engine-native",
            packages=[],
            py_modules=[],
            ext_modules=mypycify(
                list(MODULES), opt_level="3", group_name=GROUP, target_dir=f"{work}/c"
            ),
            script_args=[
                "--quiet",
                "build_ext",
                "--inplace",
                "--build-temp",
                f"{work}/temp",
                "--build-lib",
                f"{work}/lib",
            ],
        )
    for module in MODULES:  # compiled now, from the sources as they are now
        if extension(module).exists():
            os.utime(extension(module))
    missing = [m for m in MODULES if not extension(m).exists()]
    if missing:
        raise SystemExit(f"mypyc built no extension for: {', '.join(missing)}")


def clean() -> None:
    """Remove every compiled extension of the package."""
    for ext in _all_extensions():
        ext.unlink()


def status() -> int:
    """Print which modules run compiled; return 1 when any is stale."""
    for module in MODULES:
        print(f"{'compiled' if extension(module).exists() else 'python  '}  {module}")
    old = stale()
    for module in old:
        print(f"stale: {module} (changed since, or not compiled with the rest): make native")
    return 1 if old else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("build", "clean", "status", "sources"))
    action = parser.parse_args().action
    if action == "sources":
        print(" ".join(MODULES))
        return
    if action == "build":
        build()
        sys.exit(status())
    if action == "clean":
        clean()
        return
    sys.exit(status())


if __name__ == "__main__":
    main()
