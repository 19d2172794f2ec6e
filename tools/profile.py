"""profile_kernel: one call of a solution on one workload under Nsight Compute, inside a GPU lease.

It runs through the same queue, lease and sandbox as run_benchmark (a ``profile`` job): the candidate
passes a correctness round, then one call runs between cudaProfilerStart and Stop under ``ncu
--clock-control none``. The answer lists each kernel of that call with what bounds it
(:mod:`solforge.sandbox.profiling`); ``kernel=N`` pages one kernel's raw sections from the kept report.
"""

from __future__ import annotations

from pydantic import Field

from solforge.sandbox.api import ProfileRequest
from solforge.sandbox.profiling import largest_workload

from .base import DEFAULT_MAX_CHARS, DEFAULT_WAIT_S, MAX_WAIT_S, ToolContext
from .errors import ToolInputError
from .jobs import JobResult, wait_result
from .ledger_port import enqueue, live_gpu_slots
from .solutions import SolutionInput, solution_and_problem


class ProfileKernelInput(SolutionInput):
    """The solution to profile, on which workload, and what to show."""

    workload: str | None = Field(default=None, max_length=128)
    """A workload uuid (get_problem); default: the largest."""
    kernel: int | None = Field(default=None, ge=1)
    """Page this kernel's raw ncu sections (its number in the answer); no new run."""
    page: int = Field(default=1, ge=1, le=1000)
    """Which page."""
    wait_s: float = Field(default=DEFAULT_WAIT_S, ge=0.0, le=MAX_WAIT_S)
    """Seconds to wait; then a job_id for wait_job."""


async def profile_kernel(args: ProfileKernelInput, ctx: ToolContext) -> JobResult:
    """Queue a profile of one call of a solution and wait a bounded time for the answer.

    Raises
    ------
    ToolInputError, FormatError, ProblemNotFound
        Before anything is queued: a malformed solution, an unknown problem or workload, or no GPU.
    ServiceUnavailable
        When this server has no ledger.
    """
    solution, problem = solution_and_problem(args, ctx)
    if args.workload is not None:
        if args.workload not in {w.uuid for w in problem.workloads}:
            raise ToolInputError(f"workload {args.workload!r} is not a workload of {problem.name}; get_problem lists them")
        workload = args.workload
    else:
        workload = largest_workload(problem.workloads).uuid
    if await live_gpu_slots(ctx) == 0:
        raise ToolInputError(
            "profile_kernel needs a GPU, and no worker of this server has one: use run_benchmark's timings, and "
            "compile_kernel's registers, spills and SASS instruction mix (read_docs(topic='profiling'))")
    request = ProfileRequest(kernel=args.kernel, page=args.page)  # Nsight Compute, else CUPTI's durations
    job_id = await enqueue(ctx, "profile", problem, solution, workloads=[workload], rounds=1, profile=request)
    return await wait_result(ctx, job_id, args.wait_s, DEFAULT_MAX_CHARS)
