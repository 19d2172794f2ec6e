"""The GPU process audit against real processes: /proc read as the audit reads it, and on a GPU the judge and
its candidates as NVML lists them while an evaluation runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from solforge.planner.workers.gpu_audit import GpuAuditor, ProcessFacts, process_facts

ROOT = Path(__file__).resolve().parents[3]


def _sleeper(env: dict[str, str]) -> subprocess.Popen:
    """A child that has exec'd (until then /proc shows the parent's command line and environment)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
                             env=env, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "up"
    return child


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is above ``pid`` in the process tree (False once ``pid`` is gone)."""
    try:
        return any(parent.pid == ancestor for parent in psutil.Process(pid).parents())
    except psutil.Error:
        return False


def test_a_child_process_facts_come_from_its_own_environment() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    child = _sleeper(env)
    try:
        facts = process_facts(child.pid)
        assert facts.readable and facts.visible_devices == "2" and facts.device_order == "PCI_BUS_ID"
        assert "time.sleep(30)" in facts.command
        assert _descends_from(child.pid, os.getpid()) and not _descends_from(os.getpid(), child.pid)
        unset = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
        other = _sleeper(unset)
        try:
            assert process_facts(other.pid).visible_devices is None
        finally:
            other.kill()
            other.wait()
    finally:
        child.kill()
        child.wait()
    assert not process_facts(child.pid).readable  # gone: unreadable, never "pinned"


@pytest.mark.gpu
def test_the_judge_and_its_candidates_hold_only_their_own_gpu() -> None:
    from solforge.problems import Solution, load_problem
    from solforge.sandbox.api import EvalOptions, EvalRequest
    from solforge.sandbox.evaluate import evaluate
    from solforge.sandbox.warm import WarmJudge

    solution = Solution.model_validate(json.loads(
        (ROOT / "benchmarks" / "solutions" / "qwen3_8b_rmsnorm" / "pytorch.json").read_text()))
    two = [w.uuid for w in load_problem("qwen3_8b_rmsnorm").workloads[:2]]  # seconds, also without a table
    # Judge only this test's own processes: other processes may hold the GPU unpinned (a parallel shard of the
    # suite, or this pytest process once an earlier test started CUDA in it).
    ours: set[int] = set()

    def facts(pid: int) -> ProcessFacts:
        if _descends_from(pid, os.getpid()):
            ours.add(pid)
        return process_facts(pid)

    auditor = GpuAuditor(interval_s=0.05, facts=facts).start()
    with WarmJudge(device="cuda", gpu_index=0) as judge:
        for _ in range(2):
            report = evaluate(EvalRequest(problem="qwen3_8b_rmsnorm", solution=solution,
                                          options=EvalOptions(device="cuda", gpu_index=0, workloads=two)),
                              judge=judge)
            assert report.all_passed
    audit = auditor.stop()
    assert [v for v in audit.violations if v.process.pid in ours] == [], audit.violations
    seen = [p for p in audit.processes if p.pid in audit.gpus.get(0, []) and p.pid in ours]
    # the judge and at least one candidate per evaluation held GPU 0, each pinned to it
    assert len(seen) >= 3, audit
    assert any("solforge.sandbox.judge" in p.command for p in seen)
