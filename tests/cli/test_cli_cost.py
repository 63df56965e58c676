"""Cost on the command line: ``--price``, the batch summary, ``engine runs`` and ``engine show``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_support import CLEAN, Cli

#: Two decisions a ticket (tests/cli/cost_flows.py): every run completes on the clean model.
FLOW = "cost_flows:route"


def costs(cli: Cli) -> dict[str, float | None]:
    result = cli("runs", "--json")
    assert result.exit_code == 0, result.output
    runs = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return {r["run_id"]: r["cost_usd"] for r in runs}


def dollars(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


def test_a_price_gives_each_run_and_the_batch_a_cost(cli: Cli, tickets: Path) -> None:
    result = cli("run", FLOW, "-i", str(tickets), "-m", CLEAN, "--price", "in=1,out=2")
    assert result.exit_code == 0, result.output

    stored = costs(cli)
    assert len(stored) == 6
    assert all(c is not None and c > 0 for c in stored.values())
    total = re.search(r"tokens · cost (\$[\d.,]+) ·", result.stdout)
    assert total is not None, result.stdout
    assert dollars(total.group(1)) == pytest.approx(sum(c for c in stored.values() if c), abs=1e-9)

    listed = cli("runs")
    assert listed.exit_code == 0, listed.output
    header = listed.stdout.splitlines()[0]
    assert "cost" in header.split()
    row = next(line for line in listed.stdout.splitlines() if line.strip().startswith("T-1"))
    assert re.search(r"\$0\.\d+", row)

    shown = cli("show", "T-1")
    assert shown.exit_code == 0, shown.output
    line = re.search(r"cost\s+(\$[\d.]+)", shown.stdout)
    assert line is not None, shown.stdout
    assert dollars(line.group(1)) == stored["T-1"]
    # Each model call of the trace shows what it cost.
    assert re.search(r"model call #\d+ simulated \d+→\d+ tokens \$0\.\d+", shown.stdout)


def test_without_a_price_the_cost_is_unknown_not_zero(cli: Cli, tickets: Path) -> None:
    result = cli("run", FLOW, "-i", str(tickets), "-m", CLEAN)
    assert result.exit_code == 0, result.output
    assert "cost unknown" in result.stdout
    assert set(costs(cli).values()) == {None}

    listed = cli("runs")
    row = next(line for line in listed.stdout.splitlines() if line.strip().startswith("T-1"))
    assert "—" in row
    assert "$" not in row
    shown = cli("show", "T-1")
    assert re.search(r"cost\s+— \(price unknown\)", shown.stdout)


def test_a_bad_price_is_a_usage_error_that_shows_the_form(cli: Cli, tickets: Path) -> None:
    result = cli("run", FLOW, "-i", str(tickets), "-m", CLEAN, "--price", "0.15")
    assert result.exit_code == 2
    assert "--price '0.15'" in result.stderr
    assert "in=0.15,out=0.60" in result.stderr
