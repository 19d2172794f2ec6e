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
from solforge.sandbox.baseline import baseline_checks, baseline_key, is_launch_bound, table_name
from solforge.sandbox.sol.counting import SHIPPED_COUNTS

TABLES = sorted(p for p in TABLES_DIR.glob("*.jsonl") if p.name != SHIPPED_COUNTS)
RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"


def _record(baseline_ms: float, eager_ms: float | None = None, compiled_ms: float | None = None) -> BaselineRecord:
    return BaselineRecord(key="k", problem="p", workload="w", hardware="NVIDIA H200", baseline_ms=baseline_ms,
                          eager_ms=eager_ms, compiled_ms=compiled_ms)


def test_baseline_checks_flag_what_a_baseline_says_about_its_workload() -> None:
    assert baseline_checks(_record(0.1, 0.1, 0.12), t_sol_ms=0.05) == []
    assert baseline_checks(_record(0.04, 0.04, 0.05), t_sol_ms=0.05) == ["faster_than_sol"]
    assert baseline_checks(_record(0.1, 0.1, 0.21), t_sol_ms=0.01) == ["compiled_slow"]
    assert baseline_checks(_record(0.1, 0.1, 0.2), t_sol_ms=0.01) == []  # exactly 2x is not over it
    assert baseline_checks(_record(0.0021, 0.01, 0.0021), t_sol_ms=0.001) == ["launch_bound"]
    assert baseline_checks(_record(0.003, 0.003, None), t_sol_ms=None) == ["launch_bound"]  # no T_SOL: no SOL check
    assert not is_launch_bound(0.005) and not is_launch_bound(None) and is_launch_bound(0.0049)


def test_no_shipped_h200_baseline_beats_the_speed_of_light() -> None:
    """A baseline under T_SOL is a counting error or a reference that does less than it says: such a workload
    is fixed or taken out of the catalogue before its table ships."""
    import csv

    with (RESULTS / "catalogue_sol_h200.csv").open() as f:
        t_sol_ms = {(r["problem"], r["workload"]): float(r["t_sol_us"]) / 1e3 for r in csv.DictReader(f)}
    records = [BaselineRecord.model_validate_json(line)
               for line in (TABLES_DIR / table_name("NVIDIA H200")).read_text().splitlines() if line.strip()]
    assert len(records) > 300  # the catalogue's measured part, not only the seed problem
    beaten = [(r.problem, r.workload) for r in records
              if "faster_than_sol" in baseline_checks(r, t_sol_ms[(r.problem, r.workload)])]
    assert beaten == []


@pytest.mark.parametrize("run_csv", sorted(p for p in RESULTS.glob("catalogue_*.csv") if not p.name.startswith("catalogue_sol_")),
                         ids=lambda p: p.name)
def test_no_measured_catalogue_workload_beats_the_speed_of_light(run_csv: Path) -> None:
    """Each GPU's catalogue run (catalogue_<gpu>.csv, the rows behind its shipped table) flags no baseline under
    that GPU's T_SOL: such a problem is fixed, or taken out, before its table ships."""
    import csv

    with run_csv.open() as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["reference_status"] for r in rows)
    assert [(r["problem"], r["workload"]) for r in rows if "faster_than_sol" in r["checks"]] == []


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

    root = Path(__file__).resolve().parents[3]
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
    assert all("checks" in r and "faster_than_sol" not in r["checks"] for r in lines)  # the CPU has no T_SOL
    # Run again with that table shipped: the judge measures nothing, and the rows still carry the variants.
    before = table.read_text()
    run_references("again", SOLFORGE_BASELINE_TABLES=str(tmp_path))
    assert table.read_text() == before
    with (tmp_path / "again.csv").open() as f:
        again = list(csv.DictReader(f))
    assert [(r["workload"], r["eager_ms"]) for r in again] == [(r["workload"], r["eager_ms"]) for r in lines]


def test_recount_corrects_t_sol_on_datasheet_rows_and_keeps_the_measurements(tmp_path: Path) -> None:
    """run_references.py --recount: after a byte model is corrected, a run's T_SOL, bound and checks follow
    today's counts on the datasheet it was scored with; latencies and baselines stay as measured, and a row
    scored on a calibration (the measuring machine's) is left alone."""
    import csv
    import subprocess
    import sys

    from solforge.sandbox.sol.counting import counts_for_workloads
    from solforge.sandbox.sol.hardware import datasheet_peaks, match_spec
    from solforge.sandbox.sol.score import sol_time

    root = Path(__file__).resolve().parents[3]
    problem = load_problem("gemma2_2b_embedding_tp8")
    first, second = problem.workloads[-2:]
    stale = {"latency_ms": 0.3, "baseline_latency_ms": 0.02, "sol_latency_ms": 0.03, "sol_bound": "memory",
             "sol_score": 0.0, "eager_ms": 0.3, "compiled_ms": 0.02, "status": "PASSED", "log": ""}
    rows = [{"uuid": first.uuid, "axes": first.axes, **stale, "peak_source": "datasheet:H200"},
            {"uuid": second.uuid, "axes": second.axes, **stale, "peak_source": "calibrated:NVIDIA H200"}]
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"results": [{"problem": problem.name, "workloads": rows}]}))
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "catalogue" / "run_references.py"), "--recount",
         "--out", str(run), "--csv", str(tmp_path / "run.csv")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 row(s) changed" in done.stderr
    fixed, kept = json.loads(run.read_text())["results"][0]["workloads"]
    expected = sol_time(counts_for_workloads(problem, [first.uuid])[first.uuid], datasheet_peaks(match_spec("H200")))
    assert fixed["sol_latency_ms"] == pytest.approx(expected.t_sol_ms) and fixed["sol_latency_ms"] != 0.03
    assert fixed["sol_score"] > 0 and fixed["baseline_latency_ms"] == 0.02 and fixed["latency_ms"] == 0.3
    assert kept == rows[1]
    with (tmp_path / "run.csv").open() as f:
        by_uuid = {r["workload"]: r for r in csv.DictReader(f)}
    assert float(by_uuid[first.uuid]["t_sol_ms"]) == pytest.approx(expected.t_sol_ms)
    assert "faster_than_sol" not in by_uuid[first.uuid]["checks"]


