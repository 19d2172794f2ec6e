"""The baseline tables shipped in problems/baselines/ are current: every record still names a
catalogue workload and carries the key a judge computes today (a changed reference, workload or
recipe must be measured again, not looked up)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solforge.problems import load_problem
from solforge.problems.load import TABLES_DIR
from solforge.sandbox.api import BaselineRecord
from solforge.sandbox.baseline import baseline_key, table_name
from solforge.sandbox.sol.counting import SHIPPED_COUNTS

TABLES = sorted(p for p in TABLES_DIR.glob("*.jsonl") if p.name != SHIPPED_COUNTS)


def test_there_is_a_table_for_the_h200() -> None:
    assert TABLES_DIR / table_name("NVIDIA H200") in TABLES


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.name)
def test_every_shipped_record_has_todays_key(table: Path) -> None:
    lines = [line for line in table.read_text().splitlines() if line.strip()]
    assert lines
    for line in lines:
        record = BaselineRecord.model_validate(json.loads(line))
        assert table_name(record.hardware) == table.name
        problem = load_problem(record.problem)
        (workload,) = [w for w in problem.workloads if w.uuid == record.workload]
        torch_version, timer = record.key.split("|")[4:6]
        assert record.key == baseline_key(problem.definition, workload, record.hardware, torch_version, timer)
        assert record.baseline_ms == min(t for t in (record.eager_ms, record.compiled_ms) if t is not None)


@pytest.mark.slow
def test_run_references_measures_baselines_into_a_table_and_a_csv(tmp_path: Path) -> None:
    """benchmarks/catalogue/run_references.py, as it builds the shipped tables on a GPU, here on the CPU: the
    judge's own baselines, merged into a table whose records carry today's key, and a row per workload."""
    import csv
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    table = tmp_path / "cpu.jsonl"
    old = {"key": "old|k", "problem": "a_problem_measured_before", "workload": "w", "hardware": "cpu",
           "eager_ms": 1.0, "compiled_ms": None, "baseline_ms": 1.0, "eager_error": None, "compiled_error": None}
    table.write_text(json.dumps(old) + "\n")

    def run_references(run: str, **env: str) -> None:
        done = subprocess.run(
            [sys.executable, str(root / "benchmarks" / "catalogue" / "run_references.py"), "--problems",
             "qwen3_8b_rmsnorm", "--smallest", "2", "--device", "cpu", "--rounds", "1", "--iterations", "3",
             "--out", str(tmp_path / f"{run}.json"), "--table", str(table), "--csv", str(tmp_path / f"{run}.csv"),
             "--cache-dir", str(tmp_path / f"{run}-cache")],
            capture_output=True, text=True, timeout=600, env={**os.environ, **env})
        assert done.returncode == 0, done.stderr[-3000:]

    run_references("first")
    records = [BaselineRecord.model_validate_json(line) for line in table.read_text().splitlines()]
    assert records[0].key == "old|k"  # kept; ordered by problem
    problem = load_problem("qwen3_8b_rmsnorm")
    measured = records[1:]
    assert len(measured) == 2 and all(r.problem == "qwen3_8b_rmsnorm" and r.eager_ms for r in measured)
    for record in measured:
        (workload,) = [w for w in problem.workloads if w.uuid == record.workload]
        torch_version, timer = record.key.split("|")[4:6]
        assert record.key == baseline_key(problem.definition, workload, "cpu", torch_version, timer)
    with (tmp_path / "first.csv").open() as f:
        lines = list(csv.DictReader(f))
    assert [r["workload"] for r in lines] == [r.workload for r in measured]
    assert all(r["reference_status"] == "PASSED" and float(r["eager_ms"]) > 0 for r in lines)
    # Run again with that table shipped: the judge measures nothing, and the rows still carry the variants.
    before = table.read_text()
    run_references("again", SOLFORGE_BASELINE_TABLES=str(tmp_path))
    assert table.read_text() == before
    with (tmp_path / "again.csv").open() as f:
        again = list(csv.DictReader(f))
    assert [(r["workload"], r["eager_ms"]) for r in again] == [(r["workload"], r["eager_ms"]) for r in lines]
