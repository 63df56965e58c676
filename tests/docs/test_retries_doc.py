"""docs/retries.md: its snippets run as written, and its defaults table matches the code."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from engine import (
    CircuitBreaker,
    Engine,
    decision_policy,
    run_policy,
    step_policy,
    transport_policy,
)
from engine._limits._limiter import DEFAULT_PAUSE_S
from engine._run._batch import DEFAULT_CONCURRENCY

DOC = Path(__file__).resolve().parents[2] / "docs" / "retries.md"
TEXT = DOC.read_text(encoding="utf-8")
_SNIPPET = re.compile(r"<!-- snippet: (\w+) -->\n```python\n(.*?)```", re.DOTALL)
SNIPPETS = dict(_SNIPPET.findall(TEXT))


def run_snippet(name: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    exec(compile(SNIPPETS[name], f"{DOC}:{name}", "exec"), {"__name__": f"snippet_{name}"})
    return capsys.readouterr().out.splitlines()


def row(what: str) -> str:
    found = re.search(rf"^\| {re.escape(what)} \|(.*)$", TEXT, re.MULTILINE)
    assert found is not None, f"no row {what!r} in the defaults table"
    return found.group(1)


def defaults(fn: object) -> dict[str, object]:
    params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    return {p.name: p.default for p in params}


def test_retries_doc_fallback_snippet_prints_what_the_doc_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = run_snippet("fallback", capsys)

    shown = TEXT.split("<!-- snippet: fallback -->")[1].split("prints\n\n```\n")[1]
    assert printed == shown.split("```")[0].strip().splitlines()


def test_retries_doc_batch_snippet_cancels_then_resumes_every_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = run_snippet("batch", capsys)

    cancelled, completed = re.findall(r"\d+", printed[-2])
    assert int(cancelled) > 0
    assert printed[-1] == f"{int(cancelled) + int(completed)} completed after the resumes"


def test_retries_doc_defaults_table_matches_the_code() -> None:
    transport = defaults(transport_policy)
    assert f"{transport['attempts']} attempts" in row("transport retries (layer 0)")
    assert f"backoff {transport['initial']} s" in row("transport retries (layer 0)")
    assert f"at most {transport['max_wait']:g} s" in row("transport retries (layer 0)")
    assert f"after {transport['max_delay_s']:g} s" in row("transport retries (layer 0)")
    step = defaults(step_policy)
    assert f"({step['attempts']} runs" in row("step retry (layer 3)")
    assert f"to {step['max_wait']:g} s, within {step['max_delay_s']:g} s" in row(
        "step retry (layer 3)"
    )
    run = defaults(run_policy)
    assert f"{run['attempts']} executions, resumed after {run['initial']:g} s" in row(
        "run auto-resume (layer 4)"
    )
    assert f"doubling to {run['max_wait']:g} s" in row("run auto-resume (layer 4)")
    assert decision_policy().retrying.stop.max_attempt_number == 2  # type: ignore[attr-defined]
    breaker = CircuitBreaker()
    assert (
        f"{breaker.failures} transport failures in a row open it for {breaker.reset_s:g} s"
        in row("circuit breaker")
    )
    assert f"at most {breaker.max_wait_s:g} s" in row("circuit breaker")
    assert f"({DEFAULT_PAUSE_S:g} s when it gives none)" in row("429 pause")
    assert f"else {DEFAULT_CONCURRENCY}" in row("runs of a batch in flight")
    engine = defaults(Engine)
    assert f"{engine['grace_s']:g} s" in row("shutdown grace")
    assert engine["timeout_s"] is None
    assert engine["budget"] is None
    assert engine["run_policy"] is None
    assert engine["decision_policy"] is None
