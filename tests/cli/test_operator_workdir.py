"""``engine resume`` finds a flow of one's own in the working folder, as ``engine run`` does.

Child processes, as a user runs them: the ``engine`` command puts the working folder on the
import path for both, so a package next to the data (``myflows.triage:route``) that runs
from there resumes from there; from elsewhere the error names the flow, the folder, the
reason and the fix, once.
"""

from __future__ import annotations

from pathlib import Path

from cli_support import engine_process, write_jsonl

ALL_BAD = "simulated:seed=1,faults=1"
FLOW = """
from typing import Any

from engine import decision


async def route(ticket: dict[str, Any]) -> object:
    return await decision.make(f"Queue for {ticket['id']}?", ["billing", "shipping"])
"""


def project(tmp_path: Path) -> Path:
    """A working folder with a flow package of its own, and runs of it suspended in a store."""
    work = tmp_path / "work"
    (work / "myflows").mkdir(parents=True)
    (work / "myflows" / "__init__.py").write_text("")
    (work / "myflows" / "triage.py").write_text(FLOW)
    write_jsonl(work / "in.jsonl", [{"id": f"T-{n}"} for n in range(1, 4)])
    ran = engine_process(
        "run", "myflows.triage:route", "-i", "in.jsonl", "-s", "runs.db", "-m", ALL_BAD, cwd=work
    )
    assert ran.returncode == 1, ran.stderr  # every run suspended
    return work


def test_a_flow_of_the_working_folder_resumes_from_it(tmp_path: Path) -> None:
    work = project(tmp_path)
    one = engine_process("resume", "T-1", "-s", "runs.db", "-m", "simulated:1", cwd=work)
    assert one.returncode == 0, one.stderr
    assert "completed" in one.stdout
    rest = engine_process(
        "resume", "--all-suspended", "-s", "runs.db", "-m", "simulated:1", cwd=work
    )
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout.startswith("resumed 2 suspended run(s)\n")


def test_from_another_folder_the_error_names_the_fix_once(tmp_path: Path) -> None:
    work = project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = str(work / "runs.db")
    why = (
        f"cannot find flow 'myflows.triage:route' from {elsewhere}: cannot import module "
        "'myflows.triage' (No module named 'myflows'); run the command from the folder the "
        "flow's module lives in (or put that folder on PYTHONPATH)"
    )
    one = engine_process("resume", "T-1", "-s", store, "-m", "simulated:1", cwd=elsewhere)
    assert one.returncode == 2, one.stderr
    assert one.stderr == f"error: {why}\n"
    many = engine_process(
        "resume", "--all-suspended", "-s", store, "-m", "simulated:1", cwd=elsewhere
    )
    assert many.returncode == 3, many.stderr  # none could start
    assert many.stdout.startswith("resumed 0 of 3 suspended run(s): none could start\n")
    printed = " ".join(many.stdout.split())
    assert printed.count("cannot find flow") == 1
    assert f"3 runs (T-1, T-2, T-3): {why}" in printed
    assert many.stderr.count("cannot find flow") == 1  # its log line, once for the three
