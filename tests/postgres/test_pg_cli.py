"""``engine submit`` and ``engine worker`` from the command line, on a fresh schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app

EXAMPLES = Path(__file__).parents[2] / "examples" / "data" / "tickets.jsonl"


@pytest.fixture
def store_url(pg_dsn: str, pg_schema: str) -> str:
    return f"{pg_dsn}?schema={pg_schema}"


@pytest.fixture
def tickets(tmp_path: Path) -> Path:
    path = tmp_path / "tickets.jsonl"
    path.write_text("".join(EXAMPLES.read_text().splitlines(keepends=True)[:6]))
    return path


def _engine(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_submit_then_a_one_shot_worker_completes_the_runs(store_url: str, tickets: Path) -> None:
    code, out, err = _engine(
        "submit",
        "ticket_routing",
        "-i",
        str(tickets),
        "--store",
        store_url,
        "--max-concurrency",
        "2",
    )
    assert code == 0, err
    assert "queued 6 run(s)" in " ".join(out.split())
    code, out, err = _engine("submit", "ticket_routing", "-i", str(tickets), "--store", store_url)
    assert "queued 0 run(s)" in " ".join(out.split())
    code, out, err = _engine(
        "worker", "--store", store_url, "--one-shot", "-m", "simulated:seed=11", "-c", "4"
    )
    assert code == 0, err
    code, out, err = _engine("runs", "--json", "--store", store_url)
    runs = [json.loads(line) for line in out.splitlines()]
    assert len(runs) == 6
    assert {r["status"] for r in runs} <= {"completed", "suspended"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["submit", "ticket_routing"], "--input", id="no-input"),
        pytest.param(["submit", "--resume", "ghost"], "no run 'ghost'", id="unknown-run"),
        pytest.param(
            ["submit", "ticket_routing", "-i", "x", "--pick", "{}"],
            "go with --resume",
            id="pick-without-resume",
        ),
    ],
)
def test_submit_errors_name_the_fix(store_url: str, args: list[str], message: str) -> None:
    code, _, err = _engine(*args, "--store", store_url)
    assert code == 2
    assert message in " ".join(err.split())


def test_worker_needs_a_postgres_store(tmp_path: Path) -> None:
    code, _, err = _engine("worker", "--store", "memory://", "--one-shot")
    assert code == 2
    assert "needs a PostgreSQL store" in " ".join(err.split())


def test_resume_on_worker_hands_the_resume_to_a_worker(store_url: str, tickets: Path) -> None:
    code, _, err = _engine("submit", "ticket_routing", "-i", str(tickets), "--store", store_url)
    assert code == 0, err
    faulty = "simulated:seed=3,faults=1.0"
    code, _, err = _engine("worker", "--store", store_url, "--one-shot", "-m", faulty)
    assert code == 0, err
    code, out, _ = _engine("runs", "--json", "--status", "suspended", "--store", store_url)
    stuck = [json.loads(line)["run_id"] for line in out.splitlines()]
    assert stuck
    code, out, err = _engine("resume", stuck[0], "--on-worker", "--store", store_url)
    assert code == 0, err
    assert "a worker will execute it" in " ".join(out.split())
    code, _, err = _engine("worker", "--store", store_url, "--one-shot", "-m", "simulated:seed=11")
    assert code == 0, err
    code, out, _ = _engine("show", stuck[0], "--json", "--store", store_url)
    assert json.loads(out)["run"]["status"] == "completed"
