"""``engine submit`` and ``engine worker`` from the command line, on a fresh schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples" / "data" / "tickets.jsonl"


@pytest.fixture
def store_url(pg_dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TICKET_REFUND_APPROVAL_LIMIT", "inf")  # no refund waits for a person
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
        pytest.param(
            ["submit", "--resume", "ghost", "--priority", "3", "--queue", "other"],
            "--queue, --priority and --max-concurrency",
            id="dispatch-with-resume",
        ),
        pytest.param(
            ["submit", "--resume", "ghost", "--queue", "engine"],
            "the queue, priority and lane it was submitted with",
            id="default-queue-with-resume",
        ),
        pytest.param(
            ["submit", "--resume", "ghost", "--max-concurrency", "2"],
            "--queue, --priority and --max-concurrency",
            id="limit-with-resume",
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


def _flow_module(folder: Path) -> str:
    """Write a one-flow module in ``folder`` (importable only with it on the path); its name."""
    name = f"probe_flows_{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / f"{name}.py").write_text(
        "async def shout(ticket: dict[str, str]) -> str:\n    return ticket['text'].upper()\n"
    )
    return name


def _worker_process(store_url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A one-shot worker in a process of its own, whose path lacks the submitter's folders."""
    keep = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENGINE_STORE")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "worker",
            "--store",
            store_url,
            "--one-shot",
            "-m",
            "simulated",
        ],
        cwd=cwd,
        env={**keep, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_worker_that_cannot_import_the_flow_fails_the_run_and_a_resume_completes_it(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _flow_module(tmp_path / "mine")
    monkeypatch.syspath_prepend(str(tmp_path / "mine"))
    inputs = tmp_path / "in.jsonl"
    inputs.write_text('{"id": "p-1", "text": "hi"}\n')
    code, _, err = _engine("submit", f"{module}:shout", "-i", str(inputs), "--store", store_url)
    assert code == 0, err
    (tmp_path / "elsewhere").mkdir()
    ran = _worker_process(store_url, tmp_path / "elsewhere")
    assert ran.returncode == 0, ran.stderr
    code, out, _ = _engine("show", "p-1", "--json", "--store", store_url)
    run = json.loads(out)["run"]
    assert (run["status"], run["error"]["kind"]) == ("failed", "LookupError")
    assert f"{module}:shout" in run["error"]["message"]
    assert "engine submit --resume p-1" in run["error"]["message"]
    code, out, err = _engine("submit", "--resume", "p-1", "--store", store_url)
    assert code == 0, err
    code, _, err = _engine("worker", "--store", store_url, "--one-shot", "-m", "simulated")
    assert code == 0, err
    code, out, _ = _engine("show", "p-1", "--json", "--store", store_url)
    run = json.loads(out)["run"]
    assert (run["status"], run["result"], run["resumes"]) == ("completed", "HI", 1)


def test_resume_on_worker_takes_a_unique_start_of_a_run_id(store_url: str, tmp_path: Path) -> None:
    lines = [json.loads(line) for line in EXAMPLES.read_text().splitlines()[:3]]
    for line, run_id in zip(lines, ["alpha-7", "alpha-8", "beta-9"], strict=True):
        line["id"] = run_id
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, _, err = _engine("submit", "ticket_routing", "-i", str(inputs), "--store", store_url)
    assert code == 0, err
    faulty = "simulated:seed=3,faults=1.0"
    code, _, err = _engine("worker", "--store", store_url, "--one-shot", "-m", faulty)
    assert code == 0, err
    code, _, err = _engine("resume", "alpha", "--on-worker", "--store", store_url)
    assert code == 2
    assert "'alpha' is the start of 2 run ids" in " ".join(err.split())
    code, out, err = _engine("resume", "be", "--on-worker", "--store", store_url)
    assert code == 0, err
    assert "queued a resume of run beta-9" in " ".join(out.split())
    code, _, err = _engine("worker", "--store", store_url, "--one-shot", "-m", "simulated:seed=11")
    assert code == 0, err
    code, out, _ = _engine("runs", "--json", "--store", store_url)
    statuses = {r["run_id"]: r["status"] for r in map(json.loads, out.splitlines())}
    assert statuses == {"alpha-7": "suspended", "alpha-8": "suspended", "beta-9": "completed"}
