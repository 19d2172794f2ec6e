"""The production runner end to end on the CPU: a worker runs the real sandbox (judge and candidate processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solforge.planner import Ledger, SandboxRunner, Slot, Worker, WorkerConfig

DATA = Path(__file__).resolve().parents[2] / "data" / "sol_execbench_rmsnorm"


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


@pytest.mark.slow
def test_each_lane_has_its_own_warm_judge_so_a_job_loads_while_another_holds_the_lease(tmp_path: Path) -> None:
    """With one judge per slot, a second lane built beside the job holding the GPU but could not load its
    solution until that job's report: on the H200 the GPU then idled between jobs (lease utilisation 0.68 for a
    16-agent swarm). Each lane's judge reaches its lease while the other lane holds it; a lane used alone keeps
    to one judge."""
    pytest.importorskip("torch")
    import contextlib
    import threading

    from solforge.planner import JobSpec
    from solforge.problems import load_solution
    from solforge.sandbox.api import EvalOptions, EvalRequest

    solution = load_solution(DATA / "solution_pytorch.json")
    options = EvalOptions(rounds=1, iterations=2, warmup=1, device="cpu", run_timeout_s=60, cache_dir=tmp_path / "c",
                          time_baseline=False)
    slot = Slot("h", "cpu", 0, "cpu")
    request = EvalRequest(problem=str(DATA), solution=solution, options=options)
    entered: dict[str, threading.Event] = {"a": threading.Event(), "b": threading.Event()}
    release_a = threading.Event()

    def lease_of(name: str) -> object:
        @contextlib.contextmanager
        def lease() -> object:
            entered[name].set()
            if name == "a":
                assert release_a.wait(120), "job b never reached its lease while a held it"
            yield

        return lease

    def job(name: str) -> JobSpec:
        return JobSpec(id=name, kind="benchmark", agent="x", problem="p", request=request, attempt=1,
                       max_attempts=1, timeout_s=300, slot=slot, gpu_lease=lease_of(name))  # type: ignore[arg-type]

    runner = SandboxRunner()
    runner.start([slot], lanes={slot.id: 2})
    try:
        results: dict[str, object] = {}
        never = threading.Event()
        first = threading.Thread(target=lambda: results.update(a=runner.run(job("a"), lambda *a, **k: None, never)))
        first.start()
        assert entered["a"].wait(180), "job a never reached its lease"
        second = threading.Thread(target=lambda: results.update(b=runner.run(job("b"), lambda *a, **k: None, never)))
        second.start()
        reached = entered["b"].wait(120)
        release_a.set()
        first.join(180)
        second.join(180)
        assert reached, "job b waited for job a's judge instead of loading in its own"
        for name in ("a", "b"):
            result = results[name]
            assert result.outcome == "done" and result.report.all_passed, result  # type: ignore[attr-defined]
        judges = runner._judges[slot.id]
        assert len(judges) == 2 and len(runner._idle[slot.id]) == 2
        with runner._judge_for(slot) as one, runner._judge_for(slot) as other:
            assert one is not other and {one, other} == set(judges)
        with runner._judge_for(slot) as again:
            assert again is one  # the last handed back (the outer block ends last) goes out first
    finally:
        runner.close()


def test_a_worker_prestarts_two_judges_per_slot_and_the_other_lanes_start_theirs_when_needed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []

    class Judge:
        def start(self) -> None:
            started.append(self)

    runner = SandboxRunner()

    def new_judge(slot: Slot) -> Judge:  # what SandboxRunner._new_judge does, without a process
        judge = Judge()
        runner._judges.setdefault(slot.id, []).append(judge)
        return judge

    monkeypatch.setattr(runner, "_new_judge", new_judge)
    slot = Slot(host="h", kind="cpu", index=0, name="cpu")
    runner.start([slot], lanes={slot.id: 8})
    assert len(started) == SandboxRunner.PRESTARTED_JUDGES == 2 and len(runner._idle[slot.id]) == 2
    with runner._judge_for(slot), runner._judge_for(slot), runner._judge_for(slot) as third:
        assert third not in started  # made for the third job at once, started by its evaluation
    assert len(runner._judges[slot.id]) == 3
