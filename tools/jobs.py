"""run_benchmark, wait_job, cancel_job and submit_solution: queued GPU work with a bounded wait.

A benchmark can take minutes while MCP clients give a call about a minute, so these tools queue a job
in the ledger, wait up to ``wait_s`` (at most 50 s) while sending progress notifications, and answer
either the result or a ``job_id`` to pass to wait_job. A job belongs to the agent that queued it: no
other agent can wait on it, read it or cancel it.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from .base import (
    DEFAULT_MAX_CHARS,
    DEFAULT_WAIT_S,
    MAX_MAX_CHARS,
    MAX_WAIT_S,
    ToolContext,
    ToolModel,
    ToolResult,
    clip,
)
from .errors import ToolInputError
from .ledger_port import JobSnapshot, cancel_job_for, enqueue, job_for, submission_for_job, wait_for
from .solutions import SolutionInput, solution_and_problem

if TYPE_CHECKING:
    from solforge.sandbox.api import EvalReport

JOB_ID_PATTERN = r"^[0-9a-f]{32}$"
POLL_S = 1.0
"""How often a waiting tool looks at its job (and may send a progress notification)."""


class RunBenchmarkInput(SolutionInput):
    """The solution to benchmark, and how."""

    workloads: list[str] | None = Field(default=None, max_length=256)
    """Workload uuids to run (from get_problem); default every workload of the problem."""
    rounds: int = Field(default=3, ge=1, le=10)
    """Correctness rounds per workload, each with fresh random inputs."""
    wait_s: float = Field(default=DEFAULT_WAIT_S, ge=0.0, le=MAX_WAIT_S)
    """How long to wait for the result before answering with a job_id (wait_job continues)."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Bound on the answer's size (per-workload rows and logs are cut to fit)."""


class SubmitSolutionInput(SolutionInput):
    """The solution to submit as final."""

    wait_s: float = Field(default=DEFAULT_WAIT_S, ge=0.0, le=MAX_WAIT_S)
    """How long to wait for the verdict before answering with a job_id (wait_job continues)."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Bound on the answer\'s size in characters (rows are left out to fit; ask for more to see them)."""


class WaitJobInput(ToolModel):
    """Which job, and how long to wait."""

    job_id: str = Field(pattern=JOB_ID_PATTERN)
    """The job_id run_benchmark or submit_solution returned to you (32 hex characters)."""
    wait_s: float = Field(default=DEFAULT_WAIT_S, ge=0.0, le=MAX_WAIT_S)
    """How long to wait for the job to finish; 0 looks without waiting."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Bound on the answer\'s size in characters (rows are left out to fit; ask for more to see them)."""


class CancelJobInput(ToolModel):
    """Which job to cancel."""

    job_id: str = Field(pattern=JOB_ID_PATTERN)
    """The job_id of one of your queued or running jobs."""


class WorkloadResult(ToolResult):
    """One workload's outcome."""

    uuid: str
    axes: dict[str, int]
    status: str
    """PASSED, INCORRECT_NUMERICAL, INCORRECT_SHAPE, INCORRECT_DTYPE, RUNTIME_ERROR, COMPILE_ERROR, TIMEOUT, REWARD_HACK."""
    latency_ms: float | None = None
    baseline_ms: float | None = None
    """T_b: the faster of eager PyTorch and torch.compile on this device."""
    sol_ms: float | None = None
    """T_SOL: the speed-of-light time on this GPU."""
    bound: str | None = None
    """memory or compute: which limit sets T_SOL."""
    score: float | None = None
    """SOL score 1/(1+(T-T_SOL)/(T_b-T_SOL)): 0.5 at the baseline, 1 at speed of light."""
    speedup: float | None = None
    """baseline_ms / latency_ms."""
    max_abs_error: float | None = None
    matched_ratio: float | None = None
    log: str | None = None
    """Why it failed (cut short)."""


class SubmissionInfo(ToolResult):
    """What a submission earned."""

    accepted: bool
    """False when a workload failed or a hack was detected; a rejected submission is still logged."""
    score: float | None = None
    """Mean SOL score over every workload (failed ones count 0)."""
    speedup: float | None = None
    passed: int | None = None
    total: int | None = None
    rank: int | None = None
    """Your position on the problem's leaderboard (1 = best)."""
    entries: int | None = None
    """Agents on the problem's leaderboard."""
    best_score: float | None = None
    """The problem's best score (anyone's), after this submission."""
    reason: str | None = None
    """Why it was rejected."""


