"""A batch with hostile replies mixed in returns every run: good tickets complete, the rest stop.

A thousand tickets on one SQLite store; every fifth is hostile, each hostile kind a model's
reply, a step or a tool can hold. None of them may stop the batch or another ticket's run,
and each stops its own run with a stored reason.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from hostile_options import GOOD, OPTIONS, SURROGATE

from engine import Engine, Runtime, agentic_function, decision
from engine.models import Request, ScriptedModel
from engine.store import SQLiteStore


@agentic_function
async def handle(ticket: str, runtime: Runtime | None = None) -> str:
    """One decision; a ``result-`` ticket's flow returns a value holding a lone surrogate."""
    result: str = await decision.make(
        f"Handle ticket {ticket}.",
        OPTIONS,
    )
    return result + SURROGATE if ticket.startswith("result-") else result


#: Each kind of ticket: the reply its model gives, and how its run ends (status, error kind).
KINDS: dict[str, tuple[str, str, str | None]] = {
    "good": (GOOD, "completed", None),
    # NUL is text JSON carries (as an escape): not hostile, however odd.
    "nul": ('{"call": "refund", "args": {"reason": "a\\u0000b"}}', "completed", None),
    "noise": (f"thinking {SURROGATE}\x00 {GOOD}", "completed", None),
    "escaped": ('{"call": "refund", "args": {"reason": "\\ud800"}}', "suspended", "bad_args"),
    "raw": (f'{{"call": "refund", "args": {{"reason": "{SURROGATE}"}}}}', "suspended", "bad_args"),
    # An argument the option does not take is dropped, whatever its name holds.
    "key": ('{"call": "refund", "args": {"reason": "x", "\\udc00": 1}}', "completed", None),
    # A number out of a float's range keeps its pick a pick: its argument is the error.
    "infinite": ('{"call": "pay", "args": {"amount": 1e999}}', "suspended", "type_mismatch"),
    "nan": ('{"call": "pay", "args": {"amount": NaN}}', "suspended", "no_action"),
    "huge": (
        '{"call": "pay", "args": {"amount": ' + "9" * 5000 + "}}",
        "suspended",
        "type_mismatch",
    ),
    "deep": (
        '{"call": "refund", "args": {"reason": ' + "[" * 5000 + "]" * 5000 + "}}",
        "suspended",
        "no_action",
    ),
    "garbage": (f"{SURROGATE * 3}\x00{{{{[[", "suspended", "no_action"),
    "step": ('{"call": "lookup", "args": {"order": "o"}}', "failed", "JournalError"),
    "tool": ('{"call": "explode", "args": {"order": "o"}}', "failed", "RuntimeError"),
    "result": (GOOD, "failed", "JournalError"),
}
#: The kinds mixed in among the good tickets: the hostile ones and the odd but harmless.
MIXED = [kind for kind in KINDS if kind != "good"]


def _reply(request: Request) -> str:
    found = re.search(r"Handle ticket (\w+)-", " ".join(m.text for m in request.messages))
    assert found is not None
    return KINDS[found[1]][0]


def _tickets(n: int) -> list[str]:
    """Every fifth ticket of a mixed kind, the kinds in turn; the others good."""
    return [f"{MIXED[(i // 5) % len(MIXED)]}-{i}" if i % 5 == 4 else f"good-{i}" for i in range(n)]


async def test_a_thousand_tickets_with_hostile_replies_return_every_run(tmp_path: Path) -> None:
    tickets = _tickets(1000)
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        engine = Engine(ScriptedModel(_reply), store=store, concurrency=32)
        runs = await engine.run_many(handle, tickets, run_id=lambda t: t)
        assert [r.run_id for r in runs] == tickets  # every run returned, in order
        ends: Counter[tuple[str, str, str | None]] = Counter()
        for ticket, run in zip(tickets, runs, strict=True):
            kind = ticket.split("-")[0]
            _, status, error_kind = KINDS[kind]
            assert run.status == status, (ticket, run.error)
            if status == "completed":
                assert run.error is None
            else:
                assert run.error is not None
                assert run.error.message  # the reason, stored
                if error_kind is not None:
                    assert run.error.kind == error_kind, (ticket, run.error)
            ends[kind, run.status, run.error.kind if run.error else None] += 1
        assert sum(ends.values()) == 1000
        assert {kind for kind, _, _ in ends} == set(KINDS)  # every kind was in the batch
        stored = {r.run_id: r for r in await store.list_runs(limit=2000)}
        assert len(stored) == 1000
        assert all(stored[r.run_id] == r for r in runs)  # stored as returned, none running
    finally:
        await store.close()
