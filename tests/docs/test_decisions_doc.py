"""docs/decisions.md: its snippets print what it shows, and every section the code cites exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "decisions.md"
TEXT = DOC.read_text(encoding="utf-8")

_HEADING = re.compile(r"^## §(\d+) (.+)$", re.MULTILINE)
# A fence closes on a line of its own: a snippet may hold backticks inside its strings.
_SNIPPET = re.compile(
    r"^```python\n(.*?)^```$(?:\n\nprints\n\n```\n(.*?)^```$)?", re.DOTALL | re.MULTILINE
)
_CITATION = re.compile(r"docs/decisions\.md §(\d+)(?:\.(\d+))?")
# The headings of the decision specification the sections follow one for one, so that a
# section number means the same thing in the code, the tests and the page.
TOPICS = {
    1: "Two entry points, one resolver",
    2: "Option containers",
    3: "The schema language",
    4: "Function options: parameters",
    5: "The menu",
    6: "Extracting the pick from a reply",
    7: "Validation, in order",
    8: "Re-pick and `DecisionError`",
    9: "Resolution",
    10: "Time",
    11: "The ambient runtime",
    12: "What is traced",
}


def sections() -> dict[int, str]:
    """Return each section's number and its text, heading included."""
    found = list(_HEADING.finditer(TEXT))
    ends = [m.start() for m in found[1:]] + [len(TEXT)]
    return {int(m.group(1)): TEXT[m.start() : end] for m, end in zip(found, ends, strict=True)}


def section_of(pos: int) -> int:
    return max((int(m.group(1)) for m in _HEADING.finditer(TEXT, 0, pos)), default=0)


SNIPPETS = [
    pytest.param(m.group(1), m.group(2), id=f"section{section_of(m.start())}-line{line}")
    for m in _SNIPPET.finditer(TEXT)
    for line in [TEXT.count("\n", 0, m.start()) + 2]
]


def citations() -> list[tuple[str, int, int | None]]:
    """Return every ``docs/decisions.md §n`` (or ``§n.i``) cited in the code, tests and README."""
    files = [ROOT / "README.md"]
    for folder in ("engine", "tests", "bench", "flows", "examples"):
        files.extend(sorted((ROOT / folder).rglob("*.py")))
    found = []
    for path in files:
        if not path.is_file():
            continue
        for m in _CITATION.finditer(path.read_text(encoding="utf-8")):
            item = int(m.group(2)) if m.group(2) else None
            found.append((str(path.relative_to(ROOT)), int(m.group(1)), item))
    return found


def test_decisions_doc_sections_are_the_specification_sections_in_order() -> None:
    headings = [(int(m.group(1)), m.group(2)) for m in _HEADING.finditer(TEXT)]

    assert headings == list(TOPICS.items())


@pytest.mark.parametrize(("code", "shown"), SNIPPETS)
def test_decisions_doc_snippet_prints_what_the_doc_shows(
    code: str, shown: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    exec(compile(code, str(DOC), "exec"), {"__name__": "decisions_doc_snippet"})

    printed = capsys.readouterr().out
    assert shown is not None, "every snippet shows what it prints"
    assert printed.rstrip("\n").splitlines() == shown.rstrip("\n").splitlines()


def test_decisions_doc_every_cited_section_exists() -> None:
    cited = citations()
    by_number = sections()

    assert any(path.startswith("engine") for path, _, _ in cited)
    for path, number, item in cited:
        assert number in by_number, f"{path} cites docs/decisions.md §{number}, which it lacks"
        if item is not None:
            assert re.search(rf"^{item}\. ", by_number[number], re.MULTILINE), (
                f"{path} cites §{number}.{item}, but §{number} has no item {item}"
            )


def test_decisions_doc_is_what_the_package_cites_for_its_rules() -> None:
    # The specification the rules came from is not shipped: a citation of it points a
    # reader at nothing.
    stale = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "engine").rglob("*.py"))
        if "DECISION-SPEC" in path.read_text(encoding="utf-8")
    ]

    assert stale == []
