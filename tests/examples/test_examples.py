"""Every example runs offline, start to finish, in a few seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples"

CASES = {
    "quickstart.py": ([], "decisions, picks"),
    "resume_after_decision_error.py": ([], "resumed by hand: completed"),
    "many_tickets.py": (["--tickets", "120", "--concurrency", "60"], "120 tickets in"),
    "custom_provider.py": ([], "every pick validated against the menu"),
    "openai_compatible.py": ([], "OPENAI_API_KEY is not set"),
    "make_tickets.py": (["--check"], ""),
    "people_in_the_loop.py": ([], "t-2: completed: refunded 450.00 EUR"),
}


def offline_env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return {**keep, "PYTHONPATH": str(ROOT)}


def test_every_example_has_a_case() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_runs_offline(name: str, tmp_path: Path) -> None:
    args, expected = CASES[name]
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=tmp_path,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout
    assert "Traceback" not in result.stderr
