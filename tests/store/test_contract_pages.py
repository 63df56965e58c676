"""The contract of ``page_runs`` and ``count_runs_by_status`` over every store.

A page is read newest first after a key (the ``(created_at, run_id)`` of the last run
shown), filtered by status, flow and an id prefix; walking the pages visits every matching
run exactly once, in order, whatever runs share a ``created_at``.
"""

from __future__ import annotations

import pytest
import test_contract
from hypothesis import given, settings
from hypothesis import strategies as st
from test_contract import new_run

from engine.store import MemoryStore, Run, Store

store = test_contract.store  # the contract suite's fixture: one run per store factory


async def walk(store: Store, limit: int, **filters: object) -> list[str]:
    """Every run id the pages show, page after page."""
    seen: list[str] = []
    after: tuple[float, str] | None = None
    while True:
        page = await store.page_runs(after=after, limit=limit, **filters)  # type: ignore[arg-type]
        seen += [r.run_id for r in page]
        if len(page) < limit:
            return seen
        after = (page[-1].created_at, page[-1].run_id)


async def test_page_runs_walks_every_run_newest_first_once(store: Store) -> None:
    # Three runs share one created_at: the run id orders them, and no page repeats one.
    for i, at in enumerate([1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 5.0]):
        await store.create_run(new_run(f"r{i}", created_at=at))

    assert await walk(store, 2) == ["r6", "r5", "r4", "r3", "r2", "r1", "r0"]
    assert [r.run_id for r in await store.page_runs(limit=3)] == ["r6", "r5", "r4"]


async def test_page_runs_filters_by_status_flow_and_id_prefix(store: Store) -> None:
    await store.create_run(new_run("ab-1", status="completed", created_at=1.0))
    await store.create_run(new_run("ab-2", status="suspended", created_at=2.0))
    await store.create_run(new_run("ac-3", status="suspended", created_at=3.0, flow="other:f"))
    await store.create_run(new_run("b-4", status="suspended", created_at=4.0))

    assert await walk(store, 10, status="suspended") == ["b-4", "ac-3", "ab-2"]
    assert await walk(store, 10, flow="other:f") == ["ac-3"]
    assert await walk(store, 1, search="ab") == ["ab-2", "ab-1"]
    assert await walk(store, 10, search="a", status="suspended", flow="other:f") == ["ac-3"]
    assert await walk(store, 10, search="zz") == []


async def test_count_runs_by_status_counts_every_status_held(store: Store) -> None:
    assert await store.count_runs_by_status() == {}
    for i, status in enumerate(["completed", "completed", "suspended", "waiting"]):
        await store.create_run(new_run(f"r{i}", status=status))

    assert await store.count_runs_by_status() == {"completed": 2, "suspended": 1, "waiting": 1}


@pytest.mark.parametrize(
    ("after", "limit"),
    [(None, 0), (None, 1001), (None, True), ((1.0,), 10), (("x", "y"), 10), ((1.0, 2), 10)],
)
async def test_page_runs_refuses_a_page_it_cannot_read(
    store: Store, after: object, limit: object
) -> None:
    with pytest.raises(ValueError, match=r"limit=|after="):
        await store.page_runs(after=after, limit=limit)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    runs=st.lists(
        st.tuples(st.sampled_from("abc"), st.integers(0, 4), st.sampled_from(["ok", "bad"])),
        max_size=25,
    ),
    limit=st.integers(1, 6),
    search=st.sampled_from(["", "a", "b-", "c-1"]),
)
async def test_page_runs_of_any_runs_is_the_sorted_filtered_list(
    runs: list[tuple[str, int, str]], limit: int, search: str
) -> None:
    store = MemoryStore()
    made: list[Run] = []
    for i, (prefix, at, kind) in enumerate(runs):
        status = "completed" if kind == "ok" else "failed"
        run = new_run(f"{prefix}-{i}", created_at=float(at), status=status)
        made.append(run)
        await store.create_run(run)
    expected = [
        r.run_id
        for r in sorted(made, key=lambda r: (r.created_at, r.run_id), reverse=True)
        if r.run_id.startswith(search) and r.status == "failed"
    ]

    assert await walk(store, limit, search=search, status="failed") == expected
