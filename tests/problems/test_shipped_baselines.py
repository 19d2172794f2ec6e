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
