"""The ledger-backed tools as plain functions: benchmark, wait, cancel, submit, leaderboard, ownership.

Most tests use the planner's fake evaluation process (fast, deterministic); one runs the real sandbox
on the CPU with a pytorch solution.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from solforge.planner.ledger.models import JobProgress
from solforge.problems import FormatError, ProblemNotFound
from solforge.sandbox.api import BuildReport, EvalReport
from solforge.tools.base import ToolServices
from solforge.tools.compile import CompileKernelInput, compile_kernel
from solforge.tools.errors import JobNotFound, ServiceUnavailable, ToolInputError
from solforge.tools.jobs import (
    CancelJobInput,
    RunBenchmarkInput,
    SubmissionInfo,
    SubmitSolutionInput,
    WaitJobInput,
    cancel_job,
    result_from_snapshot,
    run_benchmark,
    submit_solution,
    wait_job,
)
from solforge.tools.leaderboard import GetLeaderboardInput, get_leaderboard
from solforge.tools.ledger_port import JobSnapshot, progress_text
from solforge.tools.problems import GetProblemInput, ListProblemsInput, get_problem, list_problems
from solforge.tools.score import GetSolScoreInput, get_sol_score
from solforge.tools.testing import (
    RMSNORM,
    RMSNORM_SOLUTION,
    WRONG_SOLUTION,
    fake_solution,
    ledger_with_worker,
    services_for,
    solution,
)
from solforge.tools.testing import tool_context as context

pytestmark = pytest.mark.anyio


async def test_benchmark_returns_results_within_the_wait(ledger_services: ToolServices) -> None:
    ctx = context(ledger_services)
    result = await run_benchmark(RunBenchmarkInput(solution=fake_solution(workloads=3, sol_score=0.6)), ctx)
    assert result.state == "done" and result.kind == "benchmark" and len(result.job_id) == 32
    assert (result.passed, result.total) == (3, 3) and result.mean_score == pytest.approx(0.6)
    assert [w.status for w in result.workloads] == ["PASSED"] * 3
    assert "passed 3/3" in result.render()


async def test_long_benchmark_hands_back_a_job_to_wait_on(ledger_services: ToolServices) -> None:
    ctx = context(ledger_services)
    started = await run_benchmark(
        RunBenchmarkInput(solution=fake_solution(sleep_s=1.5, steps=3), wait_s=0.3), ctx
    )
    assert started.state in ("queued", "running") and "wait_job" in started.next_step
    done = await wait_job(WaitJobInput(job_id=started.job_id, wait_s=20), ctx)
    assert done.state == "done" and done.passed == 1
    assert ctx.sent and [s[0] for s in ctx.sent] == sorted(s[0] for s in ctx.sent)  # type: ignore[attr-defined]


async def test_cancel_kills_a_running_job(ledger_services: ToolServices) -> None:
    ctx = context(ledger_services)
    started = await run_benchmark(RunBenchmarkInput(solution=fake_solution(sleep_s=60), wait_s=0.5), ctx)
    cancelled = await cancel_job(CancelJobInput(job_id=started.job_id), ctx)
    assert cancelled.state == "cancelled"
    again = await cancel_job(CancelJobInput(job_id=started.job_id), ctx)  # idempotent
    assert again.state == "cancelled"


async def test_jobs_belong_to_their_agent(ledger_services: ToolServices) -> None:
    alice, mallory = context(ledger_services, "alice"), context(ledger_services, "mallory")
    job = await run_benchmark(RunBenchmarkInput(solution=fake_solution(sleep_s=5), wait_s=0), alice)
    for call in (
        wait_job(WaitJobInput(job_id=job.job_id, wait_s=0), mallory),
        cancel_job(CancelJobInput(job_id=job.job_id), mallory),
        get_sol_score(GetSolScoreInput(job_id=job.job_id), mallory),
    ):
        with pytest.raises(JobNotFound, match="belongs to you"):
            await call
    assert (await wait_job(WaitJobInput(job_id=job.job_id, wait_s=0), alice)).job_id == job.job_id
    await cancel_job(CancelJobInput(job_id=job.job_id), alice)
    with pytest.raises(ValidationError):
        WaitJobInput(job_id="not-a-job-id")


async def test_bad_solutions_are_refused_before_queueing(
    ledger_services: ToolServices, tmp_path: Path
) -> None:
    ctx = context(ledger_services)
    with pytest.raises(ToolInputError, match="exactly one"):
        await run_benchmark(RunBenchmarkInput(), ctx)
    with pytest.raises(ToolInputError, match="exactly one"):
        await run_benchmark(RunBenchmarkInput(solution=solution(), solution_path="x.json"), ctx)
    bad = solution()
    del bad["spec"]["entry_point"]
    with pytest.raises(FormatError, match="entry_point"):
        await run_benchmark(RunBenchmarkInput(solution=bad), ctx)
    with pytest.raises(FormatError, match="limit"):
        await run_benchmark(RunBenchmarkInput(solution=solution("#" * 1_100_000)), ctx)
    with pytest.raises(ProblemNotFound):
        await run_benchmark(RunBenchmarkInput(solution=solution(definition="nope")), ctx)
    with pytest.raises(ToolInputError, match="definition"):
        await run_benchmark(RunBenchmarkInput(solution=solution(definition="nope"), problem=RMSNORM), ctx)
    with pytest.raises(ToolInputError, match="not workloads"):
        await run_benchmark(RunBenchmarkInput(solution=solution(), workloads=["w-404"]), ctx)
    with pytest.raises(ToolInputError, match=r"empty list.*leave workloads out"):
        await run_benchmark(RunBenchmarkInput(solution=solution(), workloads=[]), ctx)
    with pytest.raises(ToolInputError, match="no file"):
        await run_benchmark(RunBenchmarkInput(solution_path=str(tmp_path / "missing.json")), ctx)


async def test_solution_path_reads_sources_beside_it(ledger_services: ToolServices, tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    data = fake_solution(workloads=2)
    (folder / "main.py").write_text(data["sources"][0]["content"])
    data["sources"] = [{"path": "main.py"}]
    (folder / "solution.json").write_text(json.dumps(data))
    ctx = context(ledger_services)
    result = await run_benchmark(RunBenchmarkInput(solution_path=str(folder)), ctx)
    assert result.state == "done" and result.total == 2
    data["sources"] = [{"path": "../outside.py"}]
    (folder / "solution.json").write_text(json.dumps(data))
    with pytest.raises(FormatError):
        await run_benchmark(RunBenchmarkInput(solution_path=str(folder / "solution.json")), ctx)
    remote = services_for(*ledger_services.settings.problem_dirs, allow_local_paths=False)
    with pytest.raises(ToolInputError, match="over the network"):
        await run_benchmark(RunBenchmarkInput(solution_path=str(folder)), context(remote))


async def test_submission_is_ranked_and_status_follows(ledger_services: ToolServices) -> None:
    alice, bob = context(ledger_services, "alice"), context(ledger_services, "bob")
    a = await submit_solution(
        SubmitSolutionInput(solution=fake_solution(name="a1", sol_score=0.8, workloads=2)), alice
    )
    assert a.kind == "submit" and a.submission is not None and a.submission.accepted
    assert (a.submission.rank, a.submission.entries, a.submission.score) == (1, 1, 0.8)
    b = await submit_solution(
        SubmitSolutionInput(solution=fake_solution(name="b1", sol_score=0.4, workloads=2)), bob
    )
    assert b.submission is not None and b.submission.rank == 2 and b.submission.best_score == 0.8
    hack = await submit_solution(
        SubmitSolutionInput(solution=fake_solution(name="b2", status="REWARD_HACK", workloads=2)), bob
    )
    assert hack.submission is not None and not hack.submission.accepted
    assert "REWARD_HACK" in (hack.submission.reason or "") and "rejected" in hack.render()
    board = await get_leaderboard(GetLeaderboardInput(problem=RMSNORM), bob)
    assert [r.agent for r in board.rows] == ["alice", "bob"] and board.your_rank == 2
    overall = await get_leaderboard(GetLeaderboardInput(), alice)
    assert overall.rows[0].agent == "alice" and overall.rows[0].problems == 1
    listed = await list_problems(ListProblemsInput(), alice)
    assert listed.rows[0].status == "submitted" and listed.rows[0].best_score == 0.8
    assert (await list_problems(ListProblemsInput(status="new"), alice)).total == 0
    assert (await list_problems(ListProblemsInput(status="unsolved"), alice)).total == 0
    with pytest.raises(ProblemNotFound):
        await get_leaderboard(GetLeaderboardInput(problem="nope"), alice)


async def test_submitting_an_unbenchmarked_or_failing_solution_warns(ledger_services: ToolServices) -> None:
    ctx = context(ledger_services, "carol")
    never = await submit_solution(SubmitSolutionInput(solution=fake_solution(name="c0", workloads=2)), ctx)
    assert never.warning and "never benchmarked" in never.warning and "WARNING:" in never.render()
    failing = fake_solution(name="c1", status="INCORRECT_NUMERICAL", workloads=2)
    assert (await run_benchmark(RunBenchmarkInput(solution=failing), ctx)).state == "done"
    warned = await submit_solution(SubmitSolutionInput(solution=failing), ctx)
    assert warned.warning and "failed on 2 of 2 workloads (INCORRECT_NUMERICAL)" in warned.warning
    good = fake_solution(name="c2", workloads=2)
    assert (await run_benchmark(RunBenchmarkInput(solution=good), ctx)).state == "done"
    assert (await submit_solution(SubmitSolutionInput(solution=good), ctx)).warning is None


async def test_tools_without_a_ledger_say_so(services: ToolServices) -> None:
    ctx = context(services)
    with pytest.raises(ServiceUnavailable, match="ledger"):
        await run_benchmark(RunBenchmarkInput(solution=solution()), ctx)
    with pytest.raises(ServiceUnavailable):
        await get_leaderboard(GetLeaderboardInput(), ctx)
    assert not (await list_problems(ListProblemsInput(), ctx)).scores_available


async def test_answers_stay_under_the_budget(ledger_services: ToolServices) -> None:
    ctx = context(ledger_services)
    result = await run_benchmark(
        RunBenchmarkInput(solution=fake_solution(workloads=200, status="INCORRECT_NUMERICAL")), ctx
    )
    assert result.total == 200 and result.workloads_omitted > 0
    assert len(result.render()) <= 8000
    bigger = await wait_job(WaitJobInput(job_id=result.job_id, max_chars=50_000), ctx)
    assert len(bigger.workloads) > len(result.workloads)


@pytest.mark.slow
async def test_cpu_benchmark_of_a_real_pytorch_solution(problems: Path, tmp_path: Path) -> None:
    """The real sandbox on the CPU: compile, benchmark, a wrong answer, SOL breakdown and baselines."""
    with ledger_with_worker("sandbox") as ledger:
        services = services_for(problems, ledger=ledger, cache_dir=tmp_path / "cache")
        ctx = context(services, "carol")
        built = await compile_kernel(CompileKernelInput(solution=solution()), ctx)
        assert built.state == "done" and built.ok and built.job_id
        broken = await compile_kernel(
            CompileKernelInput(solution=solution("def run(:\n", name="broken")), ctx
        )
        assert broken.ok is False and broken.errors and "SyntaxError" in broken.render()
        good = await run_benchmark(RunBenchmarkInput(solution=solution(), rounds=2), ctx)
        assert good.state == "done" and good.passed == good.total == 3 and good.device == "cpu"
        assert all(w.latency_ms and w.baseline_ms for w in good.workloads)
        wrong = await run_benchmark(
            RunBenchmarkInput(solution=solution(WRONG_SOLUTION, name="zeros"), rounds=1), ctx
        )
        assert wrong.passed == 0 and all(w.status == "INCORRECT_NUMERICAL" for w in wrong.workloads)
        assert "fix the failing workloads" in wrong.next_step
        one = ["tiny_rmsnorm-0000"]
        doubled = solution(RMSNORM_SOLUTION.replace("output.copy_((", "output.copy_(2 * ("), name="doubled")
        off = await run_benchmark(RunBenchmarkInput(solution=doubled, workloads=one, rounds=1), ctx)
        row = off.workloads[0]
        assert row.status == "INCORRECT_NUMERICAL" and row.max_abs_error and row.max_abs_error > 0.01
        assert row.matched_ratio is not None and row.matched_ratio < 0.99
        typo = solution(RMSNORM_SOLUTION.replace("output.copy_(", "outptu.copy_("), name="typo")
        crashed = await run_benchmark(RunBenchmarkInput(solution=typo, rounds=1), ctx)
        first, *rest = crashed.workloads
        assert first.status == "RUNTIME_ERROR" and first.log and 'File "main.py"' in first.log
        assert first.log.endswith("NameError: name 'outptu' is not defined") and "\n" in first.log
        assert rest and all(r.log and r.log.startswith("same error as") for r in rest)
        sol = await get_sol_score(GetSolScoreInput(job_id=good.job_id), ctx)
        assert sol.problem == RMSNORM and len(sol.rows) == 3 and all(r.bound == "memory" for r in sol.rows)
        assert any("CPU" in n for n in sol.notes)
        described = await get_problem(GetProblemInput(name=RMSNORM), ctx)
        assert all(w.baseline_ms for w in described.workloads) and described.baseline_device == "cpu"


async def test_sol_score_for_a_given_latency(services: ToolServices) -> None:
    ctx = context(services)
    result = await get_sol_score(
        GetSolScoreInput(problem=RMSNORM, latency_ms=0.01, baseline_ms=0.02, gpu="H200"), ctx
    )
    assert result.peak_source == "datasheet:H200" and result.source == "given latency"
    row = result.rows[0]
    assert (
        row.bytes > 0
        and row.bound == "memory"
        and row.t_sol_ms == pytest.approx(row.bytes / 4.8e12 * 1e3, rel=0.05)
    )
    assert row.score is not None and 0.5 < row.score < 1
    uuids = [r.uuid for r in result.rows]
    one = await get_sol_score(
        GetSolScoreInput(
            problem=RMSNORM, latency_ms={uuids[0]: 0.001}, baseline_ms=0.002, workloads=[uuids[0]]
        ),
        ctx,
    )
    assert len(one.rows) == 1 and one.rows[0].latency_ms == 0.001
    bounds = await get_sol_score(GetSolScoreInput(problem=RMSNORM), ctx)
    assert bounds.source == "bounds only" and bounds.rows[0].score is None


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "give job_id"),
        ({"problem": RMSNORM, "latency_ms": -1.0}, "positive"),
        ({"problem": RMSNORM, "latency_ms": {"w-404": 1.0}}, "not being analysed"),
        ({"problem": RMSNORM, "workloads": ["w-404"]}, "not workloads"),
        ({"problem": RMSNORM, "gpu": "Voodoo2"}, "no peak numbers"),
    ],
)
async def test_sol_score_bad_inputs(services: ToolServices, args: dict[str, Any], error: str) -> None:
    with pytest.raises(ToolInputError, match=error):
        await get_sol_score(GetSolScoreInput(**args), context(services))


async def test_compile_without_a_ledger_uses_the_build_pool(services: ToolServices) -> None:
    ctx = context(services)
    first = await compile_kernel(CompileKernelInput(solution=solution()), ctx)
    assert first.state == "done" and first.ok and first.job_id is None
    assert first.note and "entry point is looked up here; their imports run when run_benchmark" in first.render()
    again = await compile_kernel(CompileKernelInput(solution=solution()), ctx)
    assert again.ok
    with pytest.raises(ToolInputError, match="no kernels"):
        await compile_kernel(CompileKernelInput(solution=solution(), disassemble="sass"), ctx)
    with pytest.raises(ValidationError):
        CompileKernelInput(solution=solution(), target_arch="sm_90; rm -rf /")


async def test_compile_with_no_worker_says_queued_and_joins_the_queued_job(
    problems: Path, tmp_path: Path
) -> None:
    """`solforge serve --no-workers` and no `solforge worker`: the answer says nothing serves the queue."""
    from solforge.planner import Ledger
    from solforge.tools import compile as compile_mod

    ledger = Ledger.open("sqlite://")
    try:
        ctx = context(services_for(problems, ledger=ledger, cache_dir=tmp_path / "cache"))
        first = await compile_kernel(CompileKernelInput(solution=solution(), wait_s=0), ctx)
        assert (first.state, first.job_state, first.queue_position, first.live_workers) == (
            "building",
            "queued",
            0,
            0,
        )
        text = first.render()
        assert text.startswith("Queued: ") and "No worker serves this ledger's queue" in text, text
        assert "Start a worker" in text and "Still building" not in text
        compile_mod._compile_jobs.clear()  # as if another server process took the next call
        again = await compile_kernel(CompileKernelInput(solution=solution(name="v1_again"), wait_s=0.2), ctx)
        assert again.job_id == first.job_id  # same content hash, so the queued job is joined
        other = await compile_kernel(
            CompileKernelInput(solution=solution("def run(*a):\n    pass\n"), wait_s=0), ctx
        )
        assert other.job_id != first.job_id and other.queue_position == 1
        assert len(ledger.agent_history("alice").jobs) == 2
    finally:
        ledger.close()


async def test_compile_in_the_ledger_hands_back_building_then_joins_the_same_job(
    ledger_services: ToolServices,
) -> None:
    ctx = context(ledger_services)
    slow = fake_solution(name="slow_build", sleep_s=1.5)
    first = await compile_kernel(CompileKernelInput(solution=slow, wait_s=0), ctx)
    assert first.state == "building" and first.job_id and "Call compile_kernel again" in first.render()
    second = await compile_kernel(CompileKernelInput(solution=slow, wait_s=20), ctx)
    assert second.job_id == first.job_id and second.state == "done" and second.ok
    third = await compile_kernel(CompileKernelInput(solution=slow, wait_s=20), ctx)
    assert third.job_id != first.job_id and third.ok  # a finished build is not joined again
    waited = await wait_job(WaitJobInput(job_id=first.job_id, wait_s=0), ctx)
    assert waited.compile_ok is True and waited.kind == "compile"
    assert "run_benchmark" in waited.next_step and "get_sol_score" not in waited.next_step


async def test_a_run_with_no_results_says_nothing_ran(ledger_services: ToolServices) -> None:
    ctx = context(ledger_services)
    empty = await run_benchmark(RunBenchmarkInput(solution=fake_solution(workloads=0)), ctx)
    assert empty.state == "done" and empty.total == 0
    assert "nothing was run" in empty.next_step and "still hold" not in empty.next_step
    assert "nothing ran" in empty.render()


# Reports built from the real models, shaped as the sandbox writes them, for what the fake runner
# cannot produce: long tracebacks, wrong-answer statistics, timing spread, a GPU-only language on a CPU.

HARNESS = str(Path(__file__).resolve().parents[3] / "sandbox" / "candidate.py")


def _traceback(harness_frames: int) -> str:
    frames = [
        f'  File "{HARNESS}", line {200 + i}, in _call\n    return self._invoke(x)\n           ^^^^^^^^^^^^'
        for i in range(harness_frames)
    ]
    return "\n".join(
        [
            "Traceback (most recent call last):",
            *frames,
            '  File "/cache/builds/' + "a" * 64 + '/src/main.py", line 3, in run',
            "    output.copy_(undefined_name * 2)",
            "NameError: name 'undefined_name' is not defined",
        ]
    )


def _trace(uuid: str, status: str, log: str = "", **perf: Any) -> dict[str, Any]:
    evaluation: dict[str, Any] = {"status": status, "log": log}
    if status == "PASSED":
        evaluation["correctness"] = {"rounds": 1}
        evaluation["performance"] = {"latency_ms": 1.0, "timer": "cpu", **perf}
    return {
        "definition": RMSNORM,
        "workload": {"uuid": uuid, "axes": {"batch_size": 1}},
        "evaluation": evaluation,
    }


def _job(kind: str = "benchmark", state: str = "done", **fields: Any) -> JobSnapshot:
    return JobSnapshot(job_id="0" * 32, kind=kind, state=state, problem=RMSNORM, solution="v1", **fields)


def _snapshot(traces: list[dict[str, Any]], **report: Any) -> JobSnapshot:
    full = {"problem": RMSNORM, "solution": "v1", "device": "cpu", "traces": traces, **report}
    return _job(report=EvalReport.model_validate(full))


def test_failure_logs_keep_the_exception_and_fold_repeats() -> None:
    log = _traceback(harness_frames=200)  # far longer than any budget
    snap = _snapshot([_trace(f"w{i:02d}", "RUNTIME_ERROR", log) for i in range(16)])
    result = result_from_snapshot(snap, 8000)
    text = result.render()
    assert len(text) <= 8000 and result.total == 16 and not result.workloads_omitted
    first, *rest = result.workloads
    assert first.log is not None and first.log.endswith("NameError: name 'undefined_name' is not defined")
    assert "\n" in first.log and 'File "main.py", line 3' in first.log  # line breaks kept, cache path cut
    assert "solforge harness frames left out" in first.log and "earlier characters cut" not in first.log
    assert all(
        r.log == f"same error as {first.uuid}: NameError: name 'undefined_name' is not defined" for r in rest
    )
    assert "\n    NameError: name 'undefined_name'" in text
    # A log that is long in the solution's own lines keeps its end, and more of it when asked.
    long_log = "\n".join(f"  solution line {i}" for i in range(2000)) + "\nValueError: the real cause"
    snap = _snapshot([_trace("w0", "RUNTIME_ERROR", long_log)])
    small, big = result_from_snapshot(snap, 8000), result_from_snapshot(snap, 50_000)
    assert small.workloads[0].log and small.workloads[0].log.endswith("ValueError: the real cause")
    assert "earlier characters cut" in small.workloads[0].log and len(small.render()) <= 8000
    assert big.workloads[0].log and len(big.workloads[0].log) > 4 * len(small.workloads[0].log)


def test_a_failed_build_is_one_error_said_once() -> None:
    log = "main.py:1\n    def run(:\n            ^\nSyntaxError: invalid syntax"
    build = {"ok": False, "status": "COMPILE_ERROR", "language": "pytorch", "log": log}
    snap = _snapshot([_trace(f"w{i}", "COMPILE_ERROR", log) for i in range(9)], build=build)
    result = result_from_snapshot(snap, 8000)
    assert result.compile_errors == ["main.py:1 | def run(: | ^ | SyntaxError: invalid syntax"]
    assert all(r.log is None and r.status == "COMPILE_ERROR" for r in result.workloads)
    assert len(result.render()) < 1200 and result.render().count("SyntaxError") == 1


def test_a_repeated_error_names_its_cause_not_its_caret() -> None:
    log = 'Traceback (most recent call last):\n  File "main.py", line 3, in run\n    x[9]\n    ~^^^\nIndexError: out of range\n    ^^^^'
    snap = _snapshot([_trace(f"w{i}", "RUNTIME_ERROR", log) for i in range(3)])
    first, *rest = result_from_snapshot(snap, 8000).workloads
    assert all(r.log == f"same error as {first.uuid}: IndexError: out of range" for r in rest)


def test_wrong_answers_carry_their_error_statistics() -> None:
    log = (
        "round 1/3: output 'output': 8.472% of elements within atol=0.01 rtol=0.01 (need 99.00%); "
        "max abs error 0.4062, max rel error 3.1; first mismatch at (0, 1): got 0.5, expected 0.1"
    )
    wrong = _trace("w0", "INCORRECT_NUMERICAL", log)
    wrong["evaluation"]["correctness"] = {  # as the judge records a failed round
        "max_absolute_error": 0.4062,
        "max_relative_error": 3.1,
        "matched_ratio": 0.08472,
        "rounds": 1,
    }
    snap = _snapshot([wrong, _trace("w1", "RUNTIME_ERROR", "boom")])
    rows = {w.uuid: w for w in result_from_snapshot(snap, 8000).workloads}
    assert rows["w0"].max_abs_error == pytest.approx(0.4062)
    assert rows["w0"].matched_ratio == pytest.approx(0.08472)
    assert rows["w1"].max_abs_error is None and rows["w1"].matched_ratio is None


def test_unstable_timings_are_exposed_and_flagged() -> None:
    snap = _snapshot(
        [_trace("steady", "PASSED", latency_iqr_ms=0.02), _trace("noisy", "PASSED", latency_iqr_ms=0.35)]
    )
    result = result_from_snapshot(snap, 8000)
    rows = {w.uuid: w for w in result.workloads}
    assert rows["steady"].latency_iqr_ms == 0.02 and not rows["steady"].timing_unstable
    assert rows["noisy"].latency_iqr_ms == 0.35 and rows["noisy"].timing_unstable
    lines = result.render().splitlines()
    assert "(IQR 35%!)" in next(ln for ln in lines if ln.startswith("noisy"))
    assert "IQR" not in next(ln for ln in lines if ln.startswith("steady"))
    assert sum("more than 10% of the median" in ln for ln in lines) == 1
    calm = result_from_snapshot(_snapshot([_trace("steady", "PASSED", latency_iqr_ms=0.02)]), 8000)
    assert "IQR" not in calm.render()


def test_a_gpu_only_solution_on_a_cpu_server_says_nothing_ran() -> None:
    note = "compiled for sm_90a but not run: cuda_cpp needs a GPU and none is visible"
    snap = _snapshot([], ran=False, note=note, build={"ok": True, "language": "cuda_cpp"})
    result = result_from_snapshot(snap, 8000)
    assert result.total == 0 and result.compile_ok is None and result.ran is False
    assert "nothing was run" in result.next_step and "needs a GPU" in result.next_step
    assert "cannot evaluate this language" in result.next_step
    assert "still hold" not in result.next_step and "get_sol_score" not in result.next_step
    assert "nothing ran" in result.render() and "passed 0/0" not in result.render()


def test_compile_jobs_and_progress_read_cleanly() -> None:
    result = result_from_snapshot(_job("compile", build=BuildReport(ok=True, language="pytorch")), 8000)
    assert result.compile_ok and "run_benchmark" in result.next_step
    assert "get_sol_score" not in result.next_step
    # The judge's message states its own count; a bare count stands in for a runner that sent none.
    message = "workload 3/16 (num_tokens=4, hidden_size=4096)"
    assert progress_text(JobProgress(message=message, done=2, total=16)) == message
    assert progress_text(JobProgress(done=2, total=16)) == "2/16"
    assert progress_text(JobProgress()) is None and progress_text(None) is None
    shown = result_from_snapshot(_job(state="queued", queue_position=1, progress=message), 8000)
    assert shown.progress == message
    assert "1 job ahead in the queue" in shown.render()
    assert "compile_kernel" in result_from_snapshot(_job("compile", "failed"), 8000).next_step


def test_a_cpu_submission_says_it_has_no_sol_score() -> None:
    accepted = SubmissionInfo(accepted=True, score=0.0, passed=18, total=18, rank=1, entries=1, best_score=0.0)
    snap = _snapshot([_trace("w0", "PASSED")])
    snap.kind, snap.submission = "submit", accepted
    text = result_from_snapshot(snap, 8000).render()
    assert "correct on 18 of 18 workloads" in text and "no SOL score" in text and "score 0.000" not in text
    snap = _snapshot([_trace("w0", "PASSED")], device="NVIDIA H200")
    snap.kind, snap.submission = "submit", accepted.model_copy(update={"score": 0.62, "best_score": 0.62})
    assert "submission accepted: score 0.620, rank 1 of 1" in result_from_snapshot(snap, 8000).render()


def test_cpu_results_read_as_cpu_runs_on_the_boards() -> None:
    from solforge.tools.leaderboard import GetLeaderboardResult, LeaderboardRow
    from solforge.tools.problems import ProblemRow

    board = GetLeaderboardResult(problem=RMSNORM, total_entries=2, rows=[
        LeaderboardRow(rank=1, agent="gpu", score=0.71, speedup=1.9, hardware="NVIDIA H200"),
        LeaderboardRow(rank=2, agent="local", score=0.0, speedup=0.55, hardware="cpu")])
    text = board.render()
    assert "gpu: 0.710 speedup 1.90x" in text
    assert "local: CPU run, no SOL score speedup 0.55x on the CPU" in text and "0.000" not in text
    row = ProblemRow(name=RMSNORM, workloads=3, best_score=0.0, best_on_cpu=True)
    assert "best: a CPU run (no SOL score)" in row.line() and "0.000" not in row.line()


def test_a_profile_answer_is_the_profilers_text_and_says_what_next() -> None:
    answer = "ncu: 1 kernel(s) in one call, 3.23 us of kernel time\n#1 _rmsnorm_kernel  3.23 us\n  bound: memory-bound"
    profile = {"tool": "ncu", "workload": "w0", "kernel_us": 3.23, "text": answer, "kernels": [
        {"index": 1, "name": "_rmsnorm_kernel", "duration_us": 3.23, "bound": "memory-bound"}]}
    full = {"problem": RMSNORM, "solution": "v1", "device": "NVIDIA H200", "profile": profile,
            "traces": [_trace("w0", "PASSED", timer="ncu")]}
    result = result_from_snapshot(_job(kind="profile", report=EvalReport.model_validate(full)), 8000)
    assert result.kind == "profile" and result.profile == answer and result.passed == result.total == 1
    assert answer in result.render() and "profile_kernel(kernel=N)" in result.next_step
    paged = {**profile, "text": "Section: GPU Speed Of Light Throughput ...", "page": 2, "pages": 12}
    result = result_from_snapshot(_job(kind="profile", report=EvalReport.model_validate(
        {**full, "profile": paged, "traces": []})), 8000)
    assert result.profile is not None and result.profile.endswith("(page 2 of 12)")
