"""A tiny run of benchmarks/planner/simulate_swarm.py: result files keep their schema, slots stay busy."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "benchmarks" / "planner" / "simulate_swarm.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simulate_swarm", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["simulate_swarm"] = module
    spec.loader.exec_module(module)
    return module


def test_small_swarm_keeps_its_slots_busy(tmp_path: Path) -> None:
    sim = _load()
    out = tmp_path / "sim.json"
    report = tmp_path / "report.html"
    # 8 agents thinking 5-30 s offer about 2.9 slots of work to 2 slots: saturated, like the real load.
    argv = [
        "--agents",
        "8",
        "--slots",
        "2",
        "--compile-slots",
        "2",
        "--sim-minutes",
        "10",
        "--warmup-minutes",
        "2",
        "--think-s",
        "5,30",
        "--compression",
        "30",
        "--out",
        str(out),
        "--report",
        str(report),
    ]
    assert sim.main(argv) == 0
    result = json.loads(out.read_text())
    assert set(result) >= {"machine", "settings", "load", "mean_gpu_job_s", "offered_slots", "backends"}
    assert result["machine"]["date_utc"] and result["machine"]["cpus"]
    assert result["offered_slots"] > 2
    r = result["backends"]["sqlite"]
    for key in (
        "busy_fraction",
        "idle_while_jobs_waited_fraction",
        "queue_wait_simulated_s",
        "throughput_gpu_jobs_per_simulated_hour",
        "lease_overhead_ms_per_job",
        "per_slot",
    ):
        assert key in r, key
    assert set(r["queue_wait_simulated_s"]) == {"n", "mean", "p50", "p95", "p99", "max"}
    assert r["queue_wait_simulated_s"]["n"] > 10
    assert r["overlapping_leases"] == 0 and r["jobs_retried"] == 0 and not r["agent_errors"]
    assert r["busy_fraction"] > 0.7, (
        r
    )  # about 0.99 on an idle host; the floor leaves room for a loaded CI box
    assert len(r["per_slot"]) == 2 and r["submissions"] >= 0
    md = out.with_suffix(".md").read_text()
    assert "busy fraction" in md and "| SQLite" in md
    assert "sim-agent-07" in report.read_text(encoding="utf-8")
