"""docs/people.md: its runnable snippet prints what the page shows, and the code cites it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "docs" / "people.md").read_text(encoding="utf-8")
_SNIPPET = re.compile(r"^```python\n(.*?)^```$\n\nprints\n\n```\n(.*?)^```$", re.DOTALL | re.M)


def test_people_doc_snippets_print_what_they_show(tmp_path: Path) -> None:
    snippets = _SNIPPET.findall(TEXT)
    assert snippets
    for code, shown in snippets:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == shown


def test_people_doc_is_where_the_docstrings_point() -> None:
    cited = [p for p in (ROOT / "engine").rglob("*.py") if "docs/people.md" in p.read_text("utf-8")]
    assert cited
    for heading in ("Human decisions", "Approvals", "Deadlines", "on_waiting", "Answering"):
        assert re.search(rf"^## .*{heading}", TEXT, re.M), heading
