"""``engine prune``: ``--keep-last`` protects the newest whatever their age; ``--dry-run``.

A run goes when every rule given holds (finished longer ago than ``--older-than`` and not
among the newest ``--keep-last``); suspended and waiting runs are never pruned; a dry run
lists what would go, deletes nothing, and only reads the store.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from cli_support import Cli, stored_statuses

from engine.store import Run, SQLiteStore

HOUR = 3600.0


def finished(path: Path, ages: dict[str, tuple[str, float]]) -> None:
    """Store runs ``{run_id: (status, seconds since it finished)}``."""
    now = time.time()

    async def write() -> None:
        async with SQLiteStore(path) as store:
            for run_id, (status, age) in ages.items():
                await store.create_run(
                    Run(
                        run_id=run_id,
                        flow="flows.ticket_routing:route_ticket",
                        status=status,  # type: ignore[arg-type]
                        finished_at=now - age,
                        updated_at=now - age,
                    )
                )

    anyio.run(write)


@pytest.fixture
def old_runs(cli: Cli, tmp_path: Path) -> Path:
    """Five completed runs one to five hours old, and a suspended and a waiting one older."""
    path = tmp_path / "runs.db"
    ages = {f"C-{n}": ("completed", n * HOUR) for n in range(1, 6)}
    finished(path, {**ages, "S-1": ("suspended", 99 * HOUR), "W-1": ("waiting", 99 * HOUR)})
    return path


def test_keep_last_protects_the_newest_whatever_their_age(cli: Cli, old_runs: Path) -> None:
    result = cli("prune", "--older-than", "1s", "--keep-last", "100")
    assert result.exit_code == 0, result.output
    assert result.stdout == "deleted 0 finished run(s)\n"
    assert len(stored_statuses(old_runs)) == 7
    two = cli("prune", "--older-than", "1s", "--keep-last", "2")
    assert two.stdout == "deleted 3 finished run(s)\n"
    assert set(stored_statuses(old_runs)) == {"C-1", "C-2", "S-1", "W-1"}


def test_with_both_rules_only_old_runs_beyond_the_newest_go(cli: Cli, old_runs: Path) -> None:
    # C-1 and C-2 are the newest two; of the others, only those over 3.5 hours old go.
    result = cli("prune", "--older-than", "210m", "--keep-last", "2")
    assert result.stdout == "deleted 2 finished run(s)\n"
    assert set(stored_statuses(old_runs)) == {"C-1", "C-2", "C-3", "S-1", "W-1"}


def test_suspended_and_waiting_runs_are_never_pruned(cli: Cli, old_runs: Path) -> None:
    result = cli("prune", "--keep-last", "0")
    assert result.stdout == "deleted 5 finished run(s)\n"
    assert stored_statuses(old_runs) == {"S-1": "suspended", "W-1": "waiting"}


def test_dry_run_lists_what_would_go_and_deletes_nothing(cli: Cli, old_runs: Path) -> None:
    before = stored_statuses(old_runs)
    old_runs.chmod(0o444)  # a dry run only reads: a read-only store will do
    try:
        result = cli("prune", "--older-than", "150m", "--keep-last", "1", "--dry-run")
    finally:
        old_runs.chmod(0o644)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "would delete 3 finished run(s); a dry run deletes nothing\n"
        "  C-3  route_ticket  completed  finished 3h ago\n"
        "  C-4  route_ticket  completed  finished 4h ago\n"
        "  C-5  route_ticket  completed  finished 5h ago\n"
    )
    assert stored_statuses(old_runs) == before
    real = cli("prune", "--older-than", "150m", "--keep-last", "1")
    assert real.stdout == "deleted 3 finished run(s)\n"


def test_dry_run_of_nothing_to_prune(cli: Cli, old_runs: Path) -> None:
    result = cli("prune", "--keep-last", "10", "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout == "would delete 0 finished run(s); a dry run deletes nothing\n"


def test_prune_help_says_the_rule(cli: Cli) -> None:
    shown = cli("prune", "--help", store=False).stdout
    text = " ".join(shown.replace("│", " ").split())  # the options' box, unwrapped
    assert "Keep the newest N finished runs whatever their age" in text
    assert "--dry-run" in text
    assert "waiting runs (they wait for a person)" in text
