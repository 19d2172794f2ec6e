"""The production runner end to end on the CPU: a worker runs the real sandbox (judge and candidate processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solforge.planner import Ledger, SandboxRunner, Slot, Worker, WorkerConfig

DATA = Path(__file__).resolve().parent.parent / "data" / "sol_execbench_rmsnorm"


@pytest.mark.slow
def test_sandbox_runner_submits_compiles_and_fails_unknown_problems(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("solforge.sandbox.evaluate")
    from solforge.problems import load_solution
    from solforge.sandbox.api import EvalOptions, EvalRequest

    solution = load_solution(DATA / "solution_pytorch.json")
    options = EvalOptions(
        rounds=2, iterations=3, warmup=1, device="cpu", run_timeout_s=60, cache_dir=tmp_path / "c"
    )
    config = WorkerConfig(lease_s=10, heartbeat_s=0.5, poll_s=0.05)
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        ledger.ensure_agent("a")
        slots = [Slot("h", "cpu", 0, "cpu")]
        with Worker(ledger, SandboxRunner(), slots=slots, compile_slots=1, host="h", config=config):
            submit = ledger.enqueue(
                "a", "submit", EvalRequest(problem=str(DATA), solution=solution, options=options)
            )
            build = ledger.enqueue(
                "a", "compile", EvalRequest(problem=str(DATA), solution=solution, options=options)
            )
            lost = ledger.enqueue("a", "benchmark", EvalRequest(problem="no_such_problem", solution=solution))
            views = [ledger.wait_job(j.id, "a", timeout_s=300) for j in (submit, build, lost)]
        assert views[0].status == "done" and views[0].report is not None and views[0].report.all_passed
        assert views[0].problem == "rmsnorm_h4096_handwritten"  # the folder's definition name
        assert views[1].status == "done" and views[1].build is not None and views[1].build.ok
        assert (
            views[2].status == "failed"
            and views[2].attempts == 1
            and "ProblemNotFound" in (views[2].error or "")
        )
        (entry,) = ledger.leaderboard("rmsnorm_h4096_handwritten")
        assert entry.job_id == submit.id and entry.passed == entry.total == len(views[0].report.traces)
        assert len(ledger.job_runs(submit.id, "a")) == entry.total