class JobResult(ToolResult):
    """A job's state, and its result once it is done."""

    job_id: str
    kind: Literal["benchmark", "submit", "compile"]
    state: Literal["queued", "running", "done", "failed", "cancelled"]
    problem: str
    solution: str
    queue_position: int | None = None
    """Jobs ahead of this one (queued state)."""
    progress: str | None = None
    elapsed_s: float | None = None
    device: str | None = None
    """The GPU it ran on, or 'cpu' (CPU timings carry no SOL score)."""
    timer: str | None = None
    note: str | None = None
    compile_ok: bool | None = None
    compile_errors: list[str] = Field(default_factory=list)
    passed: int | None = None
    total: int | None = None
    mean_score: float | None = None
    """Mean SOL score over the workloads run (failed ones count 0)."""
    geomean_speedup: float | None = None
    """Geometric mean of the speedups over the passed workloads."""
    workloads: list[WorkloadResult] = Field(default_factory=list)
    workloads_omitted: int = 0
    """Rows left out to fit max_chars (the worst are kept)."""
    submission: SubmissionInfo | None = None
    error: str | None = None
    """Why the job failed (an infrastructure fault, not your code) or was cancelled."""
    next_step: str

    def render(self) -> str:
        head = f"job {self.job_id} ({self.kind} {self.solution} on {self.problem}): {self.state}"
        if self.elapsed_s is not None:
            head += f" after {self.elapsed_s:.0f} s"
        out = [head]
        if self.state in ("queued", "running"):
            if self.queue_position is not None and self.state == "queued":
                out.append(f"{self.queue_position} jobs ahead in the queue")
            if self.progress:
                out.append(f"progress: {self.progress}")
        if self.device:
            out.append(f"device: {self.device}" + (f", timer {self.timer}" if self.timer else ""))
        if self.note:
            out.append(f"note: {self.note}")
        if self.error:
            out.append(f"error: {self.error}")
        if self.compile_ok is False:
            out.append("build failed:")
            out += [f"  {e}" for e in self.compile_errors]
        if self.total:
            summary = f"passed {self.passed}/{self.total}"
            if self.mean_score is not None:
                summary += f", mean SOL score {self.mean_score:.3f}"
            if self.geomean_speedup is not None:
                summary += f", geomean speedup {self.geomean_speedup:.2f}x"
            out.append(summary)
        if self.workloads:
            out.append(
                "workload | axes | status | latency ms | baseline ms | T_SOL ms (bound) | score | speedup"
            )
            for w in self.workloads:
                axes = ",".join(f"{k}={v}" for k, v in w.axes.items())
                bound = f" ({w.bound})" if w.bound else ""
                out.append(
                    f"{w.uuid} | {axes} | {w.status} | {_num(w.latency_ms)} | {_num(w.baseline_ms)} | "
                    f"{_num(w.sol_ms)}{bound} | {_num(w.score, 3)} | {_num(w.speedup, 2)}"
                )
                if w.log:
                    out.append(f"    {w.log}")
            if self.workloads_omitted:
                out.append(
                    f"({self.workloads_omitted} more workloads; call wait_job with a larger max_chars)"
                )
        if self.submission is not None:
            s = self.submission
            if s.accepted:
                out.append(
                    f"submission accepted: score {_num(s.score, 3)}, rank {s.rank} of {s.entries}"
                    f" (problem best {_num(s.best_score, 3)})"
                )
            else:
                out.append(f"submission rejected: {s.reason}")
        out.append(f"Next: {self.next_step}")
        return "\n".join(out)


def _num(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if digits != 3 and digits != 2 else f"{value:.{digits}f}"


def _geomean(values: list[float]) -> float | None:
    positive = [v for v in values if v and v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))


def workload_results(report: EvalReport) -> list[WorkloadResult]:
    """One row per trace of an evaluation report."""
    rows: list[WorkloadResult] = []
    for trace in report.traces:
        ev = trace.evaluation
        if ev is None:
            continue
        perf = ev.performance
        corr = ev.correctness
        log_text = None
        if ev.log and ev.status.value != "PASSED":
            log_text, _ = clip(" ".join(ev.log.split()), 300)
        rows.append(
            WorkloadResult(
                uuid=trace.workload.uuid,
                axes=trace.workload.axes,
                status=ev.status.value,
                latency_ms=perf.latency_ms if perf else None,
                baseline_ms=perf.baseline_latency_ms if perf else None,
                sol_ms=perf.sol_latency_ms if perf else None,
                bound=perf.sol_bound if perf else None,
                score=perf.sol_score if perf else None,
                speedup=perf.speedup if perf else None,
                max_abs_error=corr.max_absolute_error if corr else None,
                matched_ratio=corr.matched_ratio if corr else None,
                log=log_text,
            )
        )
    return rows


