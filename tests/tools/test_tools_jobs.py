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

from solforge.problems import FormatError, ProblemNotFound
from solforge.tools.base import ToolServices
from solforge.tools.compile import CompileKernelInput, compile_kernel
from solforge.tools.errors import JobNotFound, ServiceUnavailable, ToolInputError
from solforge.tools.jobs import (
    CancelJobInput,
    RunBenchmarkInput,
    SubmitSolutionInput,
    WaitJobInput,
    cancel_job,
    run_benchmark,
    submit_solution,
    wait_job,
)
from solforge.tools.leaderboard import GetLeaderboardInput, get_leaderboard
from solforge.tools.problems import GetProblemInput, ListProblemsInput, get_problem, list_problems
from solforge.tools.score import GetSolScoreInput, get_sol_score
from solforge.tools.testing import (
    RMSNORM,
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
    again = await compile_kernel(CompileKernelInput(solution=solution()), ctx)
    assert again.ok
    with pytest.raises(ToolInputError, match="no kernels"):
        await compile_kernel(CompileKernelInput(solution=solution(), disassemble="sass"), ctx)
    with pytest.raises(ValidationError):
        CompileKernelInput(solution=solution(), target_arch="sm_90; rm -rf /")


async def test_compile_in_the_ledger_hands_back_building_then_joins_the_same_job(
    ledger_services: ToolServices,
) -> None:
    ctx = context(ledger_services)
    slow = fake_solution(name="slow_build", sleep_s=1.5)
    first = await compile_kernel(CompileKernelInput(solution=slow, wait_s=0), ctx)
    assert first.state == "building" and first.job_id and "compile_kernel again" in first.render()
    second = await compile_kernel(CompileKernelInput(solution=slow, wait_s=20), ctx)
    assert second.job_id == first.job_id and second.state == "done" and second.ok
    third = await compile_kernel(CompileKernelInput(solution=slow, wait_s=20), ctx)
    assert third.job_id != first.job_id and third.ok  # a finished build is not joined again
    assert (await wait_job(WaitJobInput(job_id=first.job_id, wait_s=0), ctx)).compile_ok is True
