"""The contract of ``prune`` over every store: one rule, ``keep_last`` protecting the newest.

A run goes when every rule given holds for it (finished longer ago than ``older_than_s``,
and not among the newest ``keep_last``), so ``keep_last`` keeps the newest whatever their
age; ``dry_run=True`` counts what would go and deletes nothing. The SQL of SQLite and
PostgreSQL and :func:`engine.store.prune_victims` give the same answer.
"""

from __future__ import annotations

import time

import pytest
import test_contract
from test_contract import keys, new_run, record

from engine import Engine
from engine.models import ScriptedModel
from engine.store import Run, Store, prune_victims

store = test_contract.store  # the contract suite's fixture: one run per store factory


async def finished_runs(store: Store, ages: dict[str, tuple[str, float]]) -> None:
    """Create runs ``{run_id: (status, seconds since it finished)}``, with a journal each."""
    now = time.time()
    for run_id, (status, age) in ages.items():
        await store.create_run(
            new_run(run_id, status=status, finished_at=now - age, updated_at=now - age)
        )
        await store.append(run_id, [record("a")])
        await store.save_trace(run_id, {"nodes": []})


async def remaining(store: Store) -> set[str]:
    return {r.run_id for r in await store.list_runs()}


async def test_prune_by_age_deletes_old_finished_runs_with_their_journals(store: Store) -> None:
    await finished_runs(
        store,
        {
            "old": ("completed", 3600),
            "new": ("completed", 1),
            "old-failed": ("failed", 7200),
            "old-cancelled": ("cancelled", 7200),
        },
    )
    assert await store.prune(older_than_s=60) == 3
    assert await remaining(store) == {"new"}
    assert await store.load_journal("old") == []
    assert await store.load_trace("old") is None
    assert await keys(store, "new") == ["a"]


async def test_prune_keep_last_keeps_the_newest_finished_runs(store: Store) -> None:
    await finished_runs(store, {f"r{n}": ("completed", float(n * 10)) for n in range(5)})
    assert await store.prune(keep_last=2) == 3
    assert await remaining(store) == {"r0", "r1"}


async def test_prune_keep_last_protects_the_newest_whatever_their_age(store: Store) -> None:
    # Every run is older than a second: only keep_last stands between them and the prune.
    await finished_runs(store, {f"r{n}": ("completed", 3600.0 + n) for n in range(5)})
    assert await store.prune(older_than_s=1, keep_last=100) == 0
    assert await remaining(store) == {f"r{n}" for n in range(5)}
    assert await store.prune(older_than_s=1, keep_last=2) == 3
    assert await remaining(store) == {"r0", "r1"}


async def test_prune_with_both_rules_deletes_only_old_runs_beyond_the_newest(
    store: Store,
) -> None:
    await finished_runs(
        store,
        {
            "a": ("completed", 1),
            "b": ("failed", 2),
            "c": ("completed", 3600),
            "d": ("cancelled", 7200),
        },
    )
    # b is beyond the newest one but recent; c and d are both old and beyond it.
    assert await store.prune(older_than_s=60, keep_last=1) == 2
    assert await remaining(store) == {"a", "b"}


async def test_prune_keep_last_counts_among_the_statuses_pruned(store: Store) -> None:
    # The newest run is suspended: it is not pruned, and it takes no place among the kept.
    await finished_runs(
        store, {"s": ("suspended", 1), "c1": ("completed", 100), "c2": ("completed", 200)}
    )
    assert await store.prune(keep_last=1) == 1
    assert await remaining(store) == {"s", "c1"}


async def test_prune_by_default_spares_suspended_waiting_and_unfinished_runs(
    store: Store,
) -> None:
    await finished_runs(
        store,
        {
            "s": ("suspended", 9999),
            "w": ("waiting", 9999),
            "q": ("queued", 9999),
            "r": ("running", 9999),
            "c": ("completed", 9999),
        },
    )
    assert await store.prune(older_than_s=0, keep_last=0, dry_run=True) == 1
    assert await store.prune(older_than_s=0, keep_last=0) == 1
    assert await remaining(store) == {"s", "w", "q", "r"}


async def test_prune_deletes_only_the_statuses_given(store: Store) -> None:
    await finished_runs(
        store, {"s": ("suspended", 9999), "f": ("failed", 9999), "c": ("completed", 9999)}
    )
    assert await store.prune(older_than_s=60, statuses=["suspended", "failed"]) == 2
    assert await remaining(store) == {"c"}


async def test_prune_without_a_rule_deletes_nothing(store: Store) -> None:
    await finished_runs(store, {"c": ("completed", 9999)})
    assert await store.prune() == 0
    assert await store.prune(dry_run=True) == 0
    assert await remaining(store) == {"c"}


AGES = {
    "n0": ("completed", 5.0),
    "n1": ("failed", 50.0),
    "n2": ("cancelled", 500.0),
    "n3": ("completed", 5000.0),
    "n4": ("completed", 50000.0),
    "n5": ("failed", 500000.0),
    "s": ("suspended", 500000.0),
}


@pytest.mark.parametrize(
    ("older_than_s", "keep_last"),
    [(None, 0), (None, 3), (None, 10), (0, None), (100, None), (100, 0), (100, 2), (100, 4)],
    ids=lambda v: f"{v}",
)
async def test_prune_dry_run_counts_what_prune_deletes_and_deletes_nothing(
    store: Store, older_than_s: float | None, keep_last: int | None
) -> None:
    await finished_runs(store, AGES)
    runs = [r for r in await store.list_runs() if r.status != "suspended"]
    expected = prune_victims(runs, older_than_s=older_than_s, keep_last=keep_last)
    rules = {"older_than_s": older_than_s, "keep_last": keep_last}
    assert await store.prune(**rules, dry_run=True) == len(expected)
    assert await remaining(store) == set(AGES)  # a dry run deletes nothing
    assert await store.prune(**rules) == len(expected)
    assert await remaining(store) == set(AGES) - set(expected)


def test_prune_victims_is_newest_first_and_reads_any_order() -> None:
    now = 1_000_000.0
    runs = [
        Run.model_construct(run_id=run_id, finished_at=now - age, updated_at=0.0)
        for run_id, age in (("old", 900.0), ("new", 1.0), ("mid", 90.0), ("tie-b", 90.0))
    ]
    kept_two = prune_victims(runs, older_than_s=None, keep_last=2, now=now)
    assert kept_two == ["mid", "old"]  # "tie-b" and "mid" tie on age: the larger id is newer
    assert prune_victims(runs, older_than_s=60, keep_last=None, now=now) == [
        "tie-b",
        "mid",
        "old",
    ]
    assert prune_victims(runs, older_than_s=60, keep_last=3, now=now) == ["old"]
    assert prune_victims(runs, older_than_s=None, keep_last=None, now=now) == []


async def test_engine_prune_dry_run_is_the_store_dry_run(store: Store) -> None:
    await finished_runs(store, {"a": ("completed", 1), "b": ("completed", 9999)})
    engine = Engine(model=ScriptedModel([]), store=store)
    assert await engine.prune(older_than_s=60, dry_run=True) == 1
    assert await remaining(store) == {"a", "b"}
    assert await engine.prune(older_than_s=60) == 1
    assert await remaining(store) == {"a"}