def result_from_snapshot(snap: JobSnapshot, max_chars: int) -> JobResult:
    """The agent's view of a job, bounded by ``max_chars``."""
    result = JobResult(
        job_id=snap.job_id,
        kind=snap.kind,  # type: ignore[arg-type]
        state=snap.state,  # type: ignore[arg-type]
        problem=snap.problem,
        solution=snap.solution,
        queue_position=snap.queue_position,
        progress=snap.progress,
        elapsed_s=round(snap.elapsed_s, 1) if snap.elapsed_s is not None else None,
        error=snap.error,
        next_step="",
    )
    if snap.build is not None and snap.report is None:
        result.compile_ok = snap.build.ok
        if not snap.build.ok:
            errors = [ln.strip() for ln in snap.build.log.splitlines() if ln.strip()][:12]
            result.compile_errors = [e[:300] for e in errors]
    report = snap.report
    if report is not None:
        result.device = report.device
        result.timer = report.timer
        result.note = report.note
        if report.build is not None and not report.build.ok:
            result.compile_ok = False
            errors = [ln.strip() for ln in report.build.log.splitlines() if ln.strip()][:12]
            result.compile_errors = [e[:300] for e in errors]
        rows = workload_results(report)
        result.total = len(rows)
        result.passed = sum(1 for r in rows if r.status == "PASSED")
        scores = [r.score if (r.status == "PASSED" and r.score is not None) else 0.0 for r in rows]
        if rows and any(r.score is not None for r in rows):
            result.mean_score = round(sum(scores) / len(scores), 4)
        result.geomean_speedup = _geomean([r.speedup for r in rows if r.status == "PASSED" and r.speedup])
        # Failed and slowest-relative-to-SOL workloads first: they are what the agent must look at.
        rows.sort(key=lambda r: (r.status == "PASSED", r.score if r.score is not None else -1.0))
        result.workloads = rows
        while len(result.render()) > max_chars - 200 and result.workloads:
            result.workloads.pop()
            result.workloads_omitted += 1
    result.submission = snap.submission
    result.next_step = _next_step(result)
    return result


def _next_step(r: JobResult) -> str:
    if r.state in ("queued", "running"):
        return f"call wait_job(job_id={r.job_id!r}) to keep waiting, or cancel_job to stop it."
    if r.state == "cancelled":
        return "queue a new run_benchmark when you have the next version."
    if r.state == "failed":
        return "the harness failed, not necessarily your code: retry run_benchmark once; if it repeats, report it."
    if r.compile_ok is False:
        return "fix the build (compile_kernel shows the full log) and run again."
    if r.kind == "submit":
        if r.submission and r.submission.accepted:
            return "pick the next problem (list_problems(status='new')) or improve this one and submit again."
        return "fix what failed (run_benchmark on all workloads first), then submit again."
    if r.total and r.passed != r.total:
        return "fix the failing workloads first (their log says why); correctness comes before speed."
    if r.device == "cpu":
        return "this server has no GPU: timings are CPU timings without SOL scores; correctness results still hold."
    return (
        f"get_sol_score(job_id={r.job_id!r}) for the speed-of-light breakdown; iterate, then submit_solution."
    )


async def _wait(ctx: ToolContext, job_id: str, wait_s: float, max_chars: int) -> JobResult:
    deadline = time.monotonic() + wait_s
    snap = await job_for(ctx, job_id)
    step = 0
    while not snap.terminal and time.monotonic() < deadline:
        step += 1
        await ctx.progress(
            float(step),
            None,
            snap.progress
            or (f"queued, {snap.queue_position} ahead" if snap.state == "queued" else snap.state),
        )
        snap = await wait_for(ctx, job_id, min(POLL_S, max(0.0, deadline - time.monotonic())))
    if snap.terminal and snap.kind == "submit" and snap.submission is None:
        snap.submission = await submission_for_job(ctx, snap)
    return result_from_snapshot(snap, max_chars)


async def run_benchmark(args: RunBenchmarkInput, ctx: ToolContext) -> JobResult:
    """Queue a benchmark of a solution and wait a bounded time for its result.

    Raises
    ------
    ToolInputError, FormatError, ProblemNotFound
        Before anything is queued, for a malformed solution, an unknown problem or unknown workloads.
    ServiceUnavailable
        When this server has no ledger.
    """
    solution, problem = solution_and_problem(args, ctx)
    if args.workloads is not None:
        known = {w.uuid for w in problem.workloads}
        unknown = [w for w in args.workloads if w not in known]
        if unknown:
            raise ToolInputError(
                f"workloads {unknown[:5]} are not workloads of {problem.name}; get_problem lists them "
                f"(first: {sorted(known)[:3]})"
            )
    job_id = await enqueue(ctx, "benchmark", problem, solution, workloads=args.workloads, rounds=args.rounds)
    return await _wait(ctx, job_id, args.wait_s, args.max_chars)


async def submit_solution(args: SubmitSolutionInput, ctx: ToolContext) -> JobResult:
    """Queue the final evaluation of a solution (secret seeds, every workload) and wait a bounded time.

    Raises
    ------
    ToolInputError, FormatError, ProblemNotFound
        Before anything is queued.
    ServiceUnavailable
        When this server has no ledger.
    """
    solution, problem = solution_and_problem(args, ctx)
    job_id = await enqueue(ctx, "submit", problem, solution, workloads=None, rounds=None)
    return await _wait(ctx, job_id, args.wait_s, args.max_chars)


async def wait_job(args: WaitJobInput, ctx: ToolContext) -> JobResult:
    """Wait a bounded time for one of the caller's jobs.

    Raises
    ------
    JobNotFound
        When no job with that id belongs to the caller.
    """
    return await _wait(ctx, args.job_id, args.wait_s, args.max_chars)


async def cancel_job(args: CancelJobInput, ctx: ToolContext) -> JobResult:
    """Cancel one of the caller's jobs (a running one's processes are killed).

    Raises
    ------
    JobNotFound
        When no job with that id belongs to the caller.
    """
    snap = await cancel_job_for(ctx, args.job_id)
    return result_from_snapshot(snap, DEFAULT_MAX_CHARS)
