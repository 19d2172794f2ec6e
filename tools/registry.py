"""The catalogue of tools: name, title, behaviour hints and the description a model reads.

The server registers exactly these (``solforge.server.adapter``); nothing here imports MCP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .base import ToolContext, ToolModel, ToolResult


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what it is called, what it does, and how it behaves."""

    name: str
    title: str
    fn: Callable[[Any, ToolContext], Awaitable[ToolResult]]
    input_model: type[ToolModel]
    result_model: type[ToolResult]
    description: str
    """Written for the model that decides when and how to call the tool."""
    read_only: bool
    """Changes nothing (may still read the ledger)."""
    destructive: bool = False
    """May overwrite or remove something the agent cares about."""
    idempotent: bool = False
    """Calling again with the same arguments has no further effect."""
    long_running: bool = False
    """May wait up to ~50 s; sends progress notifications while it waits."""


def all_tools() -> list[ToolSpec]:
    """Every tool, in the order a model should meet them."""
    from . import compile as compile_mod
    from . import docs, jobs, leaderboard, problems, score

    return [
        ToolSpec(
            name="list_problems",
            title="List problems",
            fn=problems.list_problems,
            input_model=problems.ListProblemsInput,
            result_model=problems.ListProblemsResult,
            read_only=True,
            idempotent=True,
            description=(
                "List the kernel-optimisation problems (real operators from production models), one compact row "
                "each: name, category, op type, source model, workload count, best SOL score so far and your "
                "status. Filter by category, model, op_type, text or status (new/attempted/submitted/unsolved); "
                "page with offset. Start here, then call get_problem on one name. Follow the workflow in "
                "read_docs(topic='protocol')."
            ),
        ),
        ToolSpec(
            name="read_docs",
            title="Read documentation",
            fn=docs.read_docs,
            input_model=docs.ReadDocsInput,
            result_model=docs.ReadDocsResult,
            read_only=True,
            idempotent=True,
            description=(
                "Read solforge's documentation: the protocol every agent follows (topic='protocol': workflow, "
                "solution format, rules, what counts as cheating), the solution format, guides for CUDA C++ with "
                "inline PTX, CuTe DSL, Triton and PyTorch, the GPU's numbers, and API references. No arguments "
                "lists the topics; topic=... reads one a page at a time (continue with offset=next_offset); "
                "query=... searches all topics and returns excerpts with the offset to read from."
            ),
        ),
        ToolSpec(
            name="get_problem",
            title="Get a problem",
            fn=problems.get_problem,
            input_model=problems.GetProblemInput,
            result_model=problems.GetProblemResult,
            read_only=True,
            idempotent=True,
            description=(
                "Everything needed to solve one problem: axes, input and output shapes and dtypes, the entry-point "
                "signature your solution must define (destination-passing style: outputs preallocated, write them "
                "in place), the PyTorch reference (ground truth), the workloads with their tolerances, and baseline "
                "times when known. Then write a solution.json and call compile_kernel."
            ),
        ),
        ToolSpec(
            name="compile_kernel",
            title="Compile a kernel",
            fn=compile_mod.compile_kernel,
            input_model=compile_mod.CompileKernelInput,
            result_model=compile_mod.CompileKernelResult,
            read_only=False,
            idempotent=True,
            long_running=True,
            description=(
                "Build a solution without using the GPU: returns ok, compiler errors and warnings, and per-kernel "
                "registers, shared memory and spills; optionally the PTX or SASS of one kernel "
                "(disassemble='ptx'|'sass', kernel='name'). Pass the solution.json object as `solution`, or "
                "`solution_path` to a solution.json on this machine. An unchanged solution answers from the build "
                "cache. Compile before every run_benchmark: it is fast and costs no GPU time."
            ),
        ),
        ToolSpec(
            name="run_benchmark",
            title="Run a benchmark",
            fn=jobs.run_benchmark,
            input_model=jobs.RunBenchmarkInput,
            result_model=jobs.JobResult,
            read_only=False,
            long_running=True,
            description=(
                "Check a solution's correctness and time it on the GPU (queued in the job ledger). Waits up to "
                "wait_s (<= 50 s) with progress notifications and returns per-workload status, latency, baseline, "
                "speed-of-light time T_SOL, SOL score and speedup; if the job is not done by then it returns a "
                "job_id: call wait_job(job_id) to keep waiting, cancel_job(job_id) to stop it. Public seeds; "
                "every workload unless you list uuids in `workloads` (a few give a faster check). Failed "
                "workloads show the end of their error log; raise max_chars to see more. The final evaluation "
                "is submit_solution."
            ),
        ),
        ToolSpec(
            name="wait_job",
            title="Wait for a job",
            fn=jobs.wait_job,
            input_model=jobs.WaitJobInput,
            result_model=jobs.JobResult,
            read_only=True,
            idempotent=True,
            long_running=True,
            description=(
                "Wait up to wait_s (<= 50 s) for one of your jobs (a job_id from run_benchmark, submit_solution "
                "or compile_kernel) and return its result, or its state and queue position if it is still "
                "running. wait_s=0 only looks; max_chars above 8000 shows more rows and longer error logs."
            ),
        ),
        ToolSpec(
            name="cancel_job",
            title="Cancel a job",
            fn=jobs.cancel_job,
            input_model=jobs.CancelJobInput,
            result_model=jobs.JobResult,
            read_only=False,
            destructive=True,
            idempotent=True,
            description=(
                "Cancel one of your queued or running jobs; a running job's processes are killed. Use it when you "
                "have a better version to test, so the GPU is not spent on an outdated one."
            ),
        ),
        ToolSpec(
            name="get_sol_score",
            title="Speed-of-light breakdown",
            fn=score.get_sol_score,
            input_model=score.GetSolScoreInput,
            result_model=score.GetSolScoreResult,
            read_only=True,
            idempotent=True,
            description=(
                "Speed-of-light analysis per workload: FLOPs (tensor-core and other), DRAM bytes, arithmetic "
                "intensity, whether the workload is memory- or compute-bound, T_SOL on the GPU, and the SOL score "
                "of a latency. Give job_id of a finished run, or problem plus latency_ms (one number or one per "
                "workload uuid) to score a time you measured. Tells you how far from the hardware limit you are "
                "and which resource to optimise for."
            ),
        ),
        ToolSpec(
            name="submit_solution",
            title="Submit a solution",
            fn=jobs.submit_solution,
            input_model=jobs.SubmitSolutionInput,
            result_model=jobs.JobResult,
            read_only=False,
            long_running=True,
            description=(
                "Final evaluation of a solution: secret seeds, every workload plus held-out ones, stricter "
                "anti-cheating checks. Recorded as your submission with its leaderboard position; a rejected one "
                "(wrong answer, or REWARD_HACK) is logged too. Submit only after run_benchmark passes every "
                "workload. Waits up to wait_s, then returns a job_id for wait_job."
            ),
        ),
        ToolSpec(
            name="get_leaderboard",
            title="Leaderboard",
            fn=leaderboard.get_leaderboard,
            input_model=leaderboard.GetLeaderboardInput,
            result_model=leaderboard.GetLeaderboardResult,
            read_only=True,
            idempotent=True,
            description=(
                "The best accepted submissions: for one problem (ranked agents with score, speedup and "
                "language), or across problems (per-agent totals). Use it to see what score would beat the best."
            ),
        ),
    ]
