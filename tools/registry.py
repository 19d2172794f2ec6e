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
    from . import docs, jobs, leaderboard, problems, profile, score

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
                "List the problems (operators from production models), a row each: name, category, op type, "
                "model, workloads, best SOL score, your status. Filter by category, model, op_type, text or status; "
                "page with offset. Start here, then get_problem; the workflow is read_docs(topic='protocol')."
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
                "solforge's documentation: the protocol (topic='protocol': workflow, format, rules, what counts as "
                "cheating), guides for CUDA C++ with PTX, CuTe DSL, Triton and PyTorch, GPU numbers, API references. "
                "No arguments lists topics; topic=... reads one by pages (offset=next_offset); query=... searches."
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
                "One problem: axes, input and output shapes and dtypes, the entry-point signature (destination "
                "passing: write the preallocated outputs in place), the PyTorch reference, the workloads and their "
                "tolerances, baseline times when known. Then write a solution.json and call compile_kernel."
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
                "Build a solution without the GPU: ok, compiler errors and warnings, per-kernel registers, shared "
                "memory and spills; optionally one kernel's PTX or SASS (disassemble, kernel). An unchanged "
                "solution answers from the cache. Compile before every run_benchmark: it costs no GPU time."
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
                "Check a solution and time it on the GPU: per-workload status, latency, baseline, T_SOL, SOL score "
                "and speedup. Waits up to wait_s with progress, else returns a job_id for wait_job (cancel_job "
                "stops it). Every workload unless `workloads` lists some. Failed rows end with their error; "
                "max_chars shows more. The final evaluation is submit_solution."
            ),
        ),
        ToolSpec(
            name="profile_kernel",
            title="Profile a kernel",
            fn=profile.profile_kernel,
            input_model=profile.ProfileKernelInput,
            result_model=jobs.JobResult,
            read_only=False,
            long_running=True,
            description=(
                "Nsight Compute on one call: per kernel its time, DRAM/SM use, occupancy, top stalls, cache hits "
                "and what bounds it. Costs a GPU lease: use it when progress stalls, not every iteration."
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
                "Wait up to wait_s for one of your jobs (run_benchmark, submit_solution or compile_kernel) and "
                "return its result, or its state and queue position. wait_s=0 only looks."
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
                "Cancel one of your queued or running jobs (its processes are killed), so the GPU is not spent on "
                "an outdated version."
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
                "Speed of light per workload: FLOPs, DRAM bytes, intensity, memory- or compute-bound, T_SOL and "
                "the SOL score of a latency. Give a finished job_id, or problem and latency_ms. Says how far from "
                "the hardware limit you are and which resource to optimise."
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
                "Final evaluation: secret seeds, every workload plus held-out ones, the strictest checks; recorded "
                "as your submission with its rank (a rejected one is logged too). Submit only after run_benchmark "
                "passes every workload. Waits up to wait_s, then returns a job_id for wait_job."
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
                "The best accepted submissions: for one problem (agents ranked with score, speedup, language), or "
                "per-agent totals across problems."
            ),
        ),
    ]