def test_recount_of_named_problems_leaves_the_others_as_measured() -> None:
    """--recount --problems: only the corrected problems are counted again; the rest keep the T_SOL counted on
    the GPU (a count here, under another torch, can differ a little)."""
    recount = _run_references_module().recount
    problem = load_problem("gemma2_2b_embedding_tp8")
    row = {"uuid": problem.workloads[0].uuid, "sol_latency_ms": 0.03, "sol_bound": "memory",
           "peak_source": "datasheet:H200"}
    results = [{"problem": problem.name, "workloads": [dict(row)]}]
    assert recount(results, {"musicgen_small_codebook_embed"}) == 0
    assert results[0]["workloads"][0] == row
    assert recount(results, {problem.name}) == 1
    assert results[0]["workloads"][0]["sol_latency_ms"] != 0.03


def test_a_problem_expected_to_outrun_the_call_waits_and_shorter_ones_still_start() -> None:
    """run_references.py's packing: past --deadline-s nothing starts; before it, a problem whose expected time
    (another GPU's run), doubled, would end past --finish-by-s is held back, and one without a known time starts."""
    may_start = _run_references_module().may_start
    expected = {"long": 100.0, "short": 10.0}
    assert may_start("long", 0.0, 460.0, 520.0, expected)
    assert not may_start("long", 321.0, 460.0, 520.0, expected)  # 321 + 200 > 520
    assert may_start("short", 321.0, 460.0, 520.0, expected)
    assert may_start("unknown", 321.0, 460.0, 520.0, expected)
    assert not may_start("short", 461.0, 460.0, 600.0, expected)  # past the deadline, whatever it is expected to take
    assert may_start("long", 461.0, None, None, expected)


def test_run_references_leaves_a_problem_that_would_outrun_the_call_for_the_next_run(tmp_path: Path) -> None:
    """--expected-from and --finish-by-s on the command line: a problem expected to take longer than the call has
    left is not started, and the run says it is left."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    earlier = tmp_path / "h100.json"
    earlier.write_text(json.dumps({"results": [{"problem": "qwen3_8b_rmsnorm", "seconds": 400.0, "workloads": []}]}))
    out = tmp_path / "run.json"
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "catalogue" / "run_references.py"), "--problems",
         "qwen3_8b_rmsnorm", "--device", "cpu", "--no-baseline", "--out", str(out), "--deadline-s", "460",
         "--expected-from", str(earlier), "--finish-by-s", "520"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "0 problem(s) done, 1 left" in done.stderr
    assert not out.exists()


def _run_references_module():
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "catalogue" / "run_references.py"
    spec = importlib.util.spec_from_file_location("run_references", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_precompile_pass_drops_what_it_timed_and_keeps_its_compiled_caches(tmp_path: Path) -> None:
    """What a precompile pass measured with the GPU shared goes; the kept graphs and kernels stay, and so does
    every other problem's record."""
    forget_timings = _run_references_module().forget_timings
    cache = tmp_path / "cache"
    kept = cache / "jit" / "trusted-abc" / "inductor" / "xy"
    kept.mkdir(parents=True)
    (kept / "graph.py").write_text("graph")
    (cache / "baselines").mkdir()
    for name in ("timed_here", "timed_before"):
        (cache / "baselines" / f"{name}.json").write_text("{}")
    forget_timings(cache, ["timed_here"])
    assert sorted(p.name for p in (cache / "baselines").iterdir()) == ["timed_before.json"]
    assert (kept / "graph.py").read_text() == "graph"


@pytest.mark.slow
def test_run_references_with_a_precompile_pass_measures_again_alone(tmp_path: Path) -> None:
    """--precompile-jobs: the chunk's problems are evaluated in parallel first, then timed one by one; the table
    holds the second pass's records (the first pass's were dropped), one per workload."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    names = ["qwen3_8b_rmsnorm", "command_r_35b_layernorm"]
    table = tmp_path / "cpu.jsonl"
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "catalogue" / "run_references.py"), "--problems", *names,
         "--smallest", "2", "--device", "cpu", "--rounds", "1", "--iterations", "3", "--precompile-jobs", "2",
         "--out", str(tmp_path / "runs.json"), "--table", str(table), "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "precompiled 2/2 problem(s)' baselines" in done.stderr
    records = [BaselineRecord.model_validate_json(line) for line in table.read_text().splitlines()]
    assert sorted(r.problem for r in records) == sorted(names * 2)
    runs = json.loads((tmp_path / "runs.json").read_text())["results"]
    assert [r["problem"] for r in runs] == names
    assert all(r["baselines"] and "baseline" in r["phases"] for r in runs)  # timed again in the second pass
